package simnic_test

import (
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

// simnic's IFDI control methods driven through iflib's control calls: the
// hardware then drops exactly what it should, and the counters say where.

// dstCounter counts the frames iflib delivers, by destination address.
type dstCounter struct {
	mu   sync.Mutex
	n    map[[6]byte]int
	tags map[uint16]int
}

func newDstCounter() *dstCounter {
	return &dstCounter{n: map[[6]byte]int{}, tags: map[uint16]int{}}
}

func (c *dstCounter) input(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range pkts {
		c.n[[6]byte(m.Bytes()[:6])]++
		if m.Hdr.Flags&iflib.MVLANTag != 0 {
			c.tags[m.Hdr.VLANTag]++
		}
		m.Free()
	}
}

func (c *dstCounter) get(a [6]byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[a]
}

func (c *dstCounter) tag(v uint16) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tags[v]
}

// offer puts a 100-byte frame to dst (tagged with vid when tagged) on the
// rig's wire and waits until it was delivered (want true) or counted as
// dropped by a filter (want false); it fails the test otherwise.
func offer(t *testing.T, r *simnictest.Rig, c *dstCounter, dst [6]byte, tagged bool, vid uint16, want bool) {
	t.Helper()
	before, st := c.get(dst), r.NIC.Stats()
	took := r.NIC.Receive(ether(dst, 0x0800, 100, tagged, vid))
	if !want {
		after := r.NIC.Stats()
		require.Falsef(t, took, "%x vid %d: taken, want it filtered", dst, vid)
		require.Equalf(t, st.RxFilteredAddr+st.RxFilteredVLAN+1, after.RxFilteredAddr+after.RxFilteredVLAN, "%x vid %d: counted once", dst, vid)
		return
	}
	require.Truef(t, took, "%x vid %d: filtered (RCTL %v), want it delivered", dst, vid, r.NIC.RxControl())
	testutil.Eventually(t, "the frame delivered", func() bool { return c.get(dst) == before+1 })
}

// The station address (iflib_set_mac from AttachPre; SIOCSIFLLADDR), the
// multicast list (IFDI_MULTI_SET), IFF_ALLMULTI and IFF_PROMISC
// (IFDI_PROMISC_SET): the device passes exactly the frames the interface
// asked for, counts the others in RxFilteredAddr, and passes broadcast.
func TestCtlAddressFilters(t *testing.T) {
	c := newDstCounter()
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 64, NRxd: 64}, Input: c.input, TxZone: -1})
	ic := r.Ctx
	mac := simnic.DefaultMAC
	other := [6]byte{0x02, 0, 0, 0, 0, 0x99}
	group := [6]byte{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb}
	group2 := [6]byte{0x01, 0x00, 0x5e, 0x00, 0x01, 0x01}
	bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

	assert.Equal(t, iflib.EtherAddr(mac), ic.MAC(), "AttachPre reported the EEPROM address")
	assert.Equal(t, simnic.RctlBAM, r.NIC.RxControl(), "IFDI_INIT closed the filter")
	offer(t, r, c, mac, false, 0, true)
	offer(t, r, c, bcast, false, 0, true)
	offer(t, r, c, other, false, 0, false)
	offer(t, r, c, group, false, 0, false)

	require.NoError(t, ic.AddMulti(iflib.EtherAddr(group)))
	offer(t, r, c, group, false, 0, true)
	offer(t, r, c, group2, false, 0, false)
	require.NoError(t, ic.DelMulti(iflib.EtherAddr(group)))
	offer(t, r, c, group, false, 0, false)

	require.NoError(t, ic.SetFlags(iflib.IffAllMulti))
	offer(t, r, c, group2, false, 0, true)
	offer(t, r, c, other, false, 0, false)
	require.NoError(t, ic.SetFlags(iflib.IffPromisc))
	offer(t, r, c, other, false, 0, true)
	offer(t, r, c, group2, false, 0, true)
	require.NoError(t, ic.SetFlags(0))
	offer(t, r, c, other, false, 0, false)
	offer(t, r, c, group2, false, 0, false)

	// More groups than the MTA is meant for: MPE (em_if_multi_set).
	for i := 0; i <= simnic.MaxMulticast; i++ {
		require.NoError(t, ic.AddMulti(iflib.EtherAddr{0x01, 0x00, 0x5e, 0x10, byte(i >> 8), byte(i)}))
	}
	assert.NotZero(t, r.NIC.RxControl()&simnic.RctlMPE)
	offer(t, r, c, group2, false, 0, true)

	// A new station address: the old one is filtered, the new one passes;
	// the interface was reinitialised and keeps its multicast state.
	newMAC := [6]byte{0x02, 0xaa, 0, 0, 0, 0x01}
	require.NoError(t, ic.SetMAC(iflib.EtherAddr(newMAC)))
	a, ok := r.NIC.RAR(0)
	assert.True(t, ok)
	assert.Equal(t, newMAC, a)
	offer(t, r, c, newMAC, false, 0, true)
	offer(t, r, c, mac, false, 0, false)
	offer(t, r, c, group2, false, 0, true)
}

