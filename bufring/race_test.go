//go:build race

package bufring

const raceEnabled = true
