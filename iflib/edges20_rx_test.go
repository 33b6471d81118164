package iflib_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Regression tests for issue 20 §2 item 7 (every RX frame boundary), the
// RxFilter item and §3 R2-B5 (no 9 KB or 16 KB clusters).

// R2-B5: a driver's isc_rxd_buf_size above MCLBYTES is pulled up to
// MJUMPAGESIZE, never to MJUM9BYTES or MJUM16BYTES (iflib_get_mbuf_size_for);
// the driver learns it from Context.RxBufSize and RxdUpdate.BufSize, and a
// jumbo frame spans several 4 KB buffers.
func TestRxBufSizeTakesPageSize(t *testing.T) {
	for _, asked := range []int{2049, 4096, 9216, iflib.MJum16Bytes} {
		c := &collector{}
		f := newFake(t, fakeOpts{rxBuf: asked, input: c.input, softc: func(s *iflib.SoftcCtx) { s.MaxFrameSize = 9018 }})
		require.Equal(t, iflib.MJumPageSize, f.ctx.Softc().RxdBufSize[0], "asked %d", asked)
		require.Equal(t, iflib.MJumPageSize, f.ctx.RxBufSize(0))
		require.Zero(t, f.ctx.RxBufSize(1), "no such free list")
		v, ok := f.ctx.SysctlValue("dev.fake.0.iflib.rxq0.rxq_fl0.buf_size")
		require.True(t, ok)
		require.Equal(t, iflib.MJumPageSize, v)
		require.NoError(t, f.ctx.Init())
		require.Equal(t, iflib.MJumPageSize, f.rxBuf, "RxdUpdate.BufSize")
		require.True(t, f.rx(frame(9018, 5)))
		testutil.Eventually(t, "the jumbo frame", func() bool { return c.count() == 1 })
		require.Equal(t, frame(9018, 5), c.frames[0])
		f.close()
	}
}

// Item 7: frames at every boundary around the largest legal frame with a
// VLAN tag (isc_max_frame_size + 4), on the smallest buffers, are received
// whole, without an error or a reset; a configuration whose largest tagged
// frame would need more than IFLIB_MAX_RX_SEGS buffers is refused at
// Register.
func TestRxFrameBoundaries(t *testing.T) {
	const maxFrame = 9018
	c := &collector{}
	f := newFake(t, fakeOpts{nrxd: 256, input: c.input, softc: func(s *iflib.SoftcCtx) { s.MaxFrameSize = maxFrame }})
	buf := f.ctx.RxBufSize(0)
	require.Equal(t, iflib.MCLBytes, buf, "the driver's 2 KB buffers")
	require.NoError(t, f.ctx.Init())
	var want [][]byte
	for _, n := range []int{1, 59, 60, 127, 128, 129, buf - 1, buf, buf + 1, 2 * buf, maxFrame, maxFrame + 4} {
		fr := frame(n, byte(n))
		want = append(want, fr)
		require.True(t, f.rx(fr), "frame of %d bytes", n)
		testutil.Eventually(t, "the frame", func() bool { return c.count() == len(want) })
	}
	for i := range want {
		require.True(t, bytes.Equal(want[i], c.frames[i]), "frame %d (%d bytes) differs", i, len(want[i]))
	}
	st := rxStats(t, f.ctx)
	require.Zero(t, st.IErrors)
	require.Zero(t, st.Resets)
	f.close()

	_, err := tryFake(t, fakeOpts{softc: func(s *iflib.SoftcCtx) {
		s.RxdBufSize[0] = iflib.MCLBytes
		s.MaxFrameSize = iflib.MaxRxSegs*iflib.MCLBytes - 3 // + a VLAN tag: one byte too many
	}})
	var ce *iflib.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "MaxFrameSize", ce.Field)
	f = newFake(t, fakeOpts{softc: func(s *iflib.SoftcCtx) {
		s.RxdBufSize[0] = iflib.MCLBytes
		s.MaxFrameSize = iflib.MaxRxSegs*iflib.MCLBytes - 4
	}})
	f.close()
}

// The RxFilter item: the filter sees each received frame whole — a frame
// in several buffers included, after the pad — and a frame it drops is
// recycled, every cluster of it, without a reload.
func TestRxFilterSeesWholeFrame(t *testing.T) {
	var mu sync.Mutex
	var seen [][]byte
	c := &collector{}
	f := newFake(t, fakeOpts{input: c.input, filter: func(_ int, fr []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, bytes.Clone(fr))
		return len(fr)%2 == 1 // drop odd lengths
	}})
	f.rxPad = 2
	require.NoError(t, f.ctx.Init())
	sizes := []int{60, 100, 2000, 2045, 2046, 2047, 5001, 6000, 9000}
	for _, n := range sizes {
		require.True(t, f.rx(frame(n, byte(n))))
	}
	testutil.Eventually(t, "every frame filtered", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == len(sizes) })
	for i, n := range sizes {
		require.True(t, bytes.Equal(frame(n, byte(n)), seen[i]), "the filter saw %d of %d bytes (frame %d)", len(seen[i]), n, i)
	}
	testutil.Eventually(t, "the passed frames", func() bool { return c.count() == 6 })
	// The RX task publishes a pass's counters after it hands the pass's
	// frames up: wait for them rather than read them beside the delivery.
	testutil.Eventually(t, "three frames filtered", func() bool { return rxStats(t, f.ctx).Filtered == 3 })
	loads := rxStats(t, f.ctx).MapLoads
	// The dropped clusters were reposted by their bus address, not reloaded:
	// receive again and count the loads.
	for _, n := range sizes {
		require.True(t, f.rx(frame(n, byte(n))))
	}
	testutil.Eventually(t, "the second round", func() bool { return c.count() == 12 && rxStats(t, f.ctx).Filtered == 6 })
	require.Less(t, rxStats(t, f.ctx).MapLoads-loads, uint64(len(sizes)*3), "filtered clusters were reloaded")
	f.close()
}
