package busdma_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
)

// CheckLeaks is Close's leak check without closing, for a framework that
// owns some of a device's maps (iflib's Detach): a *LeakError naming the
// loaded maps, nil once they are unloaded; destroyed maps do not count.
func TestCheckLeaks(t *testing.T) {
	s, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "ix0"})
	require.NoError(t, err)
	tag := mustTag(t, d.Tag(), busdma.TagConfig{Name: "rx", MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	buf := mustAlloc(t, s, 4096, 4096)
	maps := make([]*busdma.Map, 4)
	for i := range maps {
		maps[i] = mustMap(t, tag)
	}
	require.NoError(t, d.CheckLeaks())
	for _, m := range maps[:2] {
		_, err := m.Load(buf, nil)
		require.NoError(t, err)
	}
	require.NoError(t, maps[3].Destroy())
	assert.Equal(t, 2, d.LoadedMaps())

	err = d.CheckLeaks()
	require.ErrorIs(t, err, busdma.ErrLeak)
	var le *busdma.LeakError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "ix0", le.Device)
	assert.Equal(t, 2, le.Maps)
	assert.ElementsMatch(t, []string{"rx#1", "rx#2"}, le.Names)
	assert.Contains(t, err.Error(), "rx#1")

	require.NoError(t, maps[0].Unload())
	require.ErrorIs(t, d.CheckLeaks(), busdma.ErrLeak, "still one")
	err = d.Close()
	require.ErrorAs(t, err, &le, "Close reports the same leak")
	assert.Equal(t, []string{"rx#2"}, le.Names)

	require.NoError(t, maps[1].Unload())
	assert.Zero(t, d.LoadedMaps())
	require.NoError(t, d.CheckLeaks())
	require.ErrorIs(t, d.Close(), busdma.ErrClosed)
}
