package afxdp

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/iflib"
)

// TestEthtool: the driver's ethtool queries see what the kernel says of a
// veth: the RX queues in use (not netlink's allocated maximum) and its
// speed, 10000 Mb/s.
func TestEthtool(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{Queues: 3})
	p := rig.Pairs[0]
	require.NoError(t, rig.Do(func() error {
		n, ok, err := rxQueuesInUse(p.A)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, 3, n)
		assert.Equal(t, uint64(10000), linkSpeed(p.A))
		_, _, err = rxQueuesInUse("nosuch0")
		assert.Error(t, err)
		assert.Zero(t, linkSpeed("nosuch0"))
		return nil
	}))
}

// logSink collects Config.Logf's notices.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logSink) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// linkEvents records what SubscribeLink delivers.
type linkEvents struct {
	mu  sync.Mutex
	evs []iflib.LinkEvent
}

func (e *linkEvents) add(ev iflib.LinkEvent) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

// last is the latest event, ok false before any.
func (e *linkEvents) last() (iflib.LinkEvent, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.evs) == 0 {
		return iflib.LinkEvent{}, false
	}
	return e.evs[len(e.evs)-1], true
}

func (e *linkEvents) waitFor(t *testing.T, want iflib.LinkEvent) {
	t.Helper()
	require.Eventually(t, func() bool { ev, ok := e.last(); return ok && ev == want }, 5*time.Second, time.Millisecond,
		"link event %+v never came", want)
}

// kernelLink reads an interface of the rig as the kernel has it.
func kernelLink(t *testing.T, rig *Rig, name string) *netlink.LinkAttrs {
	t.Helper()
	l, err := rig.Netlink().LinkByName(name)
	require.NoError(t, err)
	return l.Attrs()
}

// TestControl: the control calls reach the real interface through the
// driver and the kernel agrees (read back through netlink): the MAC
// address (read at attach, set), the MTU (and with it multi-buffer
// binding, so a 9014-byte frame arrives), promiscuous and all-multicast
// mode (and Detach gives back the flags Attach found); link down and up
// at the peer arrive as link events with the speed.
func TestControl(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	u := newUMEM(t, 2048)
	sk := newSink()
	var evs linkEvents
	d, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), UMEM: u, NRxd: 128, NTxd: 128},
		iflib.Attachment{Input: sk.input, Config: iflib.Config{RxZoneSize: 512}})
	require.NoError(t, err)
	ic := d.Context()
	defer ic.SubscribeLink(evs.add)()
	require.NoError(t, ic.Init())
	evs.waitFor(t, iflib.LinkEvent{State: iflib.LinkStateUp, Baudrate: 10_000_000_000})
	ms, err := ic.MediaStatus()
	require.NoError(t, err)
	assert.Equal(t, iflib.MediaStatus{Valid: true, Active: true, Current: iflib.Media10GT | iflib.MediaFDX}, ms)

	// MAC: read at attach (iflib_set_mac), set through the context.
	assert.Equal(t, p.AMAC.String(), ic.MAC().String())
	mac := iflib.EtherAddr{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30}
	require.NoError(t, ic.SetMAC(mac))
	assert.Equal(t, mac.String(), kernelLink(t, rig, p.A).HardwareAddr.String())
	assert.Equal(t, mac.String(), d.HardwareAddr().String())

	// MTU: up to 9000 (the sockets rebind for multi-buffer), a jumbo frame
	// from the peer arrives whole, and back to 1500.
	require.NoError(t, ic.SetMTU(9000))
	assert.Equal(t, 9000, kernelLink(t, rig, p.A).MTU)
	assert.Equal(t, 9018, ic.Softc().MaxFrameSize)
	if d.MultiBuffer() {
		assert.True(t, d.q[0].s.sg, "not bound with XDP_USE_SG at MTU 9000")
		require.NoError(t, rig.Netlink().LinkSetMTU(mustLink(t, rig, p.B), 9000), "a native program without frags support would cap the peer's MTU")
		raw, err := rig.OpenRaw(p.B)
		require.NoError(t, err)
		defer raw.Close()
		want := TestFrame(make([]byte, 9014), 9014, mac[:], p.BMAC, 1)
		sendRetry(t, raw, want)
		require.Eventually(t, func() bool { return sk.count() == 1 }, 5*time.Second, time.Millisecond)
		sk.mu.Lock()
		assert.Equal(t, want, sk.frames[0])
		sk.mu.Unlock()
		require.NoError(t, rig.Netlink().LinkSetMTU(mustLink(t, rig, p.B), 1500))
	}
	require.NoError(t, ic.SetMTU(1500))
	assert.Equal(t, 1500, kernelLink(t, rig, p.A).MTU)
	assert.False(t, d.q[0].s.sg)
	var ce *iflib.ConfigError
	assert.ErrorAs(t, ic.SetMTU(20), &ce)
	assert.Equal(t, 1500, kernelLink(t, rig, p.A).MTU)

	// Promiscuous and all-multicast mode.
	flags := func() uint32 { return kernelLink(t, rig, p.A).RawFlags & (unix.IFF_PROMISC | unix.IFF_ALLMULTI) }
	require.NoError(t, ic.SetFlags(iflib.IffPromisc))
	assert.Equal(t, uint32(unix.IFF_PROMISC), flags())
	require.NoError(t, ic.SetFlags(iflib.IffAllMulti))
	assert.Equal(t, uint32(unix.IFF_ALLMULTI), flags())
	require.NoError(t, ic.SetFlags(iflib.IffPromisc|iflib.IffAllMulti))
	assert.Equal(t, uint32(unix.IFF_PROMISC|unix.IFF_ALLMULTI), flags())
	require.NoError(t, ic.Stop())
	require.NoError(t, ic.Init(), "Init programs the flags again")
	assert.Equal(t, uint32(unix.IFF_PROMISC|unix.IFF_ALLMULTI), flags())

	// Link state at the peer, as events with the speed.
	evs.waitFor(t, iflib.LinkEvent{State: iflib.LinkStateUp, Baudrate: 10_000_000_000})
	require.NoError(t, rig.SetLink(p.B, false))
	evs.waitFor(t, iflib.LinkEvent{State: iflib.LinkStateDown})
	require.NoError(t, rig.SetLink(p.B, true))
	evs.waitFor(t, iflib.LinkEvent{State: iflib.LinkStateUp, Baudrate: 10_000_000_000})

	require.NoError(t, ic.Detach())
	assert.Zero(t, flags(), "Detach gives back the flags Attach found")
}

