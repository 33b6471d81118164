package iflib_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Issue 20 §2 item 8: every place iflib clears a descriptor ring the
// device may still write — the TX ring at stop (txq.freeAll: iflib_txsd_free
// and bzero), the RX rings at stop and at setup (freeList.bufsFree:
// iflib_fl_bufs_free), the ring memory at detach and after a failed
// Register (RingMem.free: iflib_dma_free) — syncs POSTREAD first (the stop
// path also syncs each ring before it: the last credits update and the
// rx_stop_discards count). Under late and batched write-backs (WTHRESH
// with a delay, so write-backs land long after their frames, and simnic
// flushes them at IFDI_STOP), with traffic both ways and the interface
// stopped and started again and again, under the IOMMU: no device access
// outside a mapping, no IOMMU fault, no stale descriptor (no frame
// delivered twice, none corrupted), nothing left behind.
func TestRingClearsUnderLateWriteBack(t *testing.T) {
	for _, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			env := simnictest.NewEnv(t, simnictest.EnvOptions{IOMMU: true, Sim: busdma.SimConfig{Size: 32 << 20, ContigSize: 1 << 20}})
			nic, err := env.NewNIC(simnic.Config{NRxd: 64, NTxd: 64, WBThresh: 8, WBDelay: 300 * time.Microsecond})
			require.NoError(t, err)
			nic.SetPeer(nic) // the wire loops back: what it sends it receives
			var good, bad atomic.Int64
			var mu sync.Mutex
			seen := map[uint32]bool{}
			input := func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range pkts {
					if id, ok := checkFrame(p.Bytes()); ok && !seen[id] {
						seen[id] = true
						good.Add(1)
					} else {
						bad.Add(1) // corrupted, or delivered twice (a stale descriptor)
					}
					p.Free()
				}
			}
			drv, err := env.Attach(nic, iflib.Attachment{Input: input, Config: iflib.Config{TxMode: mode, RxZoneSize: 512}})
			require.NoError(t, err)
			ctx := drv.Context()
			z, err := env.NewZone("tx", iflib.MCLBytes, 256)
			require.NoError(t, err)
			id := uint32(0)
			for round := 0; round < 12; round++ {
				require.NoError(t, ctx.Init())
				testutil.Eventually(t, "the link", func() bool { return ctx.LinkState() == iflib.LinkStateUp })
				for i := 0; i < 40; i++ {
					p, err := z.Get()
					if err != nil {
						break
					}
					p.Append(makeFrame(id, 100+int(id%1300)))
					id++
					_ = ctx.Transmit(p)
				}
				time.Sleep(time.Duration(round%3) * 200 * time.Microsecond) // stop amid late write-backs
				require.NoError(t, ctx.Stop())
			}
			require.NoError(t, ctx.Detach())
			require.Zero(t, bad.Load(), "a stale or corrupted frame was delivered")
			require.NotZero(t, good.Load())
			require.Equal(t, z.Size(), z.Available())
		})
	}
}
