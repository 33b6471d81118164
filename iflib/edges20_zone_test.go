package iflib_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Issue 20 §2 item 3: a closed Zone (and every ZoneCache in front of it)
// refuses Get, GetWait and ZoneCache.Get with ErrZoneClosed, also for the
// packets a cache still held and for a GetWait blocked when the zone
// closes; a Close that finds packets out leaves the zone usable.
func TestClosedZoneRefusesUse(t *testing.T) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 8 << 20})
	require.NoError(t, err)
	z, err := iflib.NewZone(space, "z", iflib.MCLBytes, 64)
	require.NoError(t, err)
	z.SetDebug(nil) // packets must stay in the caches, which debug mode (on under -race) passes through
	c := z.NewCache()

	// Packets out: Close refuses and the zone keeps working.
	p, err := z.Get()
	require.NoError(t, err)
	require.ErrorIs(t, z.Close(), iflib.ErrLeak)
	q, err := c.Get()
	require.NoError(t, err, "a zone whose Close failed is still usable")
	p.Free()
	q.Free() // back to the zone, not the cache: Free goes to the depot

	// Move every packet into caches (4 each: a sixteenth of the zone),
	// leaving the depot empty.
	var held []*iflib.Packet
	for {
		p, err := z.Get()
		if err != nil {
			require.ErrorIs(t, err, iflib.ErrNoPackets)
			break
		}
		held = append(held, p)
	}
	caches := []*iflib.ZoneCache{z.NewCache()} // c keeps the packet it cached
	for i, p := range held {
		if i > 0 && i%4 == 0 {
			caches = append(caches, z.NewCache())
		}
		caches[len(caches)-1].Put(p)
	}
	require.Zero(t, z.Outstanding())
	require.Zero(t, z.Available(), "every packet in a cache")
	waitErr := make(chan error, 1)
	go func() {
		_, err := z.GetWait(context.Background())
		waitErr <- err
	}()
	time.Sleep(10 * time.Millisecond) // GetWait blocks: the depot is empty
	require.NoError(t, z.Close())
	select {
	case err := <-waitErr:
		require.ErrorIs(t, err, iflib.ErrZoneClosed)
	case <-time.After(5 * time.Second):
		require.FailNow(t, "GetWait still blocked after Close")
	}
	require.Zero(t, space.Allocated(), "the zone's memory went back")

	_, err = z.Get()
	require.ErrorIs(t, err, iflib.ErrZoneClosed)
	_, err = z.GetWait(context.Background())
	require.ErrorIs(t, err, iflib.ErrZoneClosed)
	_, err = c.Get()
	require.ErrorIs(t, err, iflib.ErrZoneClosed, "a cache must not hand out packets whose memory went back to the space")
	_, err = z.NewCache().Get()
	require.ErrorIs(t, err, iflib.ErrZoneClosed)
	c.Flush()
	require.NoError(t, z.Close(), "Close is idempotent")
	require.False(t, errors.Is(z.Close(), iflib.ErrLeak))
}

// The fuzzer's first finding (FuzzModel seed "two contexts forwarding"):
// packets one context received and forwarded to another that still has
// them queued make the first's Detach report a *LeakError — and then its
// RX zone kept its memory forever, even after the packets came back. Now
// the zone returns its memory to the space when the last of them is freed.
func TestDetachedZoneReturnsMemoryAfterForwarding(t *testing.T) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 32 << 20, ContigSize: 4 << 20})
	require.NoError(t, err)
	// No timer on B: its watchdog would reset the queue the test holds
	// (and free A's packets) before A detaches.
	b := newFake(t, fakeOpts{space: space, name: "out", cfg: iflib.Config{RxZoneSize: 300, TimerInterval: time.Hour}})
	require.NoError(t, b.ctx.Init())
	b.mu.Lock()
	b.hold = true // B keeps what it is given on its ring
	b.mu.Unlock()
	var forwarded atomic.Int64
	a := newFake(t, fakeOpts{space: space, name: "in", cfg: iflib.Config{RxZoneSize: 300},
		input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
			n, _ := b.ctx.TransmitBatch(pkts)
			forwarded.Add(int64(n))
		}})
	require.NoError(t, a.ctx.Init())
	for i := 0; i < 10; i++ {
		require.True(t, a.rx(frame(300, byte(i))))
	}
	testutil.Eventually(t, "the frames forwarded", func() bool { return forwarded.Load() == 10 })
	before := space.Allocated()
	err = a.ctx.Detach()
	require.ErrorIs(t, err, iflib.ErrLeak, "B still holds A's packets")
	require.NoError(t, a.bus.Close())
	b.mu.Lock()
	b.hold = false
	b.mu.Unlock()
	b.complete(-1)
	require.NoError(t, b.ctx.Stop()) // frees what is left on B's ring
	require.Less(t, space.Allocated(), before, "A's zone kept its memory after its packets came back")
	b.close()
	require.Zero(t, space.Allocated())
}
