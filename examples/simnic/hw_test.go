package simnic_test

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the device's control registers (filter.go, rss.go, phy.go),
// first on the bare device, then through iflib.

// ether builds an Ethernet frame of n bytes (no FCS) to dst with
// EtherType etype, tagged with vid when tagged.
func ether(dst [6]byte, etype uint16, n int, tagged bool, vid uint16) []byte {
	f := make([]byte, n)
	copy(f[0:6], dst[:])
	copy(f[6:12], []byte{2, 0, 0, 0, 0, 1})
	off := 12
	if tagged {
		binary.BigEndian.PutUint16(f[12:14], 0x8100)
		binary.BigEndian.PutUint16(f[14:16], vid)
		off = 16
	}
	binary.BigEndian.PutUint16(f[off:off+2], etype)
	for i := off + 2; i < n; i++ {
		f[i] = byte(i)
	}
	return f
}

func bareNIC(t *testing.T, cfg simnic.Config) *simnic.NIC {
	t.Helper()
	env := simnictest.NewEnv(t, simnictest.EnvOptions{})
	n, err := env.NewNIC(cfg)
	require.NoError(t, err)
	return n
}

// e1000_hash_mc_addr with mc_filter_type 0 on the 8254x's 4096-bit MTA:
// bits 47:36 of the address.
func TestMTAHash(t *testing.T) {
	for _, c := range []struct {
		addr [6]byte
		hash uint16
	}{
		{[6]byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}, 0x010}, // 224.0.0.1
		{[6]byte{0x01, 0x00, 0x5e, 0x7f, 0xff, 0xfa}, 0xfaf}, // 239.255.255.250 (SSDP)
		{[6]byte{0x33, 0x33, 0x00, 0x00, 0x00, 0x01}, 0x010}, // ff02::1: collides with 224.0.0.1
		{[6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0xfff},
		{[6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}, 0x0e0},
		{[6]byte{0, 0, 0, 0, 0x12, 0x34}, 0x341},
	} {
		assert.Equalf(t, c.hash, simnic.MTAHash(c.addr), "%x", c.addr)
	}
	tbl := simnic.MTATable([][6]byte{{0x01, 0x00, 0x5e, 0x7f, 0xff, 0xfa}})
	assert.Equal(t, uint32(1)<<(0xfaf&31), tbl[0xfaf>>5])
}

