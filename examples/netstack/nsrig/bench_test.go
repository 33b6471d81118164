package nsrig

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/cputime"
)

// benchLinks runs bench as a sub-benchmark for each MTU (1500, 9000) and
// link (goiflib over two simnics, plain, with LRO, with offloads; gVisor's
// link/pipe and link/channel), on a freshly opened pair of stacks that it
// closes afterwards, with a context of 5 min. Sub-benchmarks interleave
// under -count.
func benchLinks(b *testing.B, bench func(b *testing.B, ctx context.Context, st *Stacks)) {
	for _, mtu := range []int{1500, 9000} {
		for _, link := range []string{LinkIflib, LinkIflibLRO, LinkIflibOffload, LinkPipe, LinkChannel} {
			b.Run(fmt.Sprintf("mtu=%d/link=%s", mtu, link), func(b *testing.B) {
				st, err := Open(link, mtu, DefaultBenchPair())
				require.NoError(b, err)
				defer func() {
					assert.NoError(b, st.Close())
				}()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				bench(b, ctx, st)
			})
		}
	}
}

// BenchmarkTCP: goodput and CPU per MB over goiflib beside gVisor's links,
// at MTU 1500 and 9000.
func BenchmarkTCP(b *testing.B) {
	benchLinks(b, func(b *testing.B, ctx context.Context, st *Stacks) {
		chunk := Blob(1<<20, 7)
		s, err := st.NewStream(ctx, chunk)
		require.NoError(b, err)
		b.SetBytes(int64(len(chunk)))
		b.ReportAllocs()
		b.ResetTimer()
		c0 := cputime.Process()
		for range b.N {
			if err := s.Send(); err != nil { // no testify call per iteration
				require.NoError(b, err)
			}
		}
		require.NoError(b, s.Finish())
		cpu := cputime.Process() - c0
		b.StopTimer()
		b.ReportMetric(float64(cpu.Microseconds())/1e3/(float64(b.N)*float64(len(chunk))/1e6), "cpu-ms/MB")
	})
}

// BenchmarkRR: 64-byte request/response round trips on one TCP
// connection (ns/op is the round trip).
func BenchmarkRR(b *testing.B) {
	benchLinks(b, func(b *testing.B, ctx context.Context, st *Stacks) {
		rr, err := DialRR(ctx, st.A, st.AddrB)
		require.NoError(b, err)
		defer rr.Close()
		require.NoError(b, rr.RoundTrip(64))
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := rr.RoundTrip(64); err != nil { // no testify call per iteration
				require.NoError(b, err)
			}
		}
	})
}
