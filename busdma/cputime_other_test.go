//go:build !unix

package busdma_test

import (
	"time"
)

// cpuNow is unavailable here: the cpu-ns metrics are not reported.
func cpuNow() time.Duration { return -1 }