// The receive filter drops exactly what an 8254x drops: unicast to
// another station unless UPE, a group address whose hash is not in the
// MTA unless MPE (or a RAR holds it), broadcast without BAM, an 802.1Q
// frame whose VID is not in the VFTA with VFE; each counted
// (RxFilteredAddr, RxFilteredVLAN), and nothing else.
func TestRxFilterDropsWhatHardwareDrops(t *testing.T) {
	n := bareNIC(t, simnic.Config{NTxd: 64, NRxd: 64, FIFO: 256})
	mac := simnic.DefaultMAC
	other := [6]byte{0x02, 0, 0, 0, 0, 0x99}
	inMTA := [6]byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}
	collides := [6]byte{0x33, 0x33, 0x00, 0x00, 0x00, 0x01} // same MTA hash as inMTA
	notInMTA := [6]byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}
	inRAR := [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}
	unicast2 := [6]byte{0x02, 0, 0, 0, 0, 0x42} // a second station address, in RAR 3
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

	// Power-up: open (the model's reset value), RAR 0 the EEPROM address.
	assert.Equal(t, simnic.ResetRxControl, n.RxControl())
	a, ok := n.RAR(0)
	assert.True(t, ok)
	assert.Equal(t, mac, a)

	mta := simnic.MTATable([][6]byte{inMTA})
	n.SetMTA(&mta)
	require.NoError(t, n.SetRAR(2, inRAR, true))
	require.NoError(t, n.SetRAR(3, unicast2, true))
	require.NoError(t, n.SetRAR(4, other, false)) // not valid: no match
	vfta, err := simnic.VFTATable([]uint16{0, 100, 4095})
	require.NoError(t, err)
	n.SetVFTA(&vfta)

	type frame struct {
		name   string
		dst    [6]byte
		tagged bool
		vid    uint16
	}
	frames := []frame{
		{"to us", mac, false, 0},
		{"to another station", other, false, 0},
		{"second station address", unicast2, false, 0},
		{"multicast in the MTA", inMTA, false, 0},
		{"multicast colliding in the MTA", collides, false, 0},
		{"multicast not in the MTA", notInMTA, false, 0},
		{"multicast in a RAR", inRAR, false, 0},
		{"broadcast", bcast, false, 0},
		{"to us, VLAN 100", mac, true, 100},
		{"to us, VLAN 4095", mac, true, 4095},
		{"to us, priority tag (VID 0)", mac, true, 0},
		{"to us, VLAN 101", mac, true, 101},
		{"to another station, VLAN 101", other, true, 101},
	}
	// want[i]: "pass", "addr" or "vlan" under each RCTL.
	for _, c := range []struct {
		rctl simnic.RxControl
		want []string
	}{
		{simnic.RctlBAM, []string{"pass", "addr", "pass", "pass", "pass", "addr", "pass", "pass", "pass", "pass", "pass", "pass", "addr"}},
		{simnic.RctlBAM | simnic.RctlVFE, []string{"pass", "addr", "pass", "pass", "pass", "addr", "pass", "pass", "pass", "pass", "pass", "vlan", "addr"}},
		{0, []string{"pass", "addr", "pass", "pass", "pass", "addr", "pass", "addr", "pass", "pass", "pass", "pass", "addr"}},
		{simnic.RctlMPE, []string{"pass", "addr", "pass", "pass", "pass", "pass", "pass", "pass", "pass", "pass", "pass", "pass", "addr"}},
		{simnic.RctlUPE | simnic.RctlVFE, []string{"pass", "pass", "pass", "pass", "pass", "addr", "pass", "addr", "pass", "pass", "pass", "vlan", "vlan"}},
		{simnic.RctlUPE | simnic.RctlMPE | simnic.RctlBAM, []string{"pass", "pass", "pass", "pass", "pass", "pass", "pass", "pass", "pass", "pass", "pass", "pass", "pass"}},
	} {
		require.NoError(t, n.SetRxControl(c.rctl))
		for i, f := range frames {
			before := n.Stats()
			fr := ether(f.dst, 0x0800, 100, f.tagged, f.vid)
			took := n.Receive(fr)
			after := n.Stats()
			got := "pass"
			switch {
			case after.RxFilteredAddr == before.RxFilteredAddr+1:
				got = "addr"
			case after.RxFilteredVLAN == before.RxFilteredVLAN+1:
				got = "vlan"
			}
			assert.Equalf(t, c.want[i], got, "RCTL %v: %s", c.rctl, f.name)
			assert.Equalf(t, got == "pass", took, "RCTL %v: %s: Receive's result", c.rctl, f.name)
			assert.Equalf(t, got == "pass", n.WaitRoom(fr, nil), "RCTL %v: %s: WaitRoom", c.rctl, f.name)
			assert.Equalf(t, before.RxFilteredAddr+before.RxFilteredVLAN+before.RxWaiting+1,
				after.RxFilteredAddr+after.RxFilteredVLAN+after.RxWaiting, "RCTL %v: %s: counted once", c.rctl, f.name)
		}
	}
	var ce *simnic.ConfigError
	assert.ErrorAs(t, n.SetRxControl(1<<30), &ce)
	assert.ErrorAs(t, n.SetRAR(simnic.NumRAR, mac, true), &ce)
	_, err = simnic.VFTATable([]uint16{4096})
	assert.ErrorAs(t, err, &ce)
}

