package iflib_test

import (
	"encoding/json"
	"expvar"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// The counter tree uses FreeBSD's names and is published through expvar;
// link state gates transmit; poll mode with pinned tasks moves traffic.
func TestSysctlExpvarLinkAndPollMode(t *testing.T) {
	e, err := newEnv(t, simnic.Config{}, iflib.Config{Poll: true, PinTasks: true})
	require.NoError(t, err)
	require.NoError(t, e.ctx.Init())
	for i := 0; i < 50; i++ {
		require.NoError(t, e.ctx.Transmit(e.pkt(100)))
	}
	testutil.Eventually(t, "50 frames in poll mode", func() bool { return e.sink.Frames() == 50 })

	for _, name := range []string{
		"dev.simnic.0.iflib.txq0.r_drops", "dev.simnic.0.iflib.txq0.r_enqueues",
		"dev.simnic.0.iflib.txq0.ring_state", "dev.simnic.0.iflib.txq0.no_desc_avail",
		"dev.simnic.0.iflib.rxq0.rxq_fl0.credits", "dev.simnic.0.iflib.rx_budget",
		"dev.simnic.0.counters.opackets",
	} {
		_, ok := e.ctx.SysctlValue(name)
		assert.True(t, ok, "sysctl %s missing", name)
	}
	v, _ := e.ctx.SysctlValue("dev.simnic.0.iflib.txq0.r_enqueues")
	assert.GreaterOrEqual(t, v.(uint64), uint64(50), "r_enqueues = %v, want ≥ 50", v)
	v, _ = e.ctx.SysctlValue("dev.simnic.0.iflib.txq0.ring_state")
	assert.Contains(t, v.(string), "state: ", "ring_state = %q", v)
	ev := expvar.Get("iflib")
	require.NotNil(t, ev, "expvar iflib not published")
	var m map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(ev.String()), &m))
	got := m[e.ctx.Name()]["dev.simnic.0.counters.opackets"]
	assert.False(t, got != float64(50), "expvar opackets = %v, want 50", got)

	e.ctx.LinkStateChange(iflib.LinkStateDown, 0)
	err = e.ctx.Transmit(e.pkt(100))
	require.ErrorIs(t, err, iflib.ErrLinkDown)
	require.ErrorIs(t, err, iflib.ErrNotRunning, "link down is ENETDOWN too")
	e.ctx.LinkStateChange(iflib.LinkStateUp, 10e9)
	require.NoError(t, e.ctx.Transmit(e.pkt(100)), "link up again")
	testutil.Eventually(t, "frame after link up", func() bool { return e.sink.Frames() == 51 })
	assert.NotEqual(t, "", e.ctx.Placement(), "no placement map")
	e.done()
}
