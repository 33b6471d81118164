package iflib_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

func testZone(t *testing.T, n int) *iflib.Zone {
	t.Helper()
	s, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	z, err := iflib.NewZone(s, "z", iflib.MCLBytes, n)
	require.NoError(t, err)
	return z
}

// GetWait blocks on an empty zone until a packet is freed, serves waiters
// in order, and gives up with the context's error.
func TestZoneGetWait(t *testing.T) {
	z := testZone(t, 2)
	a, _ := z.Get()
	b, _ := z.Get()
	_, err := z.Get()
	require.ErrorIs(t, err, iflib.ErrNoPackets)

	got := make(chan *iflib.Packet, 2)
	for i := 0; i < 2; i++ {
		go func() {
			p, err := z.GetWait(context.Background())
			if err == nil {
				got <- p
			}
		}()
	}
	time.Sleep(10 * time.Millisecond)
	select {
	case <-got:
		require.FailNow(t, "GetWait returned with the zone empty")
	default:
	}
	a.Free()
	p := <-got
	require.Same(t, a, p)
	b.Free()
	require.Same(t, b, <-got)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	_, err = z.GetWait(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	a.Free()
	b.Free()
	require.Equal(t, 2, z.Available())
	require.NoError(t, z.Close())
}

// The drbr blast: senders of a zone smaller than what the rings can hold
// wait for packets with GetWait instead of failing, and every packet is
// sent (drbr never drops).
func TestDRBRSendersWaitForPackets(t *testing.T) {
	f := newFake(t, fakeOpts{ntxd: 64, cfg: iflib.Config{TxMode: iflib.TxModeDRBR, DRBRSize: 256}})
	f.discard = true
	z := f.zone(iflib.MCLBytes, 48) // less than the buf_ring and the TX ring hold
	require.NoError(t, f.ctx.Init())
	const senders, each = 4, 500
	var sent atomic.Uint64
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p, err := z.GetWait(context.Background())
				if !assert.NoError(t, err) {
					return
				}
				p.SetLen(100)
				if err := f.ctx.Transmit(p); err == nil {
					sent.Add(1)
				} else {
					t.Logf("transmit: %v (resets %d, watchdog %d)", err, f.ctx.Resets(), f.ctx.WatchdogEvents())
				}
			}
		}()
	}
	wg.Wait()
	require.Equal(t, uint64(senders*each), sent.Load())
	testutil.Eventually(t, "all on the wire", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.nframes == senders*each
	})
	require.NoError(t, f.ctx.Stop())
	f.close(z)
}

// With debug on, a use after free names where the packet was freed.
func TestZoneDebugReportsUseAfterFree(t *testing.T) {
	f := newFake(t, fakeOpts{})
	z := f.zone(iflib.MCLBytes, 8)
	var reports []string
	var mu sync.Mutex
	z.SetDebug(&iflib.ZoneDebug{Report: func(msg string) { mu.Lock(); reports = append(reports, msg); mu.Unlock() }})
	require.NoError(t, f.ctx.Init())
	p := pkt(t, z, 100, 1)
	p.Hdr.Len = 7 // a bad length: Transmit frees p
	require.ErrorIs(t, f.ctx.Transmit(p), iflib.ErrBadLength)
	q := pkt(t, z, 100, 2) // FIFO in debug mode: not p again
	require.NotSame(t, p, q)
	require.ErrorIs(t, f.ctx.Transmit(p), iflib.ErrUseAfterFree)
	p.Free() // a double free: ignored and reported
	mu.Lock()
	require.Len(t, reports, 2)
	require.Contains(t, reports[0], "used after free")
	require.Contains(t, reports[0], "zone_test.go") // where it was used again
	require.Contains(t, reports[1], "freed twice")
	mu.Unlock()
	require.Equal(t, uint64(1), z.Stats().DoubleFrees)
	reps := f.takeClientReports()
	require.Len(t, reps, 1)
	require.Contains(t, reps[0].Msg, "freed at /") // the free site, with debug on
	require.Contains(t, reps[0].Msg, "zone_test.go")
	q.Free()
	f.close(z)
}
