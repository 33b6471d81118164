package ifliblink_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/examples/netstack/nsrig"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/race"
)

// wire builds frames addressed to one side of a pair, from a station
// that is not on it.
type wire struct {
	dst, src tcpip.LinkAddress
	to, from tcpip.Address
}

func newWire(p *nsrig.Pair) wire {
	return wire{
		dst: p.B.EP.LinkAddress(), src: "\x02\xee\xee\xee\xee\x01",
		to: nsrig.Addr(p.B.Addr), from: nsrig.Addr(netip.MustParseAddr("10.0.0.9")),
	}
}

func (w wire) eth(dst tcpip.LinkAddress, et tcpip.NetworkProtocolNumber, payload []byte) []byte {
	f := make([]byte, header.EthernetMinimumSize+len(payload))
	header.Ethernet(f).Encode(&header.EthernetFields{SrcAddr: w.src, DstAddr: dst, Type: et})
	copy(f[header.EthernetMinimumSize:], payload)
	return f
}

// ip4 is an IPv4 packet with a valid header checksum.
func (w wire) ip4(proto tcpip.TransportProtocolNumber, l4 []byte) []byte {
	b := make([]byte, header.IPv4MinimumSize+len(l4))
	ip := header.IPv4(b)
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(b)), TTL: 64, Protocol: uint8(proto), SrcAddr: w.from, DstAddr: w.to})
	ip.SetChecksum(^ip.CalculateChecksum())
	copy(b[header.IPv4MinimumSize:], l4)
	return b
}

// tcp is a SYN to port with payload n bytes, its checksum wrong when bad.
func (w wire) tcp(port uint16, n int, bad bool) []byte {
	b := make([]byte, header.TCPMinimumSize+n)
	t := header.TCP(b)
	t.Encode(&header.TCPFields{SrcPort: 40000, DstPort: port, SeqNum: 1, DataOffset: header.TCPMinimumSize, Flags: header.TCPFlagSyn, WindowSize: 1000})
	xsum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, w.from, w.to, uint16(len(b)))
	c := ^checksum.Checksum(b, xsum)
	if bad {
		c ^= 0x1234
	}
	t.SetChecksum(c)
	return b
}

func (w wire) udp(port uint16, n int, bad bool) []byte {
	b := make([]byte, header.UDPMinimumSize+n)
	u := header.UDP(b)
	u.Encode(&header.UDPFields{SrcPort: 40000, DstPort: port, Length: uint16(len(b))})
	xsum := header.PseudoHeaderChecksum(header.UDPProtocolNumber, w.from, w.to, uint16(len(b)))
	c := ^checksum.Checksum(b, xsum)
	if bad {
		c ^= 0x1234
	}
	u.SetChecksum(c)
	return b
}

// badFrame is one kind of bad input and where it must be counted.
type badFrame struct {
	name  string
	frame []byte
	// count reads the counter that must count this kind, on the side the
	// frames are sent to.
	count func(s *nsrig.Side) uint64
}

