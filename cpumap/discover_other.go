//go:build !linux

package cpumap

import "runtime"

// Discover returns this machine's topology. Outside Linux it has no source
// of SMT or cache information and returns Flat(runtime.NumCPU()).
func Discover() (*Topology, error) {
	return Flat(runtime.NumCPU())
}
