package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchCost is the per-packet work of the benchmark: encap and packet
// generation cost the same, as in the review's measurement, where one
// sender alone reached simple_tx's ceiling (44 Gb/s) and two deferring
// senders doubled it.
var benchCost = cost{encap: defaultRounds, gen: defaultRounds}

func seconds() float64 { return float64(time.Now().UnixNano()) / 1e9 }

// BenchmarkSeed003 is the fan-in comparison of "simple_tx with drbr
// deferral" at ring level: fanIn goroutines send b.N packets in total into
// one queue whose consumer pays a fixed encap cost per packet. items/s
// counts packets encapped; cpu-ns/item is process CPU time per packet
// offered; drop-% those the mp_ring refused (the other modes never drop);
// doorbells/item how often the tail register was written.
func BenchmarkSeed003(b *testing.B) {
	for _, v := range variants {
		for _, fanIn := range fanIns {
			b.Run(fmt.Sprintf("%s/fanin=%d", v.name, fanIn), func(b *testing.B) {
				b.ReportAllocs()
				res, err := run(v, fanIn, b.N, benchCost, seconds)
				require.NoError(b, err)
				b.ReportMetric(res.itemsPerSec(), "items/s")
				b.ReportMetric(res.cpuNsPerItem(), "cpu-ns/item")
				b.ReportMetric(100*res.dropFraction(), "drop-%")
				b.ReportMetric(res.doorbells, "doorbells/item")
			})
		}
	}
}

// TestEveryPacketAccountedFor runs each variant briefly at each fan-in and
// checks that every packet was encapped or counted as dropped, and that the
// modes which never drop did not.
func TestEveryPacketAccountedFor(t *testing.T) {
	for _, v := range variants {
		for _, fanIn := range fanIns {
			res, err := run(v, fanIn, 2000, cost{encap: 1, gen: 1}, seconds)
			require.NoError(t, err, "%s fan-in %d: %v (%+v)", v.name, fanIn, err, res)
			assert.False(t, v.name != "mpring" && v.name != "mpring-abdicate" && res.dropped != 0, "%s fan-in %d dropped %d", v.name, fanIn, res.dropped)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		got := median(c.in)
		assert.False(t, got != c.want, "median(%v) = %v, want %v", c.in, got, c.want)
	}
}

// BenchmarkHash measures one round of hash: the unit of -encap and -gen,
// whose cost defaults.go quotes.
//
//	go test -run '^$' -bench '^BenchmarkHash$' -count 5 ./examples/seed003ring/
func BenchmarkHash(b *testing.B) {
	p := newPacket(0)
	var sink uint64
	for b.Loop() {
		sink += hash(p, 1)
	}
	keep.Add(sink)
}
