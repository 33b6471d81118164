//go:build !linux

// Command xdpfwd forwards frames through the AF_XDP iflib driver beside a
// hand-written loop; AF_XDP is Linux-only, so here it says so.
package main

import (
	"fmt"

	"github.com/goiflib/goiflib/examples/afxdp"
)

func main() {
	fmt.Printf("AF_XDP section skipped: %v\n", afxdp.Available())
}
