package busdma_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
)

// misuseDev returns a device whose checker is NOT wired to fail the test:
// these tests commit each misuse on purpose and assert the report.
func misuseDev(t *testing.T, cfg busdma.SimConfig) (*busdma.SimSpace, *busdma.Device, *busdma.Checker, *busdma.Tag) {
	t.Helper()
	s, err := busdma.NewSimSpace(cfg)
	require.NoError(t, err)
	c := busdma.NewChecker()
	d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "ixl0", Checker: c})
	require.NoError(t, err)
	tag := mustTag(t, d.Tag(), busdma.TagConfig{Name: "rxbuf", MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	return s, d, c, tag
}

// wantReport asserts exactly one report of kind k, naming the map and a call
// site in this file.
func wantReport(t *testing.T, c *busdma.Checker, k busdma.ReportKind, mapName string) busdma.Report {
	t.Helper()
	var got []busdma.Report
	for _, r := range c.Reports() {
		if r.Kind == k {
			got = append(got, r)
		}
	}
	require.Len(t, got, 1, "want one %v report, got %d: %v", k, len(got), c.Reports())
	r := got[0]
	assert.Equal(t, mapName, r.Map, "report names map %q, want %q", r.Map, mapName)
	assert.Contains(t, r.Site, "checker_test.go:", "report site %q is not the offending call", r.Site)
	assert.Contains(t, r.String(), k.String(), "String() %q lacks the kind", r.String())
	return r
}

func TestCheckerLoadOfLoadedMap(t *testing.T) {
	s, d, c, tag := misuseDev(t, busdma.SimConfig{})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 2048, 1)
	_, err := m.Load(buf, nil)
	require.NoError(t, err)
	// D17901: the small-packet path re-loaded a cluster it never unloaded.
	require.ErrorIs(t, errOf(m.Load(buf, nil)), busdma.ErrBusy, "second load")
	wantReport(t, c, busdma.KindLoadLoaded, "rxbuf#1")
	_ = m.Unload()
	_ = d.Close()
}

func TestCheckerUnloadOfUnloadedMap(t *testing.T) {
	_, d, c, tag := misuseDev(t, busdma.SimConfig{})
	m := mustMap(t, tag)
	require.ErrorIs(t, m.Unload(), busdma.ErrNotLoaded, "unload")
	wantReport(t, c, busdma.KindUnloadUnloaded, "rxbuf#1")
	_ = d.Close()
}

func TestCheckerDestroyWhileLoaded(t *testing.T) {
	s, d, c, tag := misuseDev(t, busdma.SimConfig{})
	m := mustMap(t, tag)
	_, err := m.Load(mustAlloc(t, s, 64, 1), nil)
	require.NoError(t, err)
	require.ErrorIs(t, m.Destroy(), busdma.ErrBusy, "destroy")
	wantReport(t, c, busdma.KindDestroyLoaded, "rxbuf#1")
	_ = m.Unload()
	require.NoError(t, m.Destroy())
	_ = d.Close()
}

func TestCheckerLeakAtClose(t *testing.T) {
	s, d, c, tag := misuseDev(t, busdma.SimConfig{})
	m := mustMap(t, tag)
	_, err := m.Load(mustAlloc(t, s, 64, 1), nil)
	require.NoError(t, err)
	// D17901: missing bus_dmamap_unload calls.
	require.ErrorIs(t, d.Close(), busdma.ErrLeak, "Close")
	wantReport(t, c, busdma.KindLeak, "rxbuf#1")
}

