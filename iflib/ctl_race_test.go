package iflib_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
)

// allFake has every control-plane IFDI method (ctlFake's and MTUSet).
type allFake struct {
	*ctlFake
}

func (d *allFake) MTUSet(ic *iflib.Context, mtu int) (int, error) { return mtu + 18, nil }

// Stop halts reception as hardware does.
func (d *allFake) Stop(ic *iflib.Context) {
	d.fakeNIC.mu.Lock()
	d.rxTail = d.rxHead
	d.fakeNIC.mu.Unlock()
	d.fakeNIC.Stop(ic)
}

// SetMAC on a running interface reinitialises it so IFDI_INIT programs
// the address.
func TestSetMACRunningReinit(t *testing.T) {
	f, d := newCtlFake(t, fakeOpts{})
	require.NoError(t, f.ctx.Init())
	mac := iflib.EtherAddr{2, 1, 2, 3, 4, 5}
	require.NoError(t, f.ctx.SetMAC(mac))
	require.NoError(t, f.ctx.SetMAC(mac)) // no change: no reinit
	assert.Equal(t, 2, d.initCount())
	assert.True(t, f.ctx.Running())
	require.NoError(t, f.ctx.Stop())
	f.close()
}

// Every control call races senders, Init/Stop cycles and finally Detach:
// each returns nil or a documented error, nothing hangs, and every packet
// handed to Transmit is on the wire or counted.
func TestCtlRacesLifecycle(t *testing.T) {
	var d *allFake
	var delivered atomic.Uint64
	f := newFake(t, fakeOpts{cfg: iflib.Config{StopTimeout: 50 * time.Millisecond},
		input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
			for _, p := range pkts {
				delivered.Add(1)
				p.Free()
			}
		},
		softc: func(sc *iflib.SoftcCtx) {
			sc.Capabilities, sc.CapEnable = iflib.CapTxCsum|iflib.CapRxCsum, iflib.CapTxCsum
		},
		wrap: func(f *fakeNIC) iflib.Device {
			d = &allFake{ctlFake: &ctlFake{fakeNIC: f, restart: true}}
			return d
		}})
	ic := f.ctx
	ic.MediaAdd(iflib.Media1000T)
	ic.MediaAdd(iflib.Media10GT)
	z := f.zone(iflib.MCLBytes, 1024)
	require.NoError(t, ic.Init())
	documented := []error{iflib.ErrConfig, iflib.ErrDetached, iflib.ErrBusy, iflib.ErrNotSupported}
	check := func(what string, err error) {
		var ie *iflib.IFDIError
		if err != nil && !errors.As(err, &ie) {
			for _, e := range documented {
				if errors.Is(err, e) {
					return
				}
			}
			assert.Fail(t, fmt.Sprintf("%s: undocumented error %v", what, err))
		}
	}
	var handed atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	txSenders(&wg, ic, z, 2, -1, 200, done, &handed, nil)
	wg.Add(1)
	go func() { // the lifecycle
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			check("Stop", ic.Stop())
			check("Init", ic.Init())
		}
	}()
	wg.Add(1)
	go func() { // the link and the stack's subscriber
		defer wg.Done()
		cancel := ic.SubscribeLink(func(iflib.LinkEvent) { _, _ = ic.MediaStatus() })
		defer cancel()
		for {
			select {
			case <-done:
				return
			default:
			}
			ic.RequestReset()
			f.rx(frame(300, 1))
			time.Sleep(100 * time.Microsecond)
		}
	}()
	ctlCalls := func(i int) {
		m := iflib.EtherAddr{1, 0, 0x5e, 0, 0, byte(i % 4)}
		check("SetMTU", ic.SetMTU([]int{1500, 9000, 4000}[i%3]))
		check("SetFlags", ic.SetFlags(iflib.IfFlags(i%4)*iflib.IffPromisc))
		check("AddMulti", ic.AddMulti(m))
		check("DelMulti", ic.DelMulti(m))
		check("RegisterVLAN", ic.RegisterVLAN(uint16(1+i%3)))
		check("UnregisterVLAN", ic.UnregisterVLAN(uint16(1+(i+1)%3)))
		check("SetCapEnable", ic.SetCapEnable([]iflib.Capabilities{iflib.CapTxCsum, iflib.CapRxCsum, 0}[i%3]))
		check("SetMedia", ic.SetMedia([]iflib.Media{iflib.Media1000T, iflib.Media10GT}[i%2]))
		check("SetMAC", ic.SetMAC(iflib.EtherAddr{2, 0, 0, 0, 0, byte(i)}))
		r := ic.RSS()
		r.Key[0] = byte(i)
		check("SetRSS", ic.SetRSS(r))
		_, err := ic.MediaStatus()
		check("MediaStatus", err)
		_ = ic.SysctlLines()
	}
	for i := 0; i < 12; i++ {
		ctlCalls(i)
	}
	// Detach racing the control calls.
	detached := make(chan error, 1)
	go func() { detached <- ic.Detach() }()
	for i := 0; i < 4; i++ {
		ctlCalls(i)
	}
	close(done)
	wg.Wait()
	err := <-detached
	check("Detach", err)
	requireTxLedger(t, ic, handed.Load(), f.onRing(t))
	require.Equal(t, z.Size(), z.Available())
	require.NoError(t, f.bus.Close())
}

// A cyclic packet chain (a.Next = b, b.Next = a) is refused with
// ErrBadLength and counted, in Transmit and TransmitBatch, instead of
// making the chain walk spin for ever.
func TestTransmitCyclicChain(t *testing.T) {
	f := newFake(t, fakeOpts{})
	z := f.zone(iflib.MCLBytes, 8)
	require.NoError(t, f.ctx.Init())
	cyc := func() *iflib.Packet {
		a, b := pkt(t, z, 100, 1), pkt(t, z, 100, 2)
		a.Next, b.Next = b, a
		a.Hdr.Len = 200
		return a
	}
	before := txStats(t, f.ctx).OErrors
	require.ErrorIs(t, f.ctx.Transmit(cyc()), iflib.ErrBadLength)
	_, err := f.ctx.TransmitBatch([]*iflib.Packet{cyc()})
	require.ErrorIs(t, err, iflib.ErrBadLength)
	assert.Equal(t, before+2, txStats(t, f.ctx).OErrors)
	// The chain helpers end too.
	a, b := pkt(t, z, 10, 1), pkt(t, z, 10, 2)
	a.Next, b.Next = b, a
	assert.Equal(t, iflib.MaxChainBufs+1, a.NumBufs())
	assert.Equal(t, 10*iflib.MaxChainBufs, a.ChainLen())
	b.Next = nil
	assert.Equal(t, 2, a.NumBufs())
	a.Free()
	require.NoError(t, f.ctx.Stop())
	f.close(z)
}
