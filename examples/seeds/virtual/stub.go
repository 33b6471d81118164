//go:build !goiflib_vsched

// Command virtual needs the virtual scheduler's build tag:
//
//	go run -tags goiflib_vsched ./examples/seeds/virtual
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "virtual: build with -tags goiflib_vsched (go run -tags goiflib_vsched ./examples/seeds/virtual)")
	os.Exit(2)
}
