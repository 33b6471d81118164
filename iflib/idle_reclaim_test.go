package iflib_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
)

// TestIdleReclaim: reclaim keeps the last TxNSegments descriptors'
// packets on the ring (DESC_RECLAIMABLE's lag) and the queue's zone cache
// keeps what it freed; once the queue goes idle the timer has the
// consumer reclaim them (forced) and flush the cache, so every packet of
// the zone comes back within a few timer periods, in every TX mode. The
// premise: with the timer out of the way (an hour's period) the lag stays
// (FreeBSD's behaviour).
func TestIdleReclaim(t *testing.T) {
	const segs = 8 // the fake's TxNSegments: the lag in descriptors
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		// 16 packets: the zone caches pass straight through; 1024: the TX
		// queue's cache holds up to a bucket of them.
		for _, zsize := range []int{16, 1024} {
			t.Run(fmt.Sprintf("%v/zone%d", mode, zsize), func(t *testing.T) {
				t.Run("timer", func(t *testing.T) {
					f, z := idleReclaimSend(t, mode, zsize, 3*zsize, 5*time.Millisecond)
					back, backlog := 0, 0
					if !assert.Eventually(t, func() bool {
						back, backlog = z.Available(), f.ctx.TxBacklog(0)
						return back == z.Size() && backlog == 0
					}, 10*time.Second, time.Millisecond) {
						st, _ := f.ctx.TxQueueStats(0)
						require.FailNow(t, fmt.Sprintf("%d of %d packets back, backlog %d, stats %+v", back, z.Size(), backlog, st))
					}
					st, err := f.ctx.TxQueueStats(0)
					require.NoError(t, err)
					require.Equal(t, uint64(3*zsize), st.Reclaimed, "every packet sent was reclaimed")
					f.close(z)
				})
				t.Run("premise", func(t *testing.T) {
					// segs packets on a fresh queue: no reclaim pass ever
					// finds more than the lag, and with the timer out of the
					// way nothing else comes to take them.
					f, z := idleReclaimSend(t, mode, zsize, segs, time.Hour)
					time.Sleep(20 * time.Millisecond) // the completion interrupt's task passes
					require.Equal(t, segs, f.ctx.TxBacklog(0))
					require.Equal(t, z.Size()-segs, z.Available())
					f.close(z)
				})
			})
		}
	}
}

// idleReclaimSend sends n 64-byte packets through a fresh fake in mode,
// taking each from a zone of zsize (waiting while the zone is empty), then
// stops sending.
func idleReclaimSend(t *testing.T, mode iflib.TxMode, zsize, n int, timer time.Duration) (*fakeNIC, *iflib.Zone) {
	f := newFake(t, fakeOpts{cfg: iflib.Config{TxMode: mode, TimerInterval: timer}})
	z := f.zone(iflib.MCLBytes, zsize)
	require.NoError(t, f.ctx.Init()) // the fake reports the link up
	for i := 0; i < n; i++ {
		var p *iflib.Packet
		require.Eventually(t, func() bool {
			var err error
			p, err = z.Get()
			return err == nil
		}, 10*time.Second, 10*time.Microsecond, "packet %d: the zone stayed empty", i)
		p.SetLen(64)
		if err := f.ctx.Transmit(p); err != nil {
			st, _ := f.ctx.TxQueueStats(0)
			require.FailNow(t, fmt.Sprintf("packet %d: %v; watchdog events %d resets %d stats %+v", i, err, f.ctx.WatchdogEvents(), f.ctx.Resets(), st))
		}
	}
	return f, z
}
