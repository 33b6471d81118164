//go:build !race

package iflib_test

// raceEnabled scales the stress tests down under the race detector.
const raceEnabled = false