// VLAN filtering (IFCAP_VLAN_HWFILTER, IFDI_VLAN_REGISTER/UNREGISTER) and
// tagging (IFCAP_VLAN_HWTAGGING: CTRL.VME): with the filter enabled and a
// VLAN registered the device passes exactly the registered VIDs (others
// counted in RxFilteredVLAN), strips their tags into the packet; with no
// VLAN registered, or promiscuous, the filter is off (em_if_vlan_filter_*).
func TestCtlVLANFilter(t *testing.T) {
	c := newDstCounter()
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 64, NRxd: 64}, Input: c.input, TxZone: -1})
	ic := r.Ctx
	mac := simnic.DefaultMAC
	assert.Zero(t, ic.CapEnabled()&iflib.CapVLANHWFilter, "VLAN filtering starts off, as em's")
	require.NoError(t, ic.RegisterVLAN(100))
	offer(t, r, c, mac, true, 101, true) // the filter is not enabled
	require.NoError(t, ic.SetCapEnable(ic.CapEnabled()|iflib.CapVLANHWFilter|iflib.CapVLANHWTagging))
	assert.NotZero(t, r.NIC.RxControl()&simnic.RctlVFE)
	assert.True(t, r.NIC.VLANMode())
	offer(t, r, c, mac, true, 100, true)
	assert.Equal(t, 1, c.tag(100), "the tag stripped into the packet (M_VLANTAG)")
	offer(t, r, c, mac, true, 101, false)
	offer(t, r, c, mac, false, 0, true) // untagged frames are not VLAN-filtered
	require.NoError(t, ic.RegisterVLAN(101))
	offer(t, r, c, mac, true, 101, true)
	require.NoError(t, ic.SetFlags(iflib.IffPromisc))
	offer(t, r, c, mac, true, 3000, true)
	require.NoError(t, ic.SetFlags(0))
	offer(t, r, c, mac, true, 3000, false)
	require.NoError(t, ic.UnregisterVLAN(100))
	require.NoError(t, ic.UnregisterVLAN(101))
	offer(t, r, c, mac, true, 3000, true) // no VLAN registered: the filter is off
	assert.Zero(t, r.NIC.RxControl()&simnic.RctlVFE)
	st := r.NIC.Stats()
	assert.Equal(t, uint64(2), st.RxFilteredVLAN)
}