// The max frame register counts the FCS and not one VLAN tag: with 1518
// (MTU 1500) a 1514-byte frame (1518 with its FCS) passes, 1515 is ROC;
// tagged, 1518 passes and 1519 is ROC. ROC counts only frames the address
// filter passed.
func TestMaxFrameRegister(t *testing.T) {
	n := bareNIC(t, simnic.Config{NTxd: 64, NRxd: 64, FIFO: 64})
	assert.Equal(t, 9018, n.MaxFrame())
	require.NoError(t, n.SetMaxFrame(1518))
	mac := simnic.DefaultMAC
	for _, c := range []struct {
		n      int
		tagged bool
		ok     bool
	}{{1514, false, true}, {1515, false, false}, {1518, true, true}, {1519, true, false}, {60, false, true}} {
		before := n.Stats().RxTooLong
		assert.Equalf(t, c.ok, n.Receive(ether(mac, 0x0800, c.n, c.tagged, 5)), "%d bytes tagged %v", c.n, c.tagged)
		assert.Equalf(t, before+map[bool]uint64{true: 0, false: 1}[c.ok], n.Stats().RxTooLong, "%d bytes tagged %v", c.n, c.tagged)
	}
	require.NoError(t, n.SetRxControl(simnic.RctlBAM))
	before := n.Stats()
	assert.False(t, n.Receive(ether([6]byte{2, 0, 0, 0, 0, 0x77}, 0x0800, 1600, false, 0)))
	after := n.Stats()
	assert.Equal(t, before.RxTooLong, after.RxTooLong, "a frame the address filter drops is not ROC")
	assert.Equal(t, before.RxFilteredAddr+1, after.RxFilteredAddr)

	var ce *simnic.ConfigError
	assert.ErrorAs(t, n.SetMaxFrame(63), &ce)
	assert.ErrorAs(t, n.SetMaxFrame(9019), &ce)
	assert.Equal(t, 1518, n.MaxFrame())
}

