//go:build !unix

package bufring

// cpuTime is not measured on this platform; cpu-ns/item reads 0.
func cpuTime() int64 { return 0 }