// TestControlKeepsOwnerFlags: a flag the interface had before Attach is
// not the driver's to clear: it stays on through SetFlags(0) and Detach.
func TestControlKeepsOwnerFlags(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	require.NoError(t, rig.Netlink().SetPromiscOn(mustLink(t, rig, p.A)))
	_, ic := startDriver(t, rig, Config{Interface: p.A, NRxd: 64, NTxd: 64}, iflib.Attachment{Config: iflib.Config{RxZoneSize: 256}})
	require.NoError(t, ic.SetFlags(iflib.IffAllMulti))
	require.NoError(t, ic.SetFlags(0))
	assert.Equal(t, uint32(unix.IFF_PROMISC), kernelLink(t, rig, p.A).RawFlags&(unix.IFF_PROMISC|unix.IFF_ALLMULTI))
	require.NoError(t, ic.Detach())
	assert.Equal(t, uint32(unix.IFF_PROMISC), kernelLink(t, rig, p.A).RawFlags&(unix.IFF_PROMISC|unix.IFF_ALLMULTI))
}

// TestMTUBehindTheDriver (review P3): an MTU set on the interface behind
// the driver's back (`ip link set … mtu`) is noticed by the link
// monitor: one the driver can receive is followed (iflib's MTU, and the
// sockets rebound for multi-buffer), one it cannot takes the link down
// with a notice, until the MTU is set back.
func TestMTUBehindTheDriver(t *testing.T) {
	needAFXDP(t)
	for _, mode := range []XDPMode{XDPGeneric, XDPNative} {
		t.Run(mode.String(), func(t *testing.T) {
			rig := newRig(t, RigConfig{})
			p := rig.Pairs[0]
			var logs logSink
			var evs linkEvents
			d, ic := startDriver(t, rig, Config{Interface: p.A, XDPMode: mode, NRxd: 64, NTxd: 64, Logf: logs.logf},
				iflib.Attachment{Config: iflib.Config{RxZoneSize: 256}})
			defer ic.SubscribeLink(evs.add)()
			if !d.MultiBuffer() {
				t.Skip("this kernel has no XDP multi-buffer (BPF_F_XDP_HAS_FRAGS)")
			}
			setMTU := func(mtu int) { require.NoError(t, rig.Netlink().LinkSetMTU(mustLink(t, rig, p.A), mtu)) }

			setMTU(9000)
			require.Eventually(t, func() bool { return ic.MTU() == 9000 && ic.LinkState() == iflib.LinkStateUp }, 5*time.Second, time.Millisecond)
			assert.True(t, logs.has("MTU changed outside the driver from 1500 to 9000; following it"))
			require.Eventually(t, func() bool {
				d.mu.Lock()
				defer d.mu.Unlock()
				return d.q[0].s != nil && d.q[0].s.sg
			}, 5*time.Second, time.Millisecond)

			tooBig := d.MaxMTU() + 1
			setMTU(tooBig)
			require.Eventually(t, func() bool {
				return logs.has(fmt.Sprintf("from 9000 to %d, which it cannot receive; link reported down", tooBig))
			}, 5*time.Second, time.Millisecond)
			evs.waitFor(t, iflib.LinkEvent{State: iflib.LinkStateDown})
			assert.Equal(t, iflib.LinkStateDown, ic.LinkState())
			assert.Equal(t, 9000, ic.MTU())

			setMTU(1500)
			require.Eventually(t, func() bool { return ic.MTU() == 1500 && ic.LinkState() == iflib.LinkStateUp }, 5*time.Second, time.Millisecond)
			require.NoError(t, ic.Detach())
		})
	}
}

