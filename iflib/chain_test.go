package iflib_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// chainZone is a zone of n clusters of size bytes on a fresh space.
func chainZone(t *testing.T, size, n int) *iflib.Zone {
	t.Helper()
	s, err := busdma.NewSimSpace(busdma.SimConfig{Size: size*n + 1<<20})
	require.NoError(t, err)
	z, err := iflib.NewZone(s, "chain", size, n)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, z.Close()) })
	return z
}

// pattern is n distinct bytes.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// GetChain (m_getm2 + m_copyback) takes ceil(len/per) buffers (one for
// empty data), fills each but the last to per bytes, sets Hdr.Len, and
// CopyData gives the bytes back.
func TestGetChain(t *testing.T) {
	const cl = iflib.MCLBytes
	z := chainZone(t, cl, 64)
	for _, tc := range []struct {
		n, bufLen, per int
	}{
		{0, 0, cl},
		{1, 0, cl},
		{cl - 1, 0, cl},
		{cl, 0, cl}, // an exact cluster: one buffer, not two
		{cl + 1, 0, cl},
		{3 * cl, 0, cl}, // an exact multiple: no empty tail buffer
		{3*cl + 5, 0, cl},
		{0, 100, 100},
		{1000, 100, 100},
		{1001, 100, 100},
		{5000, cl, cl},     // bufLen = the cluster: whole clusters
		{5000, 4 * cl, cl}, // bufLen above the cluster: whole clusters
		{60, 1, 1},         // one byte a buffer
		{cl*2 + 3, 1000, 1000},
	} {
		data := pattern(tc.n)
		m, err := z.GetChain(data, tc.bufLen)
		require.NoError(t, err, "%+v", tc)
		wantBufs := max(1, (tc.n+tc.per-1)/tc.per)
		require.Equal(t, wantBufs, m.NumBufs(), "%+v", tc)
		require.Equal(t, tc.n, m.Hdr.Len, "%+v", tc)
		require.Equal(t, tc.n, m.ChainLen(), "%+v", tc)
		i := 0
		for q := m; q != nil; q = q.Next {
			if q.Next != nil {
				require.Equal(t, tc.per, q.Len(), "%+v: buffer %d", tc, i)
			}
			if q != m {
				require.Equal(t, iflib.PktHdr{}, q.Hdr, "%+v: only the head has a header", tc)
			}
			i++
		}
		got := make([]byte, tc.n)
		require.NoError(t, m.CopyData(0, got))
		require.Equal(t, data, got, "%+v", tc)
		require.Equal(t, wantBufs, z.Outstanding(), "%+v", tc)
		m.Free()
		require.Zero(t, z.Outstanding(), "%+v", tc)
	}
}

// A zone that runs dry part way: GetChain returns ErrNoPackets, and every
// buffer it took is back in the zone; a closed zone gives ErrZoneClosed.
func TestGetChainDryZone(t *testing.T) {
	const cl = iflib.MCLBytes
	z := chainZone(t, cl, 4)
	held, err := z.Get()
	require.NoError(t, err)
	before := z.Stats()

	m, err := z.GetChain(pattern(3*cl+1), 0) // needs 4, 3 left
	require.ErrorIs(t, err, iflib.ErrNoPackets)
	require.Nil(t, m)
	require.Equal(t, 1, z.Outstanding(), "only the packet held before")
	require.Equal(t, 3, z.Available())
	after := z.Stats()
	assert.Equal(t, before.Allocs+3, after.Allocs, "three taken")
	assert.Equal(t, before.Frees+3, after.Frees, "and the three freed")
	assert.Equal(t, before.Fails+1, after.Fails, "one failed Get")
	assert.Zero(t, after.DoubleFrees)

	// What still fits is built from the same zone.
	m, err = z.GetChain(pattern(3*cl), 0)
	require.NoError(t, err)
	require.Equal(t, 3, m.NumBufs())
	_, err = z.GetChain(nil, 0) // even an empty chain needs a buffer
	require.ErrorIs(t, err, iflib.ErrNoPackets)
	m.Free()
	held.Free()

	require.NoError(t, z.Close())
	_, err = z.GetChain(pattern(10), 0)
	require.ErrorIs(t, err, iflib.ErrZoneClosed)
}

// A negative bufLen, or more buffers than a chain may have, is a
// *ConfigError naming the argument, and takes nothing from the zone.
func TestGetChainBadArguments(t *testing.T) {
	z := chainZone(t, iflib.MCLBytes, 4)
	_, err := z.GetChain(pattern(10), -1)
	require.ErrorIs(t, err, iflib.ErrInvalid)
	var ce *iflib.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "GetChain bufLen", ce.Field)
	assert.Equal(t, -1, ce.Value)

	_, err = z.GetChain(make([]byte, iflib.MaxChainBufs+1), 1)
	require.ErrorIs(t, err, iflib.ErrInvalid)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "GetChain data", ce.Field)
	assert.Contains(t, ce.Error(), "MaxChainBufs")
	assert.Zero(t, z.Stats().Allocs, "nothing taken")
	assert.Equal(t, 4, z.Available())
}

