//go:build !linux

package main

import (
	"errors"

	"github.com/goiflib/goiflib/iflib"
)

func serveXDP(options, iflib.TxMode) (*server, error) {
	return nil, errors.New("-link xdp needs Linux (AF_XDP)")
}
