package seedbench

import (
	"testing"
	"time"

	"github.com/goiflib/goiflib/busdma/busdmatest"
)

// TestSeed003Smoke runs every mode briefly with the busdma checker on:
// frames reach the wire, and detach leaves nothing loaded.
func TestSeed003Smoke(t *testing.T) {
	for _, mode := range TxModes {
		chk := busdmatest.NewChecker(t)
		r, err := NewTxRig(mode, chk, 8192)
		if err != nil {
			t.Fatal(err)
		}
		res := r.RunSenders(4, 150*time.Millisecond)
		if res.Frames == 0 {
			t.Errorf("%s: no frames on the wire", mode)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
	}
}

// BenchmarkSeed003 is the seed 003 table as a benchmark: one TX queue,
// 1342-byte two-buffer frames; b.N transmit attempts shared by the
// senders, so ns/op and allocs/op are per packet.
func BenchmarkSeed003(b *testing.B) {
	for _, mode := range TxModes {
		for _, n := range Seed003FanIns {
			b.Run(mode.String()+"/senders="+itoa(n), func(b *testing.B) {
				r, err := NewTxRig(mode, nil, 16384)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				b.ReportAllocs()
				b.ResetTimer()
				res := r.RunCount(n, b.N)
				b.StopTimer()
				b.ReportMetric(res.Gbps(), "Gb/s")
				b.ReportMetric(res.PPS()/1e6, "Mpps")
				b.ReportMetric(float64(res.Drops)/float64(max(res.Frames, 1)), "drops/frame")
			})
		}
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
