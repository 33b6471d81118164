package afxdp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