func badFrames(p *nsrig.Pair) []badFrame {
	w := newWire(p)
	mtu := int(p.B.EP.MTU())
	truncIP := w.ip4(header.TCPProtocolNumber, w.tcp(7, 0, false))[:12]
	badIPSum := w.ip4(header.UDPProtocolNumber, w.udp(9, 10, false))
	badIPSum[10] ^= 0xff
	tooBigIP := w.ip4(header.UDPProtocolNumber, w.udp(9, mtu-header.IPv4MinimumSize-header.UDPMinimumSize+2, false))
	gv := func(f func(*tcpip.Stats) *tcpip.StatCounter) func(*nsrig.Side) uint64 {
		return func(s *nsrig.Side) uint64 { st := s.Stack.Stats(); return f(&st).Value() }
	}
	return []badFrame{
		{"runt", w.eth(w.dst, header.IPv4ProtocolNumber, nil)[:10], func(s *nsrig.Side) uint64 { return s.EP.Stats().RxRunt }},
		{"truncated-ip", w.eth(w.dst, header.IPv4ProtocolNumber, truncIP), gv(func(s *tcpip.Stats) *tcpip.StatCounter { return s.IP.MalformedPacketsReceived })},
		{"bad-ip-checksum", w.eth(w.dst, header.IPv4ProtocolNumber, badIPSum), gv(func(s *tcpip.Stats) *tcpip.StatCounter { return s.IP.MalformedPacketsReceived })},
		{"bad-tcp-checksum", w.eth(w.dst, header.IPv4ProtocolNumber, w.ip4(header.TCPProtocolNumber, w.tcp(nsrig.PortEcho, 20, true))),
			gv(func(s *tcpip.Stats) *tcpip.StatCounter { return s.TCP.ChecksumErrors })},
		{"bad-udp-checksum", w.eth(w.dst, header.IPv4ProtocolNumber, w.ip4(header.UDPProtocolNumber, w.udp(9, 20, true))),
			gv(func(s *tcpip.Stats) *tcpip.StatCounter { return s.UDP.ChecksumErrors })},
		// simnic's max frame counts the FCS (MTU + 18): 2 bytes over the MTU
		// is over the max frame too, refused at the wire.
		{"over-mtu", w.eth(w.dst, header.IPv4ProtocolNumber, tooBigIP), func(s *nsrig.Side) uint64 { return s.NIC.Stats().RxTooLong }},
		{"over-maxframe", w.eth(w.dst, header.IPv4ProtocolNumber, make([]byte, mtu+64)), func(s *nsrig.Side) uint64 { return s.NIC.Stats().RxTooLong }},
		{"non-ip", w.eth(w.dst, 0x88b5, make([]byte, 46)), nsrig.UnknownL3Side},
		{"vlan", w.eth(w.dst, 0x8100, make([]byte, 46)), nsrig.UnknownL3Side},
		{"other-host", w.eth("\x02\x99\x99\x99\x99\x99", header.IPv4ProtocolNumber, w.ip4(header.UDPProtocolNumber, w.udp(9, 10, false))),
			func(s *nsrig.Side) uint64 { return s.NIC.Stats().RxFilteredAddr }}, // simnic's unicast filter
		{"truncated-arp", w.eth(header.EthernetBroadcastAddress, header.ARPProtocolNumber, make([]byte, 10)),
			gv(func(s *tcpip.Stats) *tcpip.StatCounter { return s.ARP.MalformedPacketsReceived })},
	}
}

// TestBadInput: each kind of bad frame on the wire is dropped and counted
// where it belongs (the device, the endpoint, or gVisor's stats), and the
// stacks still exchange data afterwards.
func TestBadInput(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("offload=%v", off), func(t *testing.T) {
			p := newPair(t, nsrig.PairConfig{Offload: off})
			sv := nsrig.NewServer()
			require.NoError(t, sv.Echo(p.B.Stack, p.B.Addr))
			t.Cleanup(sv.Close)
			var injected uint64
			for _, bf := range badFrames(p) {
				switch bf.name {
				case "bad-ip-checksum", "bad-tcp-checksum", "bad-udp-checksum":
					if off {
						// The device checks these and flags them: the endpoint drops them.
						bf.count = func(s *nsrig.Side) uint64 { return s.EP.Stats().RxBadCsum }
					}
				case "vlan":
					if off {
						// The device strips the tag: the endpoint has no VLANs.
						bf.count = func(s *nsrig.Side) uint64 { return s.EP.Stats().RxVLAN }
					}
				}
				before := bf.count(p.B)
				const n = 5
				for range n {
					require.True(t, p.B.NIC.Receive(bf.frame) || bf.name == "over-maxframe" || bf.name == "over-mtu" || bf.name == "other-host", bf.name)
					injected++
				}
				require.Eventually(t, func() bool { return bf.count(p.B)-before == n }, 5*time.Second, time.Millisecond,
					"%s: counted %d of %d", bf.name, bf.count(p.B)-before, n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			require.NoError(t, nsrig.Echo(ctx, p.A.Stack, p.B.Addr, nsrig.Blob(64<<10, 5)))
			_, _, err := p.Balanced(5*time.Second, 0, injected)
			require.NoError(t, err)
		})
	}
}

