//go:build !goiflib_vsched

package shm

import (
	"context"
	"runtime"
)

// Yield is runtime.Gosched: let another goroutine run on this processor.
func Yield() { runtime.Gosched() }

func park(p *Parker)   { <-p.ch }
func unpark(p *Parker) { p.give() }

func parkContext(p *Parker, ctx context.Context) error {
	select {
	case <-p.ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
