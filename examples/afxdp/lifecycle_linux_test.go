package afxdp

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/iflib"
)

// TestStopDetachInFlight: Stop and Detach with frames arriving from the
// peer and packets being transmitted leave no socket, no attached
// program, no program or map, no fd and no goroutine behind; every packet
// is back in its zone; Init after Stop binds the queue again (the kernel's
// deferred release makes the first binds EBUSY) and traffic resumes.
func TestStopDetachInFlight(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	before := snapshot(t, rig)
	raw, err := rig.OpenRaw(p.B)
	require.NoError(t, err)
	defer raw.Close()
	u := newUMEM(t, 4096)
	txz, err := u.NewZone("tx", 256)
	require.NoError(t, err)

	var received atomic.Uint64
	d, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), UMEM: u, NRxd: 256, NTxd: 256, Checker: busdmatest.NewChecker(t)},
		iflib.Attachment{
			Config: iflib.Config{RxZoneSize: 1024},
			Input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
				received.Add(uint64(len(pkts)))
				for _, m := range pkts {
					m.Free()
				}
			},
		})
	require.NoError(t, err)
	ic := d.Context()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	// spin runs send(0), send(1), ... on its own goroutine until stop.
	spin := func(send func(i uint64, buf []byte)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1514)
			for i := uint64(0); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				send(i, buf)
			}
		}()
	}
	spin(func(i uint64, buf []byte) { // the peer sends
		_ = raw.Send(TestFrame(buf, 60+int(i%1400), p.AMAC, p.BMAC, i))
		if i%32 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	})
	spin(func(i uint64, buf []byte) { // the driver sends
		m, err := txz.Get()
		if err != nil {
			time.Sleep(50 * time.Microsecond)
			return
		}
		m.Append(TestFrame(buf, 60+int(i%1400), p.BMAC, p.AMAC, i))
		_ = ic.Transmit(m) // ErrNotRunning while stopped: freed by iflib
	})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	for round := 0; round < 3; round++ {
		r0, o0 := received.Load(), ic.Counter(iflib.IfCounterOPackets)
		require.NoError(t, ic.Init(), "round %d", round)
		require.Equal(t, 1, xskCount(t, rig), "the queue's socket")
		progID, mapID := d.prog.ids(t)
		require.True(t, waitFor(t, 5*time.Second, func() bool {
			return received.Load() > r0+200 && ic.Counter(iflib.IfCounterOPackets) > o0+200
		}), "round %d: traffic did not flow: rx %d tx %d (driver %+v)", round, received.Load()-r0, ic.Counter(iflib.IfCounterOPackets)-o0, d.Stats())
		l, err := rig.Netlink().LinkByName(p.A)
		require.NoError(t, err)
		require.True(t, l.Attrs().Xdp != nil && l.Attrs().Xdp.Attached, "program attached while running")

		if round < 2 {
			require.NoError(t, ic.Stop())
		} else {
			require.NoError(t, ic.Detach())
		}
		assertClean(t, rig, p.A)
		requireGone(t, progID, mapID)
	}
	close(stop)
	wg.Wait()
	assert.Equal(t, txz.Size(), txz.Available(), "TX packets not back in their zone")
	assert.Zero(t, d.Stats().TxInvalidDescs)
	assert.Zero(t, d.Stats().BadDescs)
	raw.Close()
	before.requireSame(t, rig)
}
