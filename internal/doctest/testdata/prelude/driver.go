// Prelude of README.md's driver snippet: what the snippet uses without
// declaring it.
package doc

import (
	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

var (
	space busdma.Space // the machine's DMA address space (busdma.NewSimSpace, ...)
	drv   iflib.Device // the driver: its IFDI methods
	frame []byte       // a frame to send
)
