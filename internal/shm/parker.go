package shm

import "context"

// Parker parks one goroutine: a semaphore holding at most one token. Unpark
// leaves the token (a second Unpark before a Park is absorbed) and Park takes
// it, blocking until there is one; the pair never loses a wake-up in either
// order. It is a channel of capacity 1, as internal/wait's waiters use.
// Under goiflib_vsched, while a simulation runs, both are scheduling points
// and Park blocks in the virtual scheduler. Make one with NewParker.
type Parker struct{ ch chan struct{} }

// NewParker returns a Parker without a token.
func NewParker() *Parker { return &Parker{ch: make(chan struct{}, 1)} }

// Park takes the token, blocking until Unpark leaves one.
func (p *Parker) Park() { park(p) }

// ParkContext is Park that also returns, with ctx.Err(), when ctx is done
// first; the token, if Unpark leaves one later, stays for the next Park.
// Under goiflib_vsched, inside a simulation, a context's end is not a
// wake-up (the simulation has no timers): only Unpark wakes the caller, and
// ctx.Err() is returned only if ctx had ended before the call.
func (p *Parker) ParkContext(ctx context.Context) error { return parkContext(p, ctx) }

// Unpark leaves the token, waking a goroutine blocked in Park.
func (p *Parker) Unpark() { unpark(p) }

// give leaves the token unless one is there already.
func (p *Parker) give() {
	select {
	case p.ch <- struct{}{}:
	default:
	}
}