// Media (IFDI_MEDIA_CHANGE, IFDI_MEDIA_STATUS) and the link report: the
// driver lists the PHY's media with autoselect; forcing a medium the
// partner has renegotiates and iflib learns the new speed
// (IFDI_UPDATE_ADMIN_STATUS); forcing one it lacks takes the link down;
// autoselect resolves the highest common mode with its flow control.
func TestCtlMedia(t *testing.T) {
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 64, NRxd: 64,
		Abilities: simnic.Ability100FD | simnic.Ability1000FD | simnic.Ability10GFD | simnic.AbilityPause}, TxZone: -1})
	ic := r.Ctx
	assert.ElementsMatch(t, []iflib.Media{iflib.MediaAuto, iflib.Media100TX | iflib.MediaFDX, iflib.Media1000T | iflib.MediaFDX,
		iflib.Media10GT | iflib.MediaFDX}, ic.MediaList())
	var mu sync.Mutex
	var events []iflib.LinkEvent
	cancel := ic.SubscribeLink(func(ev iflib.LinkEvent) { mu.Lock(); events = append(events, ev); mu.Unlock() })
	defer cancel()
	status := func() iflib.MediaStatus {
		ms, err := ic.MediaStatus()
		require.NoError(t, err)
		return ms
	}
	testutil.Eventually(t, "the link at 10 Gb/s", func() bool { return status().Active })
	assert.Equal(t, iflib.Media10GT|iflib.MediaFDX|iflib.MediaRxPause|iflib.MediaTxPause, status().Current)

	require.NoError(t, ic.SetMedia(iflib.Media1000T|iflib.MediaFDX))
	testutil.Eventually(t, "1 Gb/s reported to iflib", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) > 0 && events[len(events)-1].State == iflib.LinkStateUp && events[len(events)-1].Baudrate == 1e9
	})
	assert.Equal(t, iflib.Media1000T|iflib.MediaFDX, status().Current, "forced without pause options: no flow control")

	r.NIC.SetLinkPartner(simnic.Ability100FD | simnic.AbilityPause) // a 100 Mb/s switch port
	testutil.Eventually(t, "the link down: the partner lacks 1000baseT", func() bool { return ic.LinkState() == iflib.LinkStateDown })
	assert.False(t, status().Active)
	require.NoError(t, ic.SetMedia(iflib.MediaAuto))
	testutil.Eventually(t, "autoselect at 100 Mb/s", func() bool { return ic.LinkState() == iflib.LinkStateUp && status().Active })
	assert.Equal(t, iflib.Media100TX|iflib.MediaFDX|iflib.MediaRxPause|iflib.MediaTxPause, status().Current)

	err := ic.SetMedia(iflib.Media2500T | iflib.MediaFDX) // not in the list
	require.Error(t, err)
	assert.Equal(t, iflib.MediaAuto, ic.Media())
}

// IFDI_MTU_SET under traffic in both directions: the MTU goes down to 1500
// and back up to 9000 while frames of up to 8000 bytes flow. The max
// frame register follows (MTU + 18); frames above it are refused at the
// wire (ROC) or by the driver (oerrors), and every frame is accounted for:
// the RX and TX ledgers balance, nothing delivered is corrupt or out of
// order.
func TestCtlMTUUnderTraffic(t *testing.T) {
	rl := newRxLedger(3, cycleSizes(64, 1514, 3000, 8000))
	r, rec := faultRig(t, simnic.Config{NTxd: 256, NRxd: 256, FIFO: 128}, iflib.Config{}, nil, rl.input)
	ic := r.Ctx
	require.Equal(t, 9000, ic.MTU())
	gen := rl.generator(1200, false)
	require.NoError(t, r.Env.Start(gen, r.NIC))
	l := newTxLedger(r, rec, 2, cycleSizes(60, 1514, 4000), 2)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.send(t, 0, 300, stop)
	}()
	for i := 0; i < 3; i++ {
		require.NoError(t, ic.SetMTU(1500))
		assert.Equal(t, 1518, r.NIC.MaxFrame())
		time.Sleep(5 * time.Millisecond)
		require.NoError(t, ic.SetMTU(9000))
		assert.Equal(t, 9018, r.NIC.MaxFrame())
		time.Sleep(5 * time.Millisecond)
	}
	var ie *iflib.IFDIError
	require.ErrorAs(t, ic.SetMTU(9001), &ie, "above Config.MaxFrame − 18: the driver refuses")
	var ce *simnic.ConfigError
	require.ErrorAs(t, ie, &ce)
	assert.Equal(t, 9000, ic.MTU())
	wg.Wait()
	require.NoError(t, gen.Wait())
	testutil.Settle(t, "both directions to drain", func() bool { return rl.settled(r, gen) && l.settled() },
		func() uint64 { return rl.progress(r) + l.progress() })
	require.NoError(t, ic.Stop())
	tt := l.check(t)
	rt := rl.check(t, r, gen)
	t.Logf("MTU changes under traffic: TX %v; RX %v", tt, rt)
	require.NoError(t, ic.SetMTU(1500))
	require.NoError(t, ic.Init())
	assert.Equal(t, 1518, r.NIC.MaxFrame(), "IFDI_INIT programs the max frame from the MTU")
}