func TestCheckerAccessOutsideMapping(t *testing.T) {
	s, d, c, tag := misuseDev(t, busdma.SimConfig{})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 2048, 1)
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	m.Sync(busdma.PreRead)
	_ = m.Unload()
	// D17901: posting a pmap_kextract address, or a stale one, instead of
	// the address of a current mapping.
	pa, _ := s.PhysAddr(buf)
	require.ErrorIs(t, d.Write(pa, []byte{1, 2, 3}), busdma.ErrFault, "write outside mapping")
	require.Equal(t, pa, segs[0].Addr, "segment %v is not the physical address %#x", segs[0], uint64(pa))
	r := wantReport(t, c, busdma.KindOutsideMapping, "")
	assert.Equal(t, "ixl0", r.Device, "device %q", r.Device)
	require.Zero(t, buf[0], "a faulted write reached memory")

	// Descriptor memory too: after Free its address is no longer mapped.
	ringTag := mustTag(t, d.Tag(), busdma.TagConfig{Name: "ring", Alignment: 128, MaxSize: 1024, NSegments: 1, MaxSegSize: 1024, Flags: busdma.AllocNow})
	dm, err := ringTag.AllocMem()
	require.NoError(t, err)
	dm.Sync(busdma.PreWrite)
	require.NoError(t, d.Read(dm.Paddr, make([]byte, 16)))
	require.ErrorIs(t, d.Read(dm.Paddr+1000, make([]byte, 48)), busdma.ErrFault, "read past the end of a ring")
	require.NoError(t, dm.Free())
	require.ErrorIs(t, d.Read(dm.Paddr, make([]byte, 16)), busdma.ErrFault, "read of freed ring")
	n := c.Count(busdma.KindOutsideMapping)
	require.Equal(t, 3, n, "%d outside-mapping reports, want 3", n)
	_ = d.Close()
}

func TestCheckerDeviceReadWithoutPreWrite(t *testing.T) {
	s, d, c, tag := misuseDev(t, busdma.SimConfig{})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 1500, 1)
	fill(buf, 1)
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	// TX: loaded, but the PREWRITE after encap is missing.
	p := make([]byte, 1500)
	require.NoError(t, d.Read(segs[0].Addr, p))
	wantReport(t, c, busdma.KindNoPreWrite, "rxbuf#1")
	c.Reset()

	// Synced, then the CPU changes a byte and the device reads it: the device
	// sees the old byte and the checker says why.
	m.Sync(busdma.PreWrite)
	buf[100] = 0xEE
	require.NoError(t, d.Read(segs[0].Addr, p))
	require.NotEqual(t, byte(0xEE), p[100], "device saw a CPU write that was never synced")
	wantReport(t, c, busdma.KindNoPreWrite, "rxbuf#1")
	c.Reset()
	m.Sync(busdma.PreWrite)
	require.NoError(t, d.Read(segs[0].Addr, p))
	require.Equal(t, byte(0xEE), p[100], "after PREWRITE the device must see the write")
	require.Empty(t, c.Reports(), c.Reports())
	m.Sync(busdma.PostWrite)
	_ = m.Unload()
	_ = d.Close()
}

func TestCheckerCPUReadWithoutPostRead(t *testing.T) {
	s, d, c, tag := misuseDev(t, busdma.SimConfig{})
	m := mustMap(t, tag)
	buf := mustAlloc(t, s, 2048, 1)
	segs, err := m.Load(buf, nil)
	require.NoError(t, err)
	m.Sync(busdma.PreRead)
	require.NoError(t, d.Write(segs[0].Addr, []byte("packet")))
	// Without POSTREAD the CPU does not see the packet.
	require.NotEqual(t, "packet", string(buf[:6]), "device write visible before POSTREAD")
	// D17901: the small-packet path (iflib_rxd_pkt_get) must sync before the memcpy;
	// re-posting the cluster (PREREAD) without it is reported.
	m.Sync(busdma.PreRead)
	wantReport(t, c, busdma.KindNoPostRead, "rxbuf#1")
	c.Reset()
	// Unloading with staged data is reported too.
	_ = m.Unload()
	wantReport(t, c, busdma.KindNoPostRead, "rxbuf#1")
	c.Reset()

	// The correct sequence: POSTREAD makes the data visible, no report.
	segs, _ = m.Load(buf, segs[:0])
	m.Sync(busdma.PreRead)
	require.NoError(t, d.Write(segs[0].Addr, []byte("packet")))
	m.Sync(busdma.PostRead)
	require.Equal(t, "packet", string(buf[:6]), "after POSTREAD: %q", buf[:6])
	_ = m.Unload()
	require.Empty(t, c.Reports(), c.Reports())
	_ = d.Close()
}

