//go:build !linux

package afxdp

import "fmt"

// Available says why AF_XDP cannot run here: it is Linux-only.
func Available() error {
	return fmt.Errorf("%w: AF_XDP is Linux-only", ErrUnavailable)
}
