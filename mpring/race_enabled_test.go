//go:build race

package mpring

const raceEnabled = true