// A ring both sides write: PREREAD|PREWRITE while device write-backs are
// pending is legal, and the CPU's later PREWRITE must not clobber them.
func TestCheckerRingWriteBackNotClobbered(t *testing.T) {
	_, d := simDev(t, busdma.SimConfig{})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{Alignment: 128, MaxSize: 4096, NSegments: 1, MaxSegSize: 4096, Flags: busdma.AllocNow})
	ring, err := tag.AllocMem()
	require.NoError(t, err)
	ring.Vaddr[0] = 0xAA // descriptor 0
	ring.Sync(busdma.PreRead | busdma.PreWrite)
	// DD bit of descriptor 0
	require.NoError(t, d.Write(ring.Paddr+8, []byte{1}))
	ring.Vaddr[16] = 0xBB // descriptor 1, written before the CPU looked at 0
	ring.Sync(busdma.PreRead | busdma.PreWrite)
	p := make([]byte, 17)
	require.NoError(t, d.Read(ring.Paddr, p))
	require.Equal(t, byte(0xAA), p[0], "device view % x", p)
	require.Equal(t, byte(1), p[8], "device view % x", p)
	require.Equal(t, byte(0xBB), p[16], "device view % x", p)
	ring.Sync(busdma.PostRead | busdma.PostWrite)
	require.Equal(t, byte(1), ring.Vaddr[8], "write-back lost")
	require.NoError(t, ring.Free())
}

// A correct TX and RX cycle, in iflib's order (iflib_encap, iflib_tx_desc_free,
// iflib_fl_refill, rxd_frag_to_sd), reports nothing.
func TestCheckerCleanCycles(t *testing.T) {
	s, d := simDev(t, busdma.SimConfig{Layout: busdma.LayoutMixed, BouncePages: 64})
	tag := mustTag(t, d.Tag(), busdma.TagConfig{LowAddr: busdma.MaxAddr32, MaxSize: 9216, NSegments: 8, MaxSegSize: 4096})
	tx, rx := mustMap(t, tag), mustMap(t, tag)
	pkt := mustAlloc(t, s, 9000, 1)
	cl := mustAlloc(t, s, 9000, 1)
	var segs, rxSegs []busdma.Segment
	for i := range 20 {
		fill(pkt, byte(i))
		segs, err := tx.Load(pkt, segs[:0])
		require.NoError(t, err)
		tx.Sync(busdma.PreWrite)
		got := readSegs(t, d, segs)
		tx.Sync(busdma.PostWrite)
		require.NoError(t, tx.Unload())
		// RX: the cluster stays loaded across packets (ifsd_ba reuse).
		if i == 0 {
			segs, err = rx.Load(cl, segs[:0])
			require.NoError(t, err)
		} else {
			segs = rxSegs
		}
		rxSegs = segs
		rx.Sync(busdma.PreRead)
		writeSegs(t, d, segs, got)
		rx.Sync(busdma.PostRead)
		require.Equal(t, string(pkt), string(cl), "packet %d corrupted", i)
	}
	_ = rx.Unload()
}

func TestBusdmatestNewCheckerFails(t *testing.T) {
	ft := &fakeTB{TB: t}
	c := busdmatest.NewChecker(ft)
	s, _ := busdma.NewSimSpace(busdma.SimConfig{})
	d, _ := busdma.NewDevice(s, busdma.DeviceConfig{Checker: c})
	m := mustMap(t, d.Tag())
	_ = m.Unload()
	for _, f := range ft.cleanups {
		f()
	}
	require.Len(t, ft.errors, 1, "errors %q", ft.errors)
	require.Contains(t, ft.errors[0], "unload-of-unloaded-map", "errors %q", ft.errors)
}

type fakeTB struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, sprintf(format, args...))
}