// TestFlood: a flood of every kind of bad frame at full speed into one
// side while the other sends it data: the data arrive byte for byte,
// every flood frame is counted once where its kind belongs, and the
// books balance.
func TestFlood(t *testing.T) {
	p := newPair(t, nsrig.PairConfig{Config: iflib.Config{TxMode: iflib.TxModeMPRing}})
	sv := nsrig.NewServer()
	require.NoError(t, sv.Echo(p.B.Stack, p.B.Addr))
	t.Cleanup(sv.Close)
	// Resolve each other's addresses first: a flood that fills B's FIFO
	// may drop ARP, and gVisor gives up resolving after three tries.
	warm, cancelWarm := context.WithTimeout(context.Background(), time.Minute)
	defer cancelWarm()
	require.NoError(t, nsrig.Echo(warm, p.A.Stack, p.B.Addr, []byte("warm")))
	bad := badFrames(p)
	per := uint64(2000)
	if race.Enabled {
		per = 300
	}
	before := make([]uint64, len(bad))
	for i, bf := range bad {
		before[i] = bf.count(p.B)
	}
	// Each frame is offered to B's wire once, as fast as B takes them: a
	// frame the FIFO refuses is counted (by the device, RxMissed, and
	// here) and the flood waits for room before the next.
	total := per * uint64(len(bad))
	refused := make([]uint64, len(bad))
	done := make(chan struct{})
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		for i := range total {
			k := i % uint64(len(bad))
			if f := bad[k].frame; !p.B.NIC.Receive(f) {
				refused[k]++
				p.B.NIC.WaitRoom(f, done)
			}
		}
	}()
	defer close(done)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	blob := nsrig.Blob(1<<20, 6)
	require.NoError(t, nsrig.Echo(ctx, p.A.Stack, p.B.Addr, blob))
	<-flooded
	_, _, err := p.Balanced(10*time.Second, 0, total)
	require.NoError(t, err)
	for i, bf := range bad {
		got := bf.count(p.B) - before[i]
		want := per - refused[i]
		switch bf.name {
		case "over-maxframe", "over-mtu":
			want = 2 * per // refused at the wire, and counted there (one counter for both)
		case "other-host":
			want = per // refused at the wire by the address filter, and counted there
		case "truncated-ip", "bad-ip-checksum":
			want = 2*per - refused[1] - refused[2] // one counter for both
		case "non-ip", "vlan":
			want = 2*per - refused[7] - refused[8]
		}
		assert.Equal(t, want, got, "%s", bf.name)
	}
	t.Logf("flood: %d frames, refused %v; B endpoint %v", total, refused, p.B.EP.Stats())
}

