package iflib_test

import (
	"encoding/json"
	"expvar"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
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
	eventually(t, "50 frames in poll mode", func() bool { return e.sink.Frames() == 50 })

	for _, name := range []string{
		"dev.simnic.0.iflib.txq0.r_drops", "dev.simnic.0.iflib.txq0.r_enqueues",
		"dev.simnic.0.iflib.txq0.ring_state", "dev.simnic.0.iflib.txq0.no_desc_avail",
		"dev.simnic.0.iflib.rxq0.rxq_fl0.credits", "dev.simnic.0.iflib.rx_budget",
		"dev.simnic.0.counters.opackets",
	} {
		if _, ok := e.ctx.SysctlValue(name); !ok {
			t.Errorf("sysctl %s missing", name)
		}
	}
	if v, _ := e.ctx.SysctlValue("dev.simnic.0.iflib.txq0.r_enqueues"); v.(uint64) < 50 {
		t.Errorf("r_enqueues = %v, want ≥ 50", v)
	}
	if v, _ := e.ctx.SysctlValue("dev.simnic.0.iflib.txq0.ring_state"); !strings.Contains(v.(string), "state: ") {
		t.Errorf("ring_state = %q", v)
	}
	ev := expvar.Get("iflib")
	if ev == nil {
		t.Fatal("expvar iflib not published")
	}
	var m map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(ev.String()), &m))
	if got := m[e.ctx.Name()]["dev.simnic.0.counters.opackets"]; got != float64(50) {
		t.Errorf("expvar opackets = %v, want 50", got)
	}

	e.ctx.LinkStateChange(iflib.LinkStateDown, 0)
	err = e.ctx.Transmit(e.pkt(100))
	require.ErrorIs(t, err, iflib.ErrLinkDown)
	require.ErrorIs(t, err, iflib.ErrNotRunning, "link down is ENETDOWN too")
	e.ctx.LinkStateChange(iflib.LinkStateUp, 10e9)
	if err := e.ctx.Transmit(e.pkt(100)); err != nil {
		t.Fatalf("link up again: %v", err)
	}
	eventually(t, "frame after link up", func() bool { return e.sink.Frames() == 51 })
	if e.ctx.Placement() == "" {
		t.Error("no placement map")
	}
	e.done()
}
