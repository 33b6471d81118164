//go:build race

package simnic_test

// raceEnabled scales the stress tests down under the race detector.
const raceEnabled = true