// Microsoft's RSS verification suite ("Verifying the RSS Hash
// Calculation"): the Toeplitz hash with the standard key of each
// destination/source pair, over the addresses alone and over addresses and
// ports, IPv4 and IPv6. The device's table-driven hash must agree, so each
// vector also goes through the NIC as a TCP frame and its hash and type
// reach iflib's packet (iri_flowid, iri_rsstype).
func TestToeplitzMicrosoftVectors(t *testing.T) {
	vectors := []struct {
		dst, src         string
		dport, sport     uint16
		withPorts, addrs uint32
	}{
		{"161.142.100.80", "66.9.149.187", 1766, 2794, 0x51ccc178, 0x323e8fc2},
		{"65.69.140.83", "199.92.111.2", 4739, 14230, 0xc626b0ea, 0xd718262a},
		{"12.22.207.184", "24.19.198.95", 38024, 12898, 0x5c2b394a, 0xd2d0a5de},
		{"209.142.163.6", "38.27.205.30", 2217, 48228, 0xafc7327f, 0x82989176},
		{"202.188.127.2", "153.39.163.191", 1303, 44251, 0x10e828a2, 0x5d1809c5},
		{"3ffe:2501:200:3::1", "3ffe:2501:200:1fff::7", 1766, 2794, 0x40207d3d, 0x2cc18cd5},
		{"ff02::1", "3ffe:501:8::260:97ff:fe40:efab", 4739, 14230, 0xdde51bbf, 0x0f0c461c},
		{"fe80::200:f8ff:fe21:67cf", "3ffe:1900:4545:3:200:f8ff:fe21:67cf", 38024, 44251, 0x02d1feef, 0x4b61e985},
	}
	key := simnic.DefaultRSSKey
	for _, v := range vectors {
		src, dst := netip.MustParseAddr(v.src), netip.MustParseAddr(v.dst)
		in := append(src.AsSlice(), dst.AsSlice()...)
		assert.Equalf(t, v.addrs, simnic.Toeplitz(key[:], in), "%s → %s, addresses", v.src, v.dst)
		in = binary.BigEndian.AppendUint16(in, v.sport)
		in = binary.BigEndian.AppendUint16(in, v.dport)
		assert.Equalf(t, v.withPorts, simnic.Toeplitz(key[:], in), "%s → %s, with ports", v.src, v.dst)
	}

	// Through the device and iflib, with the ports and without (the
	// fields MRQC enables).
	type got struct {
		flow uint32
		typ  iflib.HashType
		qid  int
	}
	var mu sync.Mutex
	var gots []got
	input := func(_ *iflib.Context, qid int, pkts []*iflib.Packet) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range pkts {
			gots = append(gots, got{m.Hdr.FlowID, m.Hdr.HashType, qid})
			m.Free()
		}
	}
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{Queues: 4, NTxd: 64, NRxd: 64}, Input: input, TxZone: -1})
	for _, ports := range []bool{true, false} {
		fields := simnic.RSSFieldIPv4 | simnic.RSSFieldIPv6
		if ports {
			fields |= simnic.RSSFieldTCPIPv4 | simnic.RSSFieldTCPIPv6
		}
		_, reta, _ := r.NIC.RSS()
		require.NoError(t, r.NIC.SetRSS(key, reta, fields))
		mu.Lock()
		gots = gots[:0]
		mu.Unlock()
		for _, v := range vectors {
			f := tcpFrame(netip.MustParseAddr(v.src), netip.MustParseAddr(v.dst), v.sport, v.dport)
			testutil.Eventually(t, "the wire", func() bool { return r.NIC.Receive(f) })
		}
		testutil.Eventually(t, "every vector", func() bool { mu.Lock(); defer mu.Unlock(); return len(gots) == len(vectors) })
		mu.Lock()
		byFlow := map[uint32]got{}
		for _, g := range gots {
			byFlow[g.flow] = g
		}
		mu.Unlock()
		for _, v := range vectors {
			want, typ := v.addrs, iflib.HashRSSIPv4
			v6 := netip.MustParseAddr(v.src).Is6()
			switch {
			case ports && v6:
				want, typ = v.withPorts, iflib.HashRSSTCPv6
			case ports:
				want, typ = v.withPorts, iflib.HashRSSTCPv4
			case v6:
				typ = iflib.HashRSSIPv6
			}
			g, ok := byFlow[want]
			if assert.Truef(t, ok, "%s → %s (ports %v): hash %#08x not delivered; got %+v", v.src, v.dst, ports, want, byFlow) {
				assert.Equal(t, typ, g.typ)
				assert.Equal(t, int(reta[want&(simnic.RETASize-1)]), g.qid, "the queue the indirection table names")
			}
		}
	}
}

// tcpFrame is an Ethernet frame to the NIC's address carrying a TCP
// segment from src:sport to dst:dport (IPv4 or IPv6), 20 bytes of payload.
func tcpFrame(src, dst netip.Addr, sport, dport uint16) []byte {
	mac := simnic.DefaultMAC
	var f []byte
	f = append(f, mac[:]...)
	f = append(f, 2, 0, 0, 0, 0, 1)
	const l4 = 20 + 20
	if src.Is4() {
		f = append(f, 0x08, 0x00, 0x45, 0, 0, 20+l4, 0, 1, 0x40, 0, 64, 6, 0, 0)
		f = append(f, src.AsSlice()...)
		f = append(f, dst.AsSlice()...)
	} else {
		f = append(f, 0x86, 0xdd, 0x60, 0, 0, 0, 0, l4, 6, 64)
		f = append(f, src.AsSlice()...)
		f = append(f, dst.AsSlice()...)
	}
	f = binary.BigEndian.AppendUint16(f, sport)
	f = binary.BigEndian.AppendUint16(f, dport)
	f = append(f, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0)
	return append(f, make([]byte, 20)...)
}

