//go:build !unix

package cputime

import "time"

// Supported reports whether Process and Read measure anything on this
// platform.
const Supported = false

// Process returns 0: CPU time is not measured on this platform.
func Process() time.Duration { return 0 }

// Read returns the zero Usage: nothing is measured on this platform.
func Read() Usage { return Usage{} }
