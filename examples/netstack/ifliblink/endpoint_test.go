package ifliblink_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/examples/netstack/ifliblink"
	"github.com/goiflib/goiflib/examples/netstack/nsrig"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/race"
)

// newPair builds two stacks on two simnics on a test Env (busdma checker
// on; leaks and goroutines checked at cleanup).
func newPair(t *testing.T, cfg nsrig.PairConfig) *nsrig.Pair {
	t.Helper()
	cfg.Env = simnictest.NewEnv(t, simnictest.EnvOptions{Sim: nsrig.SimConfig(cfg)})
	p, err := nsrig.NewPair(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

// attach builds one simnic context with an endpoint on it, not bound.
func attach(t *testing.T, env *simnictest.Env, nc simnic.Config, lo ifliblink.Options) (*ifliblink.Endpoint, *iflib.Context) {
	t.Helper()
	nic, err := env.NewNIC(nc)
	require.NoError(t, err)
	if lo.TxZone == nil {
		lo.TxZone, err = env.NewZone("tx", iflib.MCLBytes, 64)
		require.NoError(t, err)
	}
	ep, err := ifliblink.New(lo)
	require.NoError(t, err)
	d, err := env.Attach(nic, iflib.Attachment{Input: ep.Input})
	require.NoError(t, err)
	return ep, d.Context()
}

func TestNewErrors(t *testing.T) {
	env := simnictest.NewEnv(t, simnictest.EnvOptions{})
	_, err := ifliblink.New(ifliblink.Options{})
	assert.ErrorIs(t, err, ifliblink.ErrNoZone)
	small, err := env.NewZone("small", 128, 4)
	require.NoError(t, err)
	_, err = ifliblink.New(ifliblink.Options{TxZone: small})
	assert.ErrorIs(t, err, ifliblink.ErrSmallClusters)
	z, err := env.NewZone("z", iflib.MCLBytes, 4)
	require.NoError(t, err)
	for _, mac := range []tcpip.LinkAddress{"\x01\x00\x5e\x00\x00\x01", "\x00\x00\x00\x00\x00\x00", "\x02\x00"} {
		_, err = ifliblink.New(ifliblink.Options{TxZone: z, MAC: mac})
		assert.ErrorIs(t, err, ifliblink.ErrBadMAC, "%x", mac)
	}
	ep, err := ifliblink.New(ifliblink.Options{TxZone: z})
	require.NoError(t, err)
	assert.ErrorIs(t, ep.Bind(nil), ifliblink.ErrNilContext)
	assert.False(t, ep.LinkUp(), "unbound")
}

// TestBindIdentity: Bind takes the MTU (MaxFrameSize − 18), the offloads
// and the address from the context, and a later Bind keeps what the stack
// was told.
func TestBindIdentity(t *testing.T) {
	env := simnictest.NewEnv(t, simnictest.EnvOptions{})
	mac := tcpip.LinkAddress("\x02\x11\x22\x33\x44\x55")

	plain, ic := attach(t, env, simnic.Config{Unit: 0, MaxFrame: 1518}, ifliblink.Options{})
	require.NoError(t, plain.Bind(ic))
	assert.Equal(t, uint32(1500), plain.MTU())
	assert.Equal(t, stack.CapabilityResolutionRequired, plain.Capabilities())
	assert.Equal(t, stack.GVisorGSOSupported, plain.SupportedGSO(), "no TSO: gVisor's own GSO, segments in bursts")
	assert.Equal(t, header.ARPHardwareEther, plain.ARPHardwareType())
	assert.Equal(t, uint16(header.EthernetMinimumSize), plain.MaxHeaderLength())
	a := plain.LinkAddress()
	require.Len(t, a, 6)
	assert.Equal(t, byte(2), a[0]&3, "a random locally administered unicast address")

	off, ic2 := attach(t, env, simnic.Config{Unit: 1, Offload: true}, ifliblink.Options{MAC: mac, MTU: 4000})
	require.NoError(t, off.Bind(ic2))
	assert.Equal(t, uint32(4000), off.MTU(), "Options.MTU below the device's 9000")
	assert.Equal(t, mac, off.LinkAddress())
	assert.Equal(t, stack.CapabilityResolutionRequired|stack.CapabilityTXChecksumOffload, off.Capabilities())
	assert.Equal(t, stack.HostGSOSupported, off.SupportedGSO(), "TSO")
	assert.Equal(t, uint32(1<<16-1), off.GSOMaxSize())
	off.SetMTU(100000)
	assert.Equal(t, uint32(9000), off.MTU(), "SetMTU is clamped to the device's frames")
	off.SetMTU(4000)

	// A later Bind must offer what the stack was told.
	assert.ErrorIs(t, off.Bind(ic), ifliblink.ErrOffloads, "no checksum offload, no TSO")
	assert.NoError(t, plain.Bind(ic2), "more offloads than advertised is fine")
	_, small := attach(t, env, simnic.Config{Unit: 2, Offload: true, MaxFrame: 1518}, ifliblink.Options{})
	assert.ErrorIs(t, off.Bind(small), ifliblink.ErrMTU)

	noOff, ic3 := attach(t, env, simnic.Config{Unit: 3, Offload: true}, ifliblink.Options{NoOffload: true})
	require.NoError(t, noOff.Bind(ic3))
	assert.Equal(t, stack.CapabilityResolutionRequired, noOff.Capabilities())
	assert.Equal(t, stack.GSONotSupported, noOff.SupportedGSO())

	noTSO, ic4 := attach(t, env, simnic.Config{Unit: 4, Offload: true}, ifliblink.Options{NoTSO: true, NoGSO: true})
	require.NoError(t, noTSO.Bind(ic4))
	assert.Equal(t, stack.CapabilityResolutionRequired|stack.CapabilityTXChecksumOffload, noTSO.Capabilities())
	assert.Equal(t, stack.GSONotSupported, noTSO.SupportedGSO())
	assert.Zero(t, noTSO.GSOMaxSize())

	// simnic reports its address (iflib_set_mac from AttachPre): the
	// context's address wins over HardwareAddr.
	hw, ic5 := attach(t, env, simnic.Config{Unit: 5, MAC: [6]byte([]byte(mac))}, ifliblink.Options{HardwareAddr: func() []byte { return []byte{2, 9, 9, 9, 9, 9} }})
	require.NoError(t, hw.Bind(ic5))
	assert.Equal(t, mac, hw.LinkAddress(), "the driver's address")
}

// TestWriteWhileDown: every packet WritePackets is given while the
// endpoint cannot send is counted, and nothing is handed to iflib.
func TestWriteWhileDown(t *testing.T) {
	env := simnictest.NewEnv(t, simnictest.EnvOptions{})
	ep, ic := attach(t, env, simnic.Config{}, ifliblink.Options{})
	write := func() tcpip.Error {
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 14, Payload: buffer.MakeWithData(make([]byte, 100))})
		defer pkt.DecRef()
		pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
		ep.AddHeader(pkt)
		var l stack.PacketBufferList
		l.PushBack(pkt)
		_, err := ep.WritePackets(l)
		return err
	}
	assert.IsType(t, &tcpip.ErrClosedForSend{}, write(), "unbound")
	require.NoError(t, ep.Bind(ic))
	// Not running, or link down: a state that passes; the frame is
	// dropped as on a link without carrier and reported written, so that
	// gVisor's ARP and TCP retry instead of failing the connection.
	assert.Nil(t, write(), "bound, not initialised")
	require.NoError(t, ic.Init())
	require.Eventually(t, ep.LinkUp, 5*time.Second, time.Millisecond)
	assert.Nil(t, write())
	require.NoError(t, ic.Stop())
	assert.False(t, ep.LinkUp(), "a stopped context")
	assert.Nil(t, write(), "stopped")
	st := ep.Stats()
	assert.Equal(t, uint64(3), st.TxLinkDown)
	assert.Equal(t, uint64(1), st.TxPackets)
	ep.Close()
	require.NoError(t, ic.Init())
	assert.False(t, ep.LinkUp(), "closed by the stack")
	assert.IsType(t, &tcpip.ErrClosedForSend{}, write())
	assert.Equal(t, uint64(4), ep.Stats().TxLinkDown)
}

// TestTxAllocs: the TX path allocates nothing per packet once warm.
func TestTxAllocs(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector drops sync.Pool entries")
	}
	env := simnictest.NewEnv(t, simnictest.EnvOptions{NoChecker: true})
	zone, err := env.NewZone("tx", iflib.MCLBytes, 4096)
	require.NoError(t, err)
	ep, ic := attach(t, env, simnic.Config{}, ifliblink.Options{TxZone: zone})
	require.NoError(t, ep.Bind(ic))
	require.NoError(t, ic.Init())
	require.Eventually(t, ep.LinkUp, 5*time.Second, time.Millisecond)
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 14 + 20, Payload: buffer.MakeWithData(make([]byte, 1400))})
	defer pkt.DecRef()
	pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
	pkt.NetworkHeader().Push(20)
	ep.AddHeader(pkt)
	var l stack.PacketBufferList
	l.PushBack(pkt)
	allocs := testing.AllocsPerRun(2000, func() {
		_, err := ep.WritePackets(l)
		require.Nil(t, err, "WritePackets: %v", err)
	})
	assert.Zero(t, allocs)
}
