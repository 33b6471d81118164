package iflib_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
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
	var handed, wired atomic.Uint64
	var wg sync.WaitGroup
	done := make(chan struct{})
	txSenders(&wg, r.Ctx, r.TxZone, 2, -1, 300, done, &handed, nil)
	rxPump(&wg, done, func(i int) bool { return r.NIC.Receive(frameOf([]int{64, 1514, 9014}[i%3], uint32(i))) }, &wired)
	for i := 0; i < 4; i++ {
		n := delivered.Load()
		testutil.Eventually(t, "frames delivered", func() bool { return delivered.Load() >= n+10 })
		mtu := []int{1500, 9000}[i%2]
		require.NoError(t, r.Ctx.SetMTU(mtu))
		require.True(t, r.Ctx.Running())
	}
	close(done)
	wg.Wait()
	require.NoError(t, r.Ctx.Stop())
	requireTxLedger(t, r.Ctx, handed.Load(), r.Driver.Stats().TxEncapped)
	nic := r.NIC.Stats()
	requireRxLedger(t, r.Ctx, nic.RxFrames+nic.RxErrors, delivered.Load())
	assert.Greater(t, wired.Load(), uint64(0))
}
