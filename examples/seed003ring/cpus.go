package main

import (
	"fmt"
	"runtime"
)

func describeCPUs() string {
	return fmt.Sprintf("GOMAXPROCS %d, %d CPUs, %s/%s", runtime.GOMAXPROCS(0), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}
