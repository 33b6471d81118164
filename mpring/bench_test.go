package mpring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// newBenchRing is iflib's shape: 2048 slots, a drain taking at most 32
// (TX_BATCH_SIZE) items per call, never stalling.
func newBenchRing(b *testing.B) *Ring[*int] {
	b.Helper()
	r, err := New(2048, func(r *Ring[*int], cidx, pidx int) int {
		n := min(r.IdxDiff(pidx, cidx), 32)
		for i, k := cidx, 0; k < n; i, k = r.IncrementIdx(i, 1), k+1 {
			_ = r.At(i)
		}
		return n
	}, func(*Ring[*int]) bool { return true })
	require.NoError(b, err)
	return r
}

// BenchmarkEnqueueOne is the uncontended iflib_if_transmit path: one
// sender that finds the ring IDLE every time, enqueues and drains inline.
func BenchmarkEnqueueOne(b *testing.B) {
	r := newBenchRing(b)
	v := new(int)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		_ = r.EnqueueOne(v, 32, false)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds()/1e6, "Mitems/s")
}

// BenchmarkEnqueueParallel has GOMAXPROCS senders on one ring, each
// becoming the consumer when none is BUSY; drop-% is the share refused
// because the ring was full.
func BenchmarkEnqueueParallel(b *testing.B) {
	for _, abdicate := range []bool{false, true} {
		name := "inline"
		if abdicate {
			name = "abdicate"
		}
		b.Run(name, func(b *testing.B) {
			r := newBenchRing(b)
			b.ReportAllocs()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				v := new(int)
				for pb.Next() {
					if r.EnqueueOne(v, 32, abdicate) != nil || abdicate {
						r.CheckDrainage(32)
					}
				}
			})
			for !r.IsIdle() {
				r.CheckDrainage(r.Size())
			}
			st := r.Stats()
			b.ReportMetric(float64(st.Enqueues)/time.Since(start).Seconds()/1e6, "Mitems/s")
			b.ReportMetric(100*float64(st.Drops)/float64(st.Enqueues+st.Drops), "drop-%")
		})
	}
}
