//go:build !race

package seedbench

const raceEnabled = false
