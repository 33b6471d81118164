package simnic

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// TestRawCloseLostBuffer: a buffer the forwarder lost track of (neither
// free nor on a ring) makes Close return ErrRawLostBuffer, with the
// counts, and Close still releases everything.
func TestRawCloseLostBuffer(t *testing.T) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20})
	require.NoError(t, err)
	a, err := New(space, Config{})
	require.NoError(t, err)
	b, err := New(space, Config{})
	require.NoError(t, err)
	before := space.Allocated()
	f, err := NewRawForwarder(a, b, RawConfig{})
	require.NoError(t, err)
	f.mu.Lock()
	require.NotEmpty(t, f.free)
	f.free = f.free[:len(f.free)-1] // lose one
	f.mu.Unlock()
	err = f.Close()
	require.ErrorIs(t, err, ErrRawLostBuffer)
	require.Contains(t, err.Error(), "accounted for")
	require.ErrorIs(t, f.Close(), ErrRawClosed)
	require.Equal(t, before, space.Allocated(), "Close released the rings and buffers")
}
