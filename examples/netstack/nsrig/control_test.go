package nsrig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
)

// TestControlPlaneMAC: the endpoint and the device agree on the address
// after Bind: the endpoint's address is the context's (Context.MAC), so a
// device with a unicast filter passes the stack's frames.
func TestControlPlaneMAC(t *testing.T) {
	p := newPair(t, PairConfig{Config: iflib.Config{TxMode: iflib.TxModeMPRing}})
	for _, s := range []*Side{p.A, p.B} {
		mac := s.Context().MAC()
		assert.NotEqual(t, iflib.EtherAddr{}, mac)
		assert.Equal(t, string(mac[:]), string(s.EP.LinkAddress()), "%s", s.Context().Name())
	}
	assert.NotEqual(t, p.A.EP.LinkAddress(), p.B.EP.LinkAddress(), "each side its own address")
	blob := Blob(64<<10, 7)
	serve(t, p, blob)
	exchange(t, p, blob, time.Minute)
}

// TestControlPlaneCapEnable: offloads turned off with Context.SetCapEnable
// (SIOCSIFCAP) after gVisor was told of them are done by the endpoint
// instead: checksums computed, host-GSO packets cut into segments; the
// data still arrive byte for byte, iflib refuses nothing for a disabled
// offload, and the books balance. Turned on again, the device does them.
func TestControlPlaneCapEnable(t *testing.T) {
	p := newPair(t, PairConfig{Offload: true, Config: iflib.Config{TxMode: iflib.TxModeMPRing}})
	blob := Blob(transferSize(256<<10), 3)
	serve(t, p, blob)
	exchange(t, p, blob, time.Minute)
	before := p.A.EP.Stats()
	require.NotZero(t, before.TxTSO+before.TxCsumOffload, "the device did the offloads first")

	off := iflib.CapTxCsum | iflib.CapTxCsumIPv6 | iflib.CapTSO4 | iflib.CapTSO6
	for _, s := range []*Side{p.A, p.B} {
		caps := s.Context().CapEnabled()
		require.NoError(t, s.Context().SetCapEnable(caps&^off))
		require.Zero(t, s.Context().CapEnabled()&off)
	}
	exchange(t, p, blob, time.Minute)
	mid := p.A.EP.Stats()
	assert.Equal(t, before.TxTSO, mid.TxTSO, "no TSO while it is disabled")
	assert.Equal(t, before.TxCsumOffload, mid.TxCsumOffload, "no checksum offload while it is disabled")
	assert.Greater(t, mid.TxCsumSoftware, before.TxCsumSoftware, "the endpoint computed the checksums")
	assert.Greater(t, mid.TxSoftGSO, before.TxSoftGSO, "the endpoint cut the GSO packets")
	assert.Zero(t, mid.TxRefused, "%v", mid)

	for _, s := range []*Side{p.A, p.B} {
		require.NoError(t, s.Context().SetCapEnable(s.Context().Capabilities()))
	}
	exchange(t, p, blob, time.Minute)
	after := p.A.EP.Stats()
	assert.Greater(t, after.TxTSO+after.TxCsumOffload, mid.TxTSO+mid.TxCsumOffload, "the device does them again")
	_, _, err := p.Balanced(time.Minute, 0, 0)
	require.NoError(t, err)
}

// TestControlPlaneMTU: gVisor's SetNICMTU reaches the device through the
// endpoint (Context.SetMTU: IFDI_MTU_SET and a reinit of the running
// interface); connections opened afterwards use the new MTU, the data
// arrive byte for byte at 9000 → 1500 → 9000, no frame is refused as too
// long, and the books balance. An MTU beyond the hardware is refused by
// the driver and the endpoint keeps the device's.
func TestControlPlaneMTU(t *testing.T) {
	p := newPair(t, PairConfig{MTU: 9000, Config: iflib.Config{TxMode: iflib.TxModeMPRing}})
	blob := Blob(transferSize(256<<10), 5)
	serve(t, p, blob)
	exchange(t, p, blob, time.Minute)
	for _, mtu := range []uint32{1500, 9000} {
		for _, s := range []*Side{p.A, p.B} {
			require.Nil(t, s.Stack.SetNICMTU(NICID, mtu))
			ic := s.Context()
			require.Eventually(t, func() bool { return ic.MTU() == int(mtu) }, time.Minute, time.Millisecond, "the device took the MTU")
			require.Equal(t, mtu, s.EP.MTU())
		}
		exchange(t, p, blob, time.Minute)
	}
	require.Nil(t, p.A.Stack.SetNICMTU(NICID, 9001))
	p.A.EP.Wait() // the hand-off to the device has run
	assert.Equal(t, 9000, p.A.Context().MTU(), "the driver refuses a frame beyond Config.MaxFrame")
	assert.Equal(t, uint32(9000), p.A.EP.MTU())
	a, b, err := p.Balanced(time.Minute, 0, 0)
	require.NoError(t, err)
	assert.Zero(t, a.Dev.RxTooLong+b.Dev.RxTooLong, "no frame above the MTU in force")
	assert.Zero(t, a.EP.TxRefused+b.EP.TxRefused)
}
