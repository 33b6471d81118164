package wait

import "runtime"

// Spins is how many times a waiter re-checks its condition before it starts
// yielding: 4, sync.Mutex's active_spin. A running peer's publication (a
// slot store and one atomic store) lands within that many loads; a peer
// that is not running (preempted, or sharing this P) is only helped by
// yielding, so every further spin is wasted CPU.
//
// Measured on 2 shared CPUs with the single-item fan-in of BenchmarkFanIn
// at 1 to 64 producers (BenchmarkSpinPolicy in bufring sweeps it; 5
// interleaved rounds, medians): Ring, whose producers wait for each other,
// ran 13–17 M items/s at 145–115 CPU-ns/item with 16 spins, 20–31 with 8,
// and 25–42 at 42–70 CPU-ns/item with 4 or 0; MPSC, whose producers never
// wait for each other, was within the round-to-round spread from 0 to 16
// (34–60 M items/s, 31–38 CPU-ns/item). Yielding forever without parking
// (what bufring and mpring did before, after 64 and 8 spins) was 2–5 times
// slower and cost 2–5 times the CPU per item at every fan-in. Long spins
// hurt most where goroutines outnumber CPUs: with pinned workers
// (examples/workerpool -work 0, 64 producers) 256 spins halved the rate of
// 16 and 4096 cut it twelvefold, because a spinning worker takes the CPU
// its producers need.
//
// It is a variable only so that the benchmark can sweep it; nothing else
// writes it, and it must not change while a ring is in use.
var Spins = 4

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