// CopyData (m_copydata) copies any range of a chain whose buffers have
// uneven lengths (and an empty one in the middle), and nothing else.
func TestCopyData(t *testing.T) {
	z := chainZone(t, iflib.MCLBytes, 16)
	data := pattern(3000)
	// 7 + 0 + 1000 + 1000 + 993 bytes: build the parts and link them.
	a, err := z.GetChain(data[:7], 0)
	require.NoError(t, err)
	empty, err := z.GetChain(nil, 0)
	require.NoError(t, err)
	rest, err := z.GetChain(data[7:], 1000)
	require.NoError(t, err)
	a.Next, empty.Next = empty, rest
	a.Hdr.Len = len(data)
	t.Cleanup(a.Free)
	require.Equal(t, 5, a.NumBufs())

	for _, off := range []int{0, 1, 6, 7, 8, 1006, 1007, 1008, 2006, 2007, 2999, 3000} {
		for _, n := range []int{0, 1, 2, 993, 1000, 1001, 2993, 3000} {
			if off+n > len(data) {
				continue
			}
			dst := make([]byte, n)
			require.NoError(t, a.CopyData(off, dst), "off %d len %d", off, n)
			require.Equal(t, data[off:off+n], dst, "off %d len %d", off, n)
		}
	}
}

// A range outside the chain is a *ConfigError naming the offset, and dst
// is left as it was.
func TestCopyDataBadRange(t *testing.T) {
	z := chainZone(t, iflib.MCLBytes, 4)
	m, err := z.GetChain(pattern(100), 30)
	require.NoError(t, err)
	t.Cleanup(m.Free)

	for _, tc := range []struct{ off, n int }{
		{-1, 1},
		{-1, 0},
		{101, 0},
		{100, 1},
		{0, 101},
		{99, 2},
		{math.MaxInt, 1}, // off+len overflows
		{math.MaxInt - 1, 2},
	} {
		dst := make([]byte, tc.n)
		for i := range dst {
			dst[i] = 0xee
		}
		err := m.CopyData(tc.off, dst)
		require.ErrorIs(t, err, iflib.ErrInvalid, "%+v", tc)
		var ce *iflib.ConfigError
		require.ErrorAs(t, err, &ce, "%+v", tc)
		assert.Equal(t, "CopyData off", ce.Field, "%+v", tc)
		assert.Equal(t, tc.off, ce.Value, "%+v", tc)
		assert.Contains(t, ce.Error(), "chain's 100 bytes", "%+v", tc)
		for i, b := range dst {
			require.Equal(t, byte(0xee), b, "%+v: dst[%d] written", tc, i)
		}
	}
	// The whole chain, and the empty range at its end, are in range.
	require.NoError(t, m.CopyData(100, nil))
	require.NoError(t, m.CopyData(0, make([]byte, 100)))

	// A nil chain holds no bytes.
	var none *iflib.Packet
	require.NoError(t, none.CopyData(0, nil))
	require.ErrorIs(t, none.CopyData(0, make([]byte, 1)), iflib.ErrInvalid)
}

// Copying out allocates nothing; nor does building a chain and freeing it
// (the buffers come from the zone).
func TestChainAllocs(t *testing.T) {
	z := chainZone(t, iflib.MCLBytes, 8)
	z.SetDebug(nil) // the production path (debug mode records each free's call site)
	data := pattern(3*iflib.MCLBytes + 17)
	m, err := z.GetChain(data, 0)
	require.NoError(t, err)
	dst, part := make([]byte, len(data)), make([]byte, 100)
	var errs [3]error
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		errs[0] = m.CopyData(0, dst)
		errs[1] = m.CopyData(2049, part)
	}), "CopyData")
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, data, dst)
	require.Equal(t, data[2049:2149], part)
	m.Free()
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		var c *iflib.Packet
		if c, errs[2] = z.GetChain(data, 0); errs[2] == nil {
			c.Free()
		}
	}), "GetChain + Free")
	require.NoError(t, errs[2])
	// A dry zone fails without allocating either.
	var held []*iflib.Packet
	for range 6 {
		p, err := z.Get()
		require.NoError(t, err)
		held = append(held, p)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, errs[2] = z.GetChain(data, 0)
	}), "GetChain on a dry zone")
	require.ErrorIs(t, errs[2], iflib.ErrNoPackets)
	assert.Equal(t, 2, z.Available(), "the dry attempts gave back what they took")
	for _, p := range held {
		p.Free()
	}
}
