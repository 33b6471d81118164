package wait

import "github.com/goiflib/goiflib/internal/shm"

// Spins is how many times a waiter re-checks its condition before it starts
// yielding: 4, sync.Mutex's active_spin. A running peer's publication (a
// slot store and one atomic store) lands within that many loads; a peer
// that is not running (preempted, or sharing this P) is only helped by
// yielding, so every further spin is wasted CPU, and long spins hurt most
// where goroutines outnumber CPUs, because a spinning waiter takes the CPU
// its peers need.
//
// BenchmarkSpinPolicy in bufring sweeps Spins and Yields on the
// single-item fan-in of MPSC and Ring (its doc has the command) and
// reports items/s and CPU-ns per item. On a shared 2-CPU machine its
// rounds vary several-fold, so no figures are quoted here; what held in
// every row of such a run is that never parking (yields=never-park) cost
// more CPU per item than parking. Re-run it before changing either value.
//
// It is a variable only so that the benchmark can sweep it; nothing else
// writes it, and it must not change while a ring is in use.
var Spins = 4

// Yields is how many runtime.Gosched calls a parkable waiter makes after
// spinning and before it parks. A yield lets a producer that shares the
// waiter's P run, which is the common case when goroutines outnumber CPUs;
// once that does not help, parking frees the CPU. See Spins for the
// benchmark that sweeps it. Like Spins, it is a variable only for that
// benchmark.
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
	shm.Yield()
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
		shm.Yield()
		return true
	}
	return false
}

// Reset starts a new wait, for a waiter that was woken and found its
// condition false again.
func (b *Backoff) Reset() { b.n = 0 }