// TestStopStartAndReattach: a stopped context reports the link down and
// drops what the stack sends (counted), and Init brings it back; a
// detached context likewise, and binding the endpoint to the NIC's next
// context (attached again, initialised) brings it back. A TCP connection
// opened before all this finishes its transfer byte for byte.
func TestStopStartAndReattach(t *testing.T) {
	p := newPair(t, nsrig.PairConfig{})
	sv := nsrig.NewServer()
	require.NoError(t, sv.Sink(p.B.Stack, p.B.Addr))
	t.Cleanup(sv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st := &nsrig.Stacks{A: p.A.Stack, B: p.B.Stack, AddrB: p.B.Addr}
	s, err := st.NewStream(ctx, nsrig.Blob(64<<10, 8))
	require.NoError(t, err)
	send := func(n int) {
		for range n {
			require.NoError(t, s.Send())
		}
	}
	send(4)
	require.True(t, p.B.EP.LinkUp())

	// Stop: link down, the stack's packets refused; Init: back.
	require.NoError(t, p.B.Context().Stop())
	assert.False(t, p.B.EP.LinkUp())
	u, err := gonet.DialUDP(p.B.Stack, nil, &tcpip.FullAddress{NIC: nsrig.NICID, Addr: nsrig.Addr(p.A.Addr), Port: 9}, ipv4.ProtocolNumber)
	require.NoError(t, err)
	defer u.Close()
	// (B's TCP may also send while stopped: a delayed ACK, a window update.)
	downs := p.B.EP.Stats().TxLinkDown
	_, _ = u.Write([]byte("while stopped"))
	assert.Greater(t, p.B.EP.Stats().TxLinkDown, downs, "B's datagram was refused and counted")
	require.NoError(t, p.B.Context().Init())
	require.Eventually(t, p.B.EP.LinkUp, 5*time.Second, time.Millisecond)
	send(2)

	// The wire down: the driver reports it, the endpoint follows.
	p.B.NIC.SetLink(false)
	require.Eventually(t, func() bool { return !p.B.EP.LinkUp() }, 5*time.Second, time.Millisecond)
	p.B.NIC.SetLink(true)
	require.Eventually(t, p.B.EP.LinkUp, 5*time.Second, time.Millisecond)
	send(2)

	// Detach, then attach the NIC again and bind the endpoint to the new
	// context: the same endpoint (the same gVisor NIC, its connections)
	// goes on.
	env := p.Env()
	require.NoError(t, p.B.Context().Detach())
	assert.False(t, p.B.EP.LinkUp(), "a detached context")
	downs = p.B.EP.Stats().TxLinkDown
	_, _ = u.Write([]byte("while detached"))
	assert.Greater(t, p.B.EP.Stats().TxLinkDown, downs, "B's datagram was refused and counted")
	send(2)
	d, err := env.Attach(p.B.NIC, iflib.Attachment{Input: p.B.EP.Input, Config: iflib.Config{Unit: 1}})
	require.NoError(t, err)
	require.NoError(t, p.B.EP.Bind(d.Context()))
	require.NoError(t, d.Context().Init())
	p.B.Driver = d
	require.Eventually(t, p.B.EP.LinkUp, 5*time.Second, time.Millisecond)
	send(4)
	require.NoError(t, s.Finish(), "the connection survived stop, link loss and re-attach")
	t.Logf("A: %v\nB: %v", p.A.EP.Stats(), p.B.EP.Stats())
}

// TestDialAcrossLinkFlap: a connection dialled while A's link is down
// (its first ARP probe written to a link without carrier) waits for the
// link instead of failing at once with "no route to host": the endpoint
// drops the frames as a NIC without carrier does, reports them written,
// and gVisor's ARP probes again.
func TestDialAcrossLinkFlap(t *testing.T) {
	p := newPair(t, nsrig.PairConfig{})
	sv := nsrig.NewServer()
	require.NoError(t, sv.Echo(p.B.Stack, p.B.Addr))
	t.Cleanup(sv.Close)
	p.A.NIC.SetLink(false)
	require.Eventually(t, func() bool { return !p.A.EP.LinkUp() }, 5*time.Second, time.Millisecond)
	downs := p.A.EP.Stats().TxLinkDown
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done <- nsrig.Echo(ctx, p.A.Stack, p.B.Addr, []byte("across the flap"))
	}()
	require.Eventually(t, func() bool { return p.A.EP.Stats().TxLinkDown > downs }, 10*time.Second, time.Millisecond,
		"the first probe met the down link")
	p.A.NIC.SetLink(true)
	require.NoError(t, <-done)
}

// TestNICRemoved: after the stack removes the NIC (Attach(nil), Close),
// frames still arriving are freed and counted, and iflib gets every
// packet back.
func TestNICRemoved(t *testing.T) {
	p := newPair(t, nsrig.PairConfig{})
	w := newWire(p)
	require.Nil(t, p.B.Stack.RemoveNIC(nsrig.NICID))
	assert.False(t, p.B.EP.IsAttached())
	f := w.eth(w.dst, header.IPv4ProtocolNumber, w.ip4(header.UDPProtocolNumber, w.udp(9, 10, false)))
	for range 10 {
		require.True(t, p.B.NIC.Receive(f))
	}
	require.Eventually(t, func() bool { return p.B.EP.Stats().RxNoDispatcher == 10 }, 5*time.Second, time.Millisecond)
	var l stack.PacketBufferList
	_, err := p.B.EP.WritePackets(l)
	assert.IsType(t, &tcpip.ErrClosedForSend{}, err)
}
