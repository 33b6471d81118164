package wait

import "runtime"

// Spins is how many times a waiter re-checks its condition before it starts
// yielding: 16 loads cover a running peer's publication (a slot store and
// one atomic store, tens of nanoseconds even with the cache line moving
// between cores) and cost well under a microsecond when the peer is not
// running.
//
// Measured on 2 shared CPUs (BenchmarkSpinPolicy in bufring: MPSC and Ring
// fan-in at 1, 4, 16 and 64 producers, 5 rounds): anything from 0 to 128
// spins, with 0 to 16 yields, gave throughput and CPU per item within the
// round-to-round spread (up to 2×) of that machine; yielding forever and
// never parking (what bufring and mpring did before, with 64 and 8 spins)
// was 2–5 times slower and cost 2–5 times the CPU per item at every
// fan-in. Long spins hurt where goroutines outnumber CPUs: with pinned
// workers (examples/workerpool -work 0, 64 producers) 256 spins halved the
// rate of 16 and 4096 cut it twelvefold, because a spinning worker takes
// the CPU its producers need.
//
// It is a variable only so that the benchmark can sweep it; nothing else
// writes it, and it must not change while a ring is in use.
var Spins = 16

// Yields is how many runtime.Gosched calls a parkable waiter makes after
// spinning and before it parks. A yield lets a producer that shares the
// waiter's P run, which is the common case when goroutines outnumber CPUs;
// once that does not help, parking frees the CPU. See Spins for the
// measurements. Like Spins, it is a variable only for that benchmark.
var Yields = 4

// Backoff counts the checks of one wait and decides what to do before the
// next one. The zero value starts a new wait.
type Backoff struct{ n int }

// Pause is for waits that never park (a peer mid-publication): it returns
// at once for the first Spins calls and yields the processor on every call
// after that.
func (b *Backoff) Pause() {
	if b.n < Spins {
		b.n++
		return
	}
	runtime.Gosched()
}

// Next is for waits that may park: it returns true to re-check at once
// (spinning), yields and returns true for the next Yields calls, and
// returns false when the caller should park on its Queue.
func (b *Backoff) Next() bool {
	b.n++
	switch {
	case b.n <= Spins:
		return true
	case b.n <= Spins+Yields:
		runtime.Gosched()
		return true
	}
	return false
}

// Reset starts a new wait, for a waiter that was woken and found its
// condition false again.
func (b *Backoff) Reset() { b.n = 0 }