// The indirection table decides the queue: a table sending hash buckets
// to queues in an irregular pattern (and none to queue 1) is followed for
// every flow, and flows do spread over the queues it names.
func TestRSSSpreadsByIndirectionTable(t *testing.T) {
	var mu sync.Mutex
	perQ := map[int]int{}
	bad := 0
	var reta [simnic.RETASize]uint8
	for i := range reta {
		reta[i] = []uint8{0, 2, 3, 3, 2, 0, 3}[i%7]
	}
	input := func(_ *iflib.Context, qid int, pkts []*iflib.Packet) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range pkts {
			if m.Hdr.HashType != iflib.HashRSSUDPv4 || int(reta[m.Hdr.FlowID&(simnic.RETASize-1)]) != qid {
				bad++
			}
			perQ[qid]++
			m.Free()
		}
	}
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{Queues: 4, NTxd: 64, NRxd: 64}, Input: input, TxZone: -1})
	require.NoError(t, r.NIC.SetRSS(simnic.DefaultRSSKey, reta, simnic.RSSFieldIPv4|simnic.RSSFieldUDPIPv4))
	const flows = 400
	for i := 0; i < flows; i++ {
		f := simnictest.FrameSpec{Flow: uint32(i), Seq: 0, Len: 80}.Build(nil)
		testutil.Eventually(t, "the wire", func() bool { return r.NIC.Receive(f) })
	}
	testutil.Eventually(t, "every flow", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return perQ[0]+perQ[1]+perQ[2]+perQ[3] == flows
	})
	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, bad, "packets on a queue the table does not name for their hash")
	assert.Zero(t, perQ[1], "queue 1 is in no table entry")
	for _, q := range []int{0, 2, 3} {
		assert.Greaterf(t, perQ[q], flows/10, "queue %d: %v", q, perQ)
	}
	var ce *simnic.ConfigError
	reta[5] = 4
	assert.ErrorAs(t, r.NIC.SetRSS(simnic.DefaultRSSKey, reta, simnic.RSSFieldIPv4), &ce, "an entry naming a queue the NIC lacks")
	assert.ErrorAs(t, r.NIC.SetRSS(simnic.DefaultRSSKey, simnic.RoundRobinRETA(4), 1), &ce, "an unknown field")
}

