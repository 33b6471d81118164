package busdma_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
)

func mustTag(t testing.TB, parent *busdma.Tag, cfg busdma.TagConfig) *busdma.Tag {
	t.Helper()
	tag, err := busdma.NewTag(parent, cfg)
	require.NoError(t, err, "NewTag(%+v)", cfg)
	return tag
}

func mustMap(t testing.TB, tag *busdma.Tag) *busdma.Map {
	t.Helper()
	m, err := tag.CreateMap()
	require.NoError(t, err, "CreateMap")
	return m
}

func mustAlloc(t testing.TB, s busdma.Space, size, align int) []byte {
	t.Helper()
	b, err := s.Alloc(size, align)
	require.NoError(t, err, "Alloc(%d,%d)", size, align)
	return b
}

// simDev is a checked device on a fresh SimSpace.
func simDev(t testing.TB, cfg busdma.SimConfig) (*busdma.SimSpace, *busdma.Device) {
	t.Helper()
	return busdmatest.NewSimDevice(t, cfg)
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

// readSegs reads the whole mapping through the device.
func readSegs(t testing.TB, d *busdma.Device, segs []busdma.Segment) []byte {
	t.Helper()
	var out []byte
	for _, s := range segs {
		p := make([]byte, s.Len)
		require.NoError(t, d.Read(s.Addr, p), "device Read %#x+%d", uint64(s.Addr), s.Len)
		out = append(out, p...)
	}
	return out
}

// writeSegs writes data across the mapping through the device.
func writeSegs(t testing.TB, d *busdma.Device, segs []busdma.Segment, data []byte) {
	t.Helper()
	for _, s := range segs {
		n := min(s.Len, len(data))
		require.NoError(t, d.Write(s.Addr, data[:n]), "device Write %#x+%d", uint64(s.Addr), n)
		data = data[n:]
	}
}

func wantSegs(t testing.TB, got []busdma.Segment, want ...busdma.Segment) {
	t.Helper()
	require.True(t, slices.Equal(got, want), "segments:\n got %s\nwant %s", fmtSegs(got), fmtSegs(want))
}

func fmtSegs(s []busdma.Segment) string {
	var b strings.Builder
	for _, x := range s {
		fmt.Fprintf(&b, "{%#x %d} ", uint64(x.Addr), x.Len)
	}
	return b.String()
}

func seg(a uint64, n int) busdma.Segment { return busdma.Segment{Addr: busdma.BusAddr(a), Len: n} }

// roundTrip checks CPU→device through PREWRITE and device→CPU through
// POSTREAD on a loaded map.
func roundTrip(t testing.TB, d *busdma.Device, m *busdma.Map, buf []byte, segs []busdma.Segment) {
	t.Helper()
	fill(buf, 3)
	m.Sync(busdma.PreWrite)
	got := readSegs(t, d, segs)
	require.Equal(t, buf, got, "device read after PREWRITE differs from CPU buffer")
	m.Sync(busdma.PostWrite)
	m.Sync(busdma.PreRead)
	want := make([]byte, len(buf))
	fill(want, 99)
	writeSegs(t, d, segs, want)
	m.Sync(busdma.PostRead)
	require.Equal(t, want, buf, "CPU buffer after POSTREAD differs from device write")
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// errOf returns the error of a two-result call, for require.ErrorIs.
func errOf(_ any, err error) error { return err }
