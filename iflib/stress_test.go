package iflib_test

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// 64 senders on one queue in each mode: every transmit is accounted for
// (on the wire, or refused with an error), each sender's accepted frames
// arrive in the order sent, none twice.
func TestFanInStressEveryMode(t *testing.T) {
	const senders, per = 64, 40
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		t.Run(mode.String(), func(t *testing.T) {
			e, err := newEnv(t, simnic.Config{}, iflib.Config{TxMode: mode})
			require.NoError(t, err)
			var mu sync.Mutex
			next := make([]uint32, senders) // next sequence expected per sender
			seen := map[uint64]bool{}
			var bad atomic.Uint64
			e.sink.Inspect = func(f []byte) {
				s, q := binary.BigEndian.Uint32(f[20:24]), binary.BigEndian.Uint32(f[24:28])
				mu.Lock()
				defer mu.Unlock()
				k := uint64(s)<<32 | uint64(q)
				if seen[k] || q < next[s] {
					bad.Add(1)
				}
				seen[k] = true
				next[s] = q + 1
			}
			require.NoError(t, e.ctx.Init())
			var accepted, refused atomic.Uint64
			var wg sync.WaitGroup
			for s := 0; s < senders; s++ {
				wg.Add(1)
				go func(s uint32) {
					defer wg.Done()
					c := e.zone.NewCache()
					defer c.Flush()
					for q := uint32(0); q < per; q++ {
						p, err := c.Get()
						if !assert.NoError(t, err) {
							return
						}
						p.SetLen(200)
						b := p.Bytes()
						binary.BigEndian.PutUint16(b[12:14], 0x88b5) // local experimental ethertype
						binary.BigEndian.PutUint32(b[20:24], s)
						binary.BigEndian.PutUint32(b[24:28], q)
						p.Hdr.Len = 200
						if e.ctx.Transmit(p) == nil {
							accepted.Add(1)
						} else {
							refused.Add(1)
						}
					}
				}(uint32(s))
			}
			wg.Wait()
			testutil.Eventually(t, "accepted frames on the wire", func() bool { return e.sink.Frames() >= accepted.Load() })
			got := e.sink.Frames()
			require.Equal(t, accepted.Load(), got, "wire %d, accepted %d", got, accepted.Load())
			require.Equal(t, uint64(senders*per), accepted.Load()+refused.Load(), "accepted %d + refused %d != %d", accepted.Load(), refused.Load(), senders*per)
			drops := e.ctx.Counter(iflib.IfCounterOQDrops) + e.ctx.Counter(iflib.IfCounterOErrors)
			require.Equal(t, refused.Load(), drops, "counted drops %d, refused %d", drops, refused.Load())
			require.False(t, mode == iflib.TxModeDRBR && refused.Load() != 0, "drbr refused %d: it must block, not drop", refused.Load())
			require.Zero(t, bad.Load(), "%d frames duplicated or out of order", bad.Load())
			e.done()
		})
	}
}

// Descriptor exhaustion and recovery: a small TX ring and a slow wire.
// mpring keeps refused packets and retries, drbr keeps them at the head,
// simple drops and counts; in every mode the queue recovers and the books
// balance.
func TestDescriptorExhaustionAndRecovery(t *testing.T) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		t.Run(mode.String(), func(t *testing.T) {
			e, err := newEnv(t, simnic.Config{NTxd: 64, FrameRate: 4000}, iflib.Config{TxMode: mode})
			require.NoError(t, err)
			require.NoError(t, e.ctx.Init())
			const n = 300
			ok := uint64(0)
			for i := 0; i < n; i++ {
				if e.ctx.Transmit(e.pkt(100)) == nil {
					ok++
				}
			}
			testutil.Eventually(t, "queue drained", func() bool { return e.sink.Frames() >= ok })
			// mpring and drbr check for room before encap (the drain
			// stalls, the buf_ring head waits); simple finds out in encap.
			key := "txq_drain_nodesc"
			if mode == iflib.TxModeSimple {
				key = "no_desc_avail"
			}
			nodesc, _ := e.ctx.SysctlValue("dev.simnic.0.iflib.txq0." + key)
			require.NotZero(t, nodesc.(uint64), "a 64-descriptor ring never ran out: the test did not exercise exhaustion")
			drops := e.ctx.Counter(iflib.IfCounterOQDrops)
			require.Equal(t, uint64(n), ok+drops, "sent %d + dropped %d != %d (wire %d)", ok, drops, n, e.sink.Frames())
			require.Equal(t, ok, e.sink.Frames(), "sent %d + dropped %d != %d (wire %d)", ok, drops, n, e.sink.Frames())
			require.False(t, mode != iflib.TxModeSimple && drops != 0, "%s dropped %d for lack of descriptors; it must keep them", mode, drops)
			// Recovery: the queue takes traffic again.
			require.NoError(t, e.ctx.Transmit(e.pkt(100)))
			testutil.Eventually(t, "recovered", func() bool { return e.sink.Frames() == ok+1 })
			e.done()
		})
	}
}
