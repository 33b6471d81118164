//go:build race

package seedbench

// raceEnabled scales the tests' packet counts down under the race
// detector, which slows forwarding by an order of magnitude.
const raceEnabled = true
