//go:build !goiflib_vsched

package shm

import "runtime"

// Yield is runtime.Gosched: let another goroutine run on this processor.
func Yield() { runtime.Gosched() }

func park(p *Parker)   { <-p.ch }
func unpark(p *Parker) { p.give() }
