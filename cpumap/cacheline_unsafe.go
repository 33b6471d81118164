package cpumap

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// defaultLineSize is the cache line size golang.org/x/sys/cpu pads to on
// this GOARCH (64 on amd64, 128 on arm64), used when sysfs does not say.
// unsafe is needed only for Sizeof.
const defaultLineSize = int(unsafe.Sizeof(cpu.CacheLinePad{}))
