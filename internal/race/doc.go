// Package race tells tests whether the race detector is on, so that
// stress tests can scale their item counts down under it (the detector
// slows synchronisation-heavy code by an order of magnitude) without
// each package keeping its own pair of build-tagged files.
package race