// Capabilities and RSS from iflib: the driver offers what the device does
// and programs RSS from the context; SetRSS moves the flows as the table
// says (the hash the device reports reaches the packet).
func TestCtlCapabilitiesAndRSS(t *testing.T) {
	for _, offload := range []bool{false, true} {
		r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 64, NRxd: 64, Offload: offload}, TxZone: -1})
		caps := r.Ctx.Capabilities()
		assert.NotZero(t, caps&iflib.CapVLANHWFilter)
		assert.NotZero(t, caps&iflib.CapJumboMTU)
		assert.Equal(t, offload, caps&iflib.CapTSO4 != 0)
		assert.Equal(t, offload, r.Ctx.CapEnabled()&iflib.CapVLANHWTagging != 0)
		assert.Equal(t, offload, r.NIC.VLANMode())
	}
	var mu sync.Mutex
	perQ := map[int]int{}
	input := func(_ *iflib.Context, qid int, pkts []*iflib.Packet) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range pkts {
			perQ[qid]++
			m.Free()
		}
	}
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{Queues: 4, NTxd: 64, NRxd: 64}, Input: input, TxZone: -1})
	rss := r.Ctx.RSS()
	key, _, _ := r.NIC.RSS()
	assert.Equal(t, rss.Key, key, "IFDI_INIT programmed iflib's key")
	for i := range rss.Table {
		rss.Table[i] = 3 // every bucket to queue 3
	}
	require.NoError(t, r.Ctx.SetRSS(rss))
	for i := 0; i < 64; i++ {
		f := simnictest.FrameSpec{Flow: uint32(i), Len: 80}.Build(nil)
		testutil.Eventually(t, "the wire", func() bool { return r.NIC.Receive(f) })
	}
	testutil.Eventually(t, "every frame", func() bool { mu.Lock(); defer mu.Unlock(); return perQ[3] == 64 })
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, map[int]int{3: 64}, perQ)
}

// A frame tagged in its data (a forwarder's) may be 4 bytes longer than
// an untagged one: at MTU 1500 a 1518-byte tagged frame goes out whole;
// a 1518-byte untagged one is dropped whole by the device (TxTooLong),
// and one above 1518 is refused by the driver (oerrors); M_VLANTAG frames
// are limited to 1514 before the tag.
func TestTxTaggedMaxFrame(t *testing.T) {
	r, rec := newRig(t, simnictest.Options{NIC: simnic.Config{NTxd: 64, NRxd: 64, Offload: true}}, true)
	require.NoError(t, r.Ctx.SetMTU(1500))
	send := func(data []byte, vtag uint16) {
		m := r.Packet(data, 2)
		if vtag != 0 {
			m.Hdr.Flags |= iflib.MVLANTag
			m.Hdr.VLANTag = vtag
		}
		require.NoError(t, r.Ctx.Transmit(m))
	}
	send(simnictest.FrameSpec{Seq: 0, Len: 1514, VLAN: 5}.Build(nil), 0) // 1518 bytes, tagged in its data
	send(simnictest.FrameSpec{Seq: 1, Len: 1518}.Build(nil), 0)          // 1518 untagged: too long
	send(simnictest.FrameSpec{Seq: 2, Len: 1519}.Build(nil), 0)          // the driver refuses
	send(simnictest.FrameSpec{Seq: 3, Len: 1515}.Build(nil), 7)          // 1515 + an inserted tag: too long
	send(simnictest.FrameSpec{Seq: 4, Len: 1514}.Build(nil), 0)
	testutil.Eventually(t, "the two good frames", func() bool { return rec.Len() == 2 })
	testutil.Eventually(t, "the device's drop", func() bool { return r.NIC.Stats().TxTooLong == 1 })
	st, err := r.Ctx.TxQueueStats(0)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), st.OErrors, "the driver's refusals")
	f := rec.Frames()
	assert.Len(t, f[0], 1518)
	assert.Len(t, f[1], 1514)
}