// Autonegotiation resolves the highest common speed and duplex and the
// flow control of IEEE 802.3 Annex 28B; a forced mode runs only if the
// partner has it; the link follows, each change counted and latched.
func TestAutonegotiation(t *testing.T) {
	n := bareNIC(t, simnic.Config{NTxd: 64, NRxd: 64, FIFO: 64})
	st := n.PHYStatus()
	assert.True(t, st.Link)
	assert.Equal(t, simnic.Ability100GFD, st.Mode)
	assert.Equal(t, uint64(100e9), st.Speed)
	assert.True(t, st.RxPause && st.TxPause && st.Duplex && st.Autoneg)

	p := simnic.AbilitySpeeds
	for _, c := range []struct {
		name             string
		ctl              simnic.PHYControl
		partner          simnic.Ability
		link             bool
		mode             simnic.Ability
		rxPause, txPause bool
	}{
		{"gigabit partner", simnic.PHYControl{Autoneg: true, Advertise: simnic.AbilitiesAll},
			simnic.Ability10FD | simnic.Ability100FD | simnic.Ability1000FD | simnic.AbilityPause, true, simnic.Ability1000FD, true, true},
		{"half duplex only", simnic.PHYControl{Autoneg: true, Advertise: simnic.AbilitiesAll},
			simnic.Ability10HD | simnic.Ability100HD | simnic.AbilityPause, true, simnic.Ability100HD, false, false},
		{"we advertise 100 only", simnic.PHYControl{Autoneg: true, Advertise: simnic.Ability100FD | simnic.Ability100HD},
			p, true, simnic.Ability100FD, false, false},
		{"no common speed", simnic.PHYControl{Autoneg: true, Advertise: simnic.Ability10GFD},
			simnic.Ability1000FD, false, 0, false, false},
		// Annex 28B, Table 28B-3.
		{"asym: we ASM_DIR, partner both", simnic.PHYControl{Autoneg: true, Advertise: p | simnic.AbilityAsymPause},
			p | simnic.AbilityPause | simnic.AbilityAsymPause, true, simnic.Ability100GFD, false, true},
		{"asym: we both, partner ASM_DIR", simnic.PHYControl{Autoneg: true, Advertise: p | simnic.AbilityPause | simnic.AbilityAsymPause},
			p | simnic.AbilityAsymPause, true, simnic.Ability100GFD, true, false},
		{"asym: we PAUSE, partner ASM_DIR", simnic.PHYControl{Autoneg: true, Advertise: p | simnic.AbilityPause},
			p | simnic.AbilityAsymPause, true, simnic.Ability100GFD, false, false},
		{"forced 1000, partner has it", simnic.PHYControl{Advertise: simnic.Ability1000FD | simnic.AbilityPause},
			p, true, simnic.Ability1000FD, true, true},
		{"forced 2500, partner lacks it", simnic.PHYControl{Advertise: simnic.Ability2500FD},
			simnic.Ability1000FD, false, 0, false, false},
	} {
		before := n.Stats().LinkChanges
		wasUp := n.LinkUp()
		n.SetLinkPartner(c.partner)
		require.NoError(t, n.SetPHY(c.ctl), c.name)
		st := n.PHYStatus()
		assert.Equal(t, c.link, st.Link, c.name)
		assert.Equal(t, c.link, n.LinkUp(), c.name)
		assert.Equal(t, c.mode, st.Mode, c.name)
		assert.Equal(t, c.mode.Speed(), st.Speed, c.name)
		assert.Equal(t, c.rxPause, st.RxPause, c.name+": rx pause")
		assert.Equal(t, c.txPause, st.TxPause, c.name+": tx pause")
		if wasUp != c.link {
			assert.Greater(t, n.Stats().LinkChanges, before, c.name+": link change counted")
		}
	}
	n.SetLinkPartner(simnic.AbilitiesAll)
	require.NoError(t, n.SetPHY(simnic.PHYControl{Autoneg: true, Advertise: simnic.AbilitiesAll}))
	assert.True(t, n.LinkUp())
	n.SetLink(false) // the cable out: no carrier whatever the PHY resolves
	assert.False(t, n.LinkUp())
	assert.True(t, n.PHYStatus().Resolved)
	n.SetLink(true)
	assert.True(t, n.LinkUp())

	var ce *simnic.ConfigError
	assert.ErrorAs(t, n.SetPHY(simnic.PHYControl{Advertise: simnic.Ability10FD | simnic.Ability100FD}), &ce, "forced with two modes")
	assert.ErrorAs(t, n.SetPHY(simnic.PHYControl{Autoneg: true, Advertise: simnic.AbilityPause}), &ce, "no speed")
	gig := bareNIC(t, simnic.Config{NTxd: 64, NRxd: 64, FIFO: 64, Abilities: simnic.Ability1000FD | simnic.Ability100FD})
	assert.ErrorAs(t, gig.SetPHY(simnic.PHYControl{Advertise: simnic.Ability10GFD}), &ce, "beyond the PHY")
	assert.Equal(t, simnic.Ability1000FD, gig.PHYStatus().Mode)
}

