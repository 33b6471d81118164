//go:build !linux

package main

import "errors"

func xdpAvailable() error { return errors.New("AF_XDP is Linux-only") }

func (r *runner) afxdpSection() *AFXDP {
	return &AFXDP{Skipped: "AF_XDP is Linux-only"}
}
