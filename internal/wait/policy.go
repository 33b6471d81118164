package wait

import "runtime"

// Spins is how many times a waiter re-checks its condition before it starts
// yielding. 16 loads cover a running peer's publication (a slot store and
// one atomic store, tens of nanoseconds with the cache line moving between
// cores) and cost well under a microsecond when the peer is not running.
// BenchmarkSpinPolicy (bufring) on 2 CPUs: 16 was within noise of 8 and 32
// and ahead of 64 (the bufring figure before this package) at every fan-in;
// mp_ring's earlier 8 came from the same kind of measurement.
//
// It is a variable only so that the benchmark can sweep it; nothing else
// writes it, and it must not change while a ring is in use.
var Spins = 16

// Yields is how many runtime.Gosched calls a parkable waiter makes after
// spinning and before it parks. A yield lets a producer that shares the
// waiter's P run, which is the common case when goroutines outnumber CPUs;
// once that does not help, parking frees the CPU. BenchmarkSpinPolicy: 4
// kept the fan-in throughput of yielding forever while parking under
// oversubscription. Like Spins, it is a variable only for that benchmark.
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