// 802.3x PAUSE from the wire: an XOFF stops the transmitter for its quanta
// at the link speed (here 10 Mb/s: 0xffff quanta are 3.4 s), an XON ends
// the pause; both are counted and consumed by the MAC. With receive flow
// control resolved off they are counted and ignored.
func TestPauseFramesFromTheWire(t *testing.T) {
	r, rec := newRig(t, simnictest.Options{NIC: simnic.Config{NTxd: 64, NRxd: 64}}, true)
	r.NIC.SetLinkPartner(simnic.Ability10FD | simnic.AbilityPause)
	testutil.Eventually(t, "the link at 10 Mb/s", func() bool { return r.NIC.PHYStatus().Speed == 10e6 && r.NIC.LinkUp() })
	pause := func(quanta uint16) []byte {
		f := ether([6]byte{0x01, 0x80, 0xc2, 0, 0, 1}, 0x8808, 60, false, 0)
		binary.BigEndian.PutUint16(f[14:16], 1)
		binary.BigEndian.PutUint16(f[16:18], quanta)
		return f
	}
	send := func(seq uint32) {
		testutil.Eventually(t, "a transmit", func() bool {
			return r.Ctx.Transmit(r.Packet(simnictest.FrameSpec{Seq: seq, Len: 100}.Build(nil), 1)) == nil
		})
	}
	send(0)
	testutil.Eventually(t, "the first frame", func() bool { return rec.Len() == 1 })
	require.True(t, r.NIC.Receive(pause(0xffff)), "the MAC consumes a PAUSE frame")
	st := r.NIC.Stats()
	assert.Equal(t, uint64(1), st.RxXoff)
	assert.Equal(t, uint64(1), st.TxPauses)
	assert.Zero(t, st.RxWaiting, "not passed up")
	send(1)
	time.Sleep(50 * time.Millisecond) // a bound on "not yet", far below the 3.4 s pause
	assert.Equal(t, 1, rec.Len(), "a frame went out during the pause")
	require.True(t, r.NIC.Receive(pause(0)))
	testutil.Eventually(t, "the frame after the XON", func() bool { return rec.Len() == 2 })
	assert.Equal(t, uint64(1), r.NIC.Stats().RxXon)

	// Without receive flow control (the partner offers no PAUSE): counted, ignored.
	r.NIC.SetLinkPartner(simnic.Ability10FD)
	testutil.Eventually(t, "renegotiated", func() bool { return !r.NIC.PHYStatus().RxPause })
	require.True(t, r.NIC.Receive(pause(0xffff)))
	send(2)
	testutil.Eventually(t, "the frame despite the XOFF", func() bool { return rec.Len() == 3 })
	st = r.NIC.Stats()
	assert.Equal(t, uint64(2), st.RxXoff)
	assert.Equal(t, uint64(1), st.TxPauses)
}

// noPauseReport is simnic's driver without its pause report in IFDI_TIMER.
type noPauseReport struct{ *simnic.Driver }

func (w noPauseReport) Timer(ic *iflib.Context, qid int) {
	if qid == 0 {
		ic.AdminIntr()
	}
}

