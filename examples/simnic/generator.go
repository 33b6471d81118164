package simnic

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Errors of the Generator's lifecycle.
var (
	// ErrGenStarted: Start on a generator that was already started.
	ErrGenStarted = errors.New("simnic: generator already started")
	// ErrGenNotStarted: Stop or Wait on a generator that was never started.
	ErrGenNotStarted = errors.New("simnic: generator not started")
	// ErrGenConfig: Start with a nil endpoint, a nil Next or a bad Rate
	// (the error says which, and the value).
	ErrGenConfig = errors.New("simnic: invalid generator")
)

// Generator sends frames into an endpoint from its own goroutine, as fast
// as the endpoint takes them or at a rate.
//
// Lifecycle: Start once; then Stop (any number of times, from any
// goroutine) ends it and waits, and Wait waits for it to end by itself
// (Count reached or Next returned 0) — with Count 0 and a Next that never
// returns 0, Wait returns only after a Stop. Stop and Wait before Start
// return ErrGenNotStarted; a second Start returns ErrGenStarted. A
// generator is not restartable.
//
// A refused frame (the endpoint's FIFO is full) is counted in Refused and
// the generator moves on to the next one; with Lossless it retries the same
// frame until it is taken (then only a frame the endpoint never takes, too
// long for it, and the frame in hand when Stop is called count as refused:
// Sent + Refused is always the frames offered). Either way, when the
// endpoint is a [RoomWaiter] (a NIC) the generator parks until there is
// room instead of spinning, so it leaves the CPU to the device it feeds;
// otherwise it yields the processor between its first attempts and then
// sleeps between them, 1µs doubling to 1ms. While a NIC's link is down
// there is no room: the frame is refused once (RxLinkDown) and the
// generator parks until the link comes back, so a link loss costs one drop
// per loss, not one per retry, and Stop ends the wait.
//
// Every wait ends at Stop: the rate's (a Rate so small that a frame's time
// overflows a Duration waits for Stop), and the wait for room or link.
// Next and the endpoint's Receive run on the generator's goroutine: Stop
// waits for the call in progress.
type Generator struct {
	// Next writes the next frame into buf and returns its length; 0 (or a
	// length beyond buf) stops the generator.
	Next func(seq uint64, buf []byte) int
	// Rate is frames per second (0: as fast as possible).
	Rate float64
	// Count stops after this many frames (0: until Stop).
	Count uint64
	// Lossless retries a refused frame until the endpoint takes it.
	Lossless bool

	sent, refused atomic.Uint64
	mu            sync.Mutex    // Start against Stop/Wait
	stop          chan struct{} // set under mu by Start
	done          chan struct{} // set under mu by Start
	stopOnce      sync.Once
}

// Start runs the generator into dst.
func (g *Generator) Start(dst Endpoint) error {
	switch {
	case dst == nil:
		return fmt.Errorf("%w: nil endpoint", ErrGenConfig)
	case g.Next == nil:
		return fmt.Errorf("%w: nil Next", ErrGenConfig)
	case g.Rate < 0 || math.IsNaN(g.Rate) || math.IsInf(g.Rate, 0):
		return fmt.Errorf("%w: Rate %v: want a finite rate ≥ 0", ErrGenConfig, g.Rate)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done != nil {
		return ErrGenStarted
	}
	g.stop, g.done = make(chan struct{}), make(chan struct{})
	go g.run(dst)
	return nil
}

func (g *Generator) chans() (stop, done chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stop, g.done
}

func (g *Generator) run(dst Endpoint) {
	defer close(g.done)
	waiter, _ := dst.(RoomWaiter)
	buf := make([]byte, 16384)
	start := time.Now()
	for seq := uint64(0); g.Count == 0 || seq < g.Count; seq++ {
		if seq&63 == 0 {
			select {
			case <-g.stop:
				return
			default:
			}
		}
		if g.Rate > 0 {
			// Saturating: at a rate so slow that the frame's time
			// overflows a Duration, the generator waits for Stop.
			if d := durationOf(float64(seq)/g.Rate) - time.Since(start); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-g.stop:
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		n := g.Next(seq, buf)
		if n <= 0 || n > len(buf) {
			return
		}
		if !g.send(dst, waiter, buf[:n]) {
			return
		}
	}
}

// send offers one frame, parking on refusals (see the type's doc). It
// reports false when the generator was stopped while parked.
func (g *Generator) send(dst Endpoint, waiter RoomWaiter, frame []byte) bool {
	for try := 0; ; try++ {
		if dst.Receive(frame) {
			g.sent.Add(1)
			return true
		}
		if waiter != nil {
			if !waiter.WaitRoom(frame, g.stop) {
				g.refused.Add(1) // never takes it (too long), or stopped
				return g.running()
			}
		} else if !g.backoff(try) {
			g.refused.Add(1) // the frame in hand at Stop
			return false
		}
		if !g.Lossless {
			g.refused.Add(1)
			return true
		}
	}
}

// backoff is the wait before retry number try+1 of a frame an endpoint
// without WaitRoom refused: a yield for the first 16 retries, then a sleep
// doubling from 1µs to at most 1ms, so that a lossless generator facing an
// endpoint that refuses for long neither spins nor gives up. It reports
// false when Stop ends the wait.
func (g *Generator) backoff(try int) bool {
	if try < 16 {
		select {
		case <-g.stop:
			return false
		default:
		}
		runtime.Gosched()
		return true
	}
	t := time.NewTimer(min(time.Microsecond<<min(try-16, 10), time.Millisecond))
	defer t.Stop()
	select {
	case <-g.stop:
		return false
	case <-t.C:
		return true
	}
}

// running reports whether Stop has not been called.
func (g *Generator) running() bool {
	select {
	case <-g.stop:
		return false
	default:
		return true
	}
}

// Stop ends the generator and waits for it.
func (g *Generator) Stop() error {
	stop, done := g.chans()
	if done == nil {
		return ErrGenNotStarted
	}
	g.stopOnce.Do(func() { close(stop) })
	<-done
	return nil
}

// Wait waits until the generator ends (Count reached, Next returned 0, or
// Stop).
func (g *Generator) Wait() error {
	_, done := g.chans()
	if done == nil {
		return ErrGenNotStarted
	}
	<-done
	return nil
}

// Sent is frames the endpoint took; Refused is frames it dropped.
func (g *Generator) Sent() uint64 { return g.sent.Load() }

// Refused is frames the endpoint dropped.
func (g *Generator) Refused() uint64 { return g.refused.Load() }