// devMcast is the global multicast entries of an interface of the rig
// (/proc/net/dev_mcast, "index name users global address"), as
// "01005e000001"-style hex.
func devMcast(t *testing.T, rig *Rig, name string) []string {
	t.Helper()
	var b []byte
	require.NoError(t, rig.Do(func() error {
		var err error
		b, err = os.ReadFile("/proc/thread-self/net/dev_mcast")
		return err
	}))
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[1] == name && f[3] == "1" {
			out = append(out, f[4])
		}
	}
	slices.Sort(out)
	return out
}

// TestMulticast: the context's multicast list reaches the interface
// (IFDI_MULTI_SET → SIOCADDMULTI/SIOCDELMULTI) and the kernel shows it;
// an Init programs the list again; Detach removes what the driver added
// and leaves an entry the interface had before.
func TestMulticast(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	owner := [6]byte{0x01, 0x00, 0x5e, 0x7f, 0x00, 0x09}
	require.NoError(t, rig.Do(func() error { return multicastIoctl(p.A, owner, true) }))
	_, ic := startDriver(t, rig, Config{Interface: p.A, NRxd: 64, NTxd: 64}, iflib.Attachment{Config: iflib.Config{RxZoneSize: 256}})
	g1 := iflib.EtherAddr{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}
	g2 := iflib.EtherAddr{0x33, 0x33, 0x00, 0x00, 0x00, 0x01}
	require.NoError(t, ic.AddMulti(g1))
	require.NoError(t, ic.AddMulti(g2))
	require.NoError(t, ic.AddMulti(owner)) // the interface's own: never the driver's to remove
	assert.Equal(t, []string{"01005e0000fb", "01005e7f0009", "333300000001"}, devMcast(t, rig, p.A))
	require.NoError(t, ic.DelMulti(g1))
	assert.Equal(t, []string{"01005e7f0009", "333300000001"}, devMcast(t, rig, p.A))
	require.NoError(t, ic.Stop())
	require.NoError(t, ic.AddMulti(g1)) // kept for the next Init
	require.NoError(t, ic.Init())
	assert.Equal(t, []string{"01005e0000fb", "01005e7f0009", "333300000001"}, devMcast(t, rig, p.A))
	require.NoError(t, ic.Detach())
	assert.Equal(t, []string{"01005e7f0009"}, devMcast(t, rig, p.A), "Detach removes only the driver's entries")
}

// TestMACBehindTheDriver: a MAC address set on the interface behind the
// driver's back (`ip link set … address`) is followed: the context's MAC
// (what a stack above sends with) becomes the interface's.
func TestMACBehindTheDriver(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	var logs logSink
	d, ic := startDriver(t, rig, Config{Interface: p.A, NRxd: 64, NTxd: 64, Logf: logs.logf}, iflib.Attachment{Config: iflib.Config{RxZoneSize: 256}})
	mac := net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}
	require.NoError(t, rig.Netlink().LinkSetHardwareAddr(mustLink(t, rig, p.A), mac))
	require.Eventually(t, func() bool { return ic.MAC().String() == mac.String() }, 5*time.Second, time.Millisecond)
	assert.Equal(t, mac.String(), d.HardwareAddr().String())
	assert.True(t, logs.has("MAC address changed outside the driver from "+p.AMAC.String()+" to "+mac.String()))
	require.Eventually(t, func() bool { return ic.LinkState() == iflib.LinkStateUp }, 5*time.Second, time.Millisecond)
	require.NoError(t, ic.Detach())
}