// 802.3x pause on the fault schedule (FaultPause): each scheduled XOFF is
// counted (RxXoff), pauses the transmitter (TxPauses) and is reported to
// iflib from IFDI_TIMER (isc_pause_frames), so iflib's watchdog, here at
// 2 periods of 5 ms against pauses of ~50 ms, never resets; every frame
// still goes out, in order. The same run with a driver that does not
// report pauses is reset by the watchdog (the report is what saves it).
func TestScheduledPauseReportedToWatchdog(t *testing.T) {
	for _, report := range []bool{true, false} {
		t.Run(map[bool]string{true: "reported", false: "unreported"}[report], func(t *testing.T) {
			seed := simnictest.Seed(t)
			sch := simnic.NewSchedule(seed, simnic.Profile{Every: map[simnic.FaultKind]uint64{simnic.FaultPause: 40}, PauseQuanta: 1000})
			env := simnictest.NewEnv(t, simnictest.EnvOptions{})
			n, err := env.NewNIC(simnic.Config{NTxd: 64, NRxd: 64, Schedule: sch})
			require.NoError(t, err)
			rec := &simnictest.Recorder{}
			n.SetPeer(rec)
			n.SetLinkPartner(simnic.Ability10FD | simnic.AbilityPause) // 10 Mb/s: 1000 quanta are 51 ms
			cfg := iflib.Config{RxZoneSize: 256, TimerInterval: 5 * time.Millisecond, TxWatchdogPeriods: 2}
			var wrap func(*simnic.Driver, *iflib.SharedCtx) iflib.Device
			if !report {
				wrap = func(d *simnic.Driver, _ *iflib.SharedCtx) iflib.Device { return noPauseReport{d} }
			}
			d, err := env.AttachWith(n, iflib.Attachment{Config: cfg}, wrap)
			require.NoError(t, err)
			ic := d.Context()
			require.NoError(t, ic.Init())
			zone, err := env.NewZone("tx", iflib.MCLBytes, 512)
			require.NoError(t, err)
			const frames = 200
			for i := 0; i < frames; i++ {
				data := simnictest.FrameSpec{Seq: uint32(i), Len: 100}.Build(nil)
				testutil.Eventually(t, "a transmit", func() bool {
					p, err := zone.Get()
					if err != nil {
						return false
					}
					p.Append(data)
					p.Hdr.Len = len(data)
					return ic.Transmit(p) == nil
				})
				if !report && ic.WatchdogEvents() > 0 {
					break
				}
			}
			if !report {
				testutil.Eventually(t, "a watchdog reset of the paused queue", func() bool { return ic.WatchdogEvents() > 0 })
				return
			}
			testutil.Eventually(t, "every frame on the wire", func() bool { return rec.Len() == frames })
			st := n.Stats()
			fired := sch.Counts()[simnic.FaultPause]
			assert.GreaterOrEqual(t, fired, uint64(2))
			assert.Equal(t, fired, st.RxXoff)
			assert.Equal(t, fired, st.TxPauses)
			assert.Zero(t, ic.WatchdogEvents(), "the watchdog took a paused queue for a hung one")
			assert.Zero(t, ic.Resets())
			for i, f := range rec.Frames() {
				p, err := simnictest.Parse(f)
				require.NoError(t, err)
				require.Equal(t, uint32(i), p.Seq, "in order")
			}
		})
	}
}

// The RSS type follows what was hashed (ixgbe_determine_rsstype): TCP and
// UDP over IPv4 and IPv6 with their ports, an IPv4 fragment by its
// addresses only, a frame that is not IP not at all (queue 0).
func TestRSSHashTypes(t *testing.T) {
	var mu sync.Mutex
	got := map[byte]iflib.HashType{}
	input := func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range pkts {
			got[m.Bytes()[len(m.Bytes())-1]] = m.Hdr.HashType
			m.Free()
		}
	}
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{Queues: 2, NTxd: 64, NRxd: 64}, Input: input, TxZone: -1})
	v4, v6 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("2001:db8::1")
	mark := func(f []byte, id byte) []byte { f[len(f)-1] = id; return f }
	udp := func(f []byte, v6 bool) []byte {
		if v6 {
			f[14+6] = 17
		} else {
			f[14+9] = 17
		}
		return f
	}
	frag := tcpFrame(v4, v4, 1, 2)
	frag[14+6] = 0x20 // MF
	nonIP := ether(simnic.DefaultMAC, 0x88b5, 80, false, 0)
	frames := map[byte][]byte{
		1: tcpFrame(v4, v4, 1, 2), 2: udp(tcpFrame(v4, v4, 1, 2), false),
		3: tcpFrame(v6, v6, 1, 2), 4: udp(tcpFrame(v6, v6, 1, 2), true),
		5: frag, 6: nonIP,
	}
	want := map[byte]iflib.HashType{1: iflib.HashRSSTCPv4, 2: iflib.HashRSSUDPv4, 3: iflib.HashRSSTCPv6, 4: iflib.HashRSSUDPv6,
		5: iflib.HashRSSIPv4, 6: iflib.HashNone}
	for id, f := range frames {
		f = mark(f, id)
		testutil.Eventually(t, "the wire", func() bool { return r.NIC.Receive(f) })
	}
	testutil.Eventually(t, "every frame", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == len(frames) })
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, want, got)
}
