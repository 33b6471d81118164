//go:build !linux

package afxdp

import "fmt"

// Available says why AF_XDP cannot run here: it is Linux-only.
func Available() error {
	return fmt.Errorf("%w: AF_XDP is Linux-only", ErrUnavailable)
}

// RigAvailable says why the test rig cannot be built here: it is
// Linux-only.
func RigAvailable() error { return Available() }
