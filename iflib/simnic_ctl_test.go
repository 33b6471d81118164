package iflib_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// SIOCSIFMTU on the simulated NIC under traffic in both directions: the
// MTU flips between 9000 and 1500 while senders transmit and the wire
// delivers frames of both sizes. Nothing is lost unaccounted: every packet
// handed to Transmit was put on a descriptor ring by the driver or counted
// as dropped (oqdrops, oerrors); every frame the NIC wrote to an RX ring
// was taken by iflib or counted at the stop (rx_stop_discards); every
// frame taken was delivered or counted (iqdrops); and every packet is back
// in its zone at the end.
func TestSetMTUUnderTrafficSimnic(t *testing.T) {
	var delivered atomic.Uint64
	r := simnictest.New(t, simnictest.Options{
		NIC: simnic.Config{MaxFrame: 9018, NRxd: 256, NTxd: 256},
		Input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
			for _, p := range pkts {
				delivered.Add(1)
				p.Free()
			}
		},
	})
	if _, ok := any(r.Driver).(iflib.MTUSetter); !ok {
		t.Skip("simnic's driver has no IFDI_MTU_SET")
	}
	require.Equal(t, 9000, r.Ctx.MTU())
	var handed atomic.Uint64
	var wg sync.WaitGroup
	done := make(chan struct{})
	for s := 0; s < 2; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := r.TxZone.NewCache()
			defer c.Flush()
			for {
				select {
				case <-done:
					return
				default:
				}
				p, err := c.Get()
				if err != nil {
					runtime.Gosched()
					continue
				}
				p.SetLen(300)
				p.Hdr.Len = 300
				handed.Add(1)
				_ = r.Ctx.Transmit(p)
			}
		}()
	}
	var wired atomic.Uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			f := frameOf([]int{64, 1514, 9014}[i%3], uint32(i))
			if r.NIC.Receive(f) {
				wired.Add(1)
			} else {
				runtime.Gosched()
			}
		}
	}()
	for i := 0; i < 4; i++ {
		n := delivered.Load()
		eventually(t, "frames delivered", func() bool { return delivered.Load() >= n+10 })
		mtu := []int{1500, 9000}[i%2]
		require.NoError(t, r.Ctx.SetMTU(mtu))
		require.True(t, r.Ctx.Running())
	}
	close(done)
	wg.Wait()
	require.NoError(t, r.Ctx.Stop())
	st := r.Driver.Stats()
	drops := r.Ctx.Counter(iflib.IfCounterOQDrops) + r.Ctx.Counter(iflib.IfCounterOErrors)
	require.Equal(t, handed.Load(), st.TxEncapped+drops, "handed = put on a ring + counted drops")
	rx, err := r.Ctx.RxQueueStats(0)
	require.NoError(t, err)
	nic := r.NIC.Stats()
	require.Equal(t, nic.RxFrames+nic.RxErrors, rx.IPackets+rx.IErrors+rx.StopDiscards, "NIC %+v\niflib %+v", nic, rx)
	require.Equal(t, rx.IPackets, delivered.Load()+rx.IQDrops+rx.Filtered, "%+v", rx)
	assert.Greater(t, wired.Load(), uint64(0))
}
