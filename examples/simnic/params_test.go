package simnic_test

import (
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Issue 20 §2 item 6: the simulated NIC's parameters at their edges. Every
// mean of a Profile is legal, up to 2^64−1 (clamped to MaxMean), and so
// is every LinkDownFor: a schedule with all of them at the top of the range
// runs traffic without a panic, and one whose link losses last "forever"
// keeps the link down until SetLink brings it back.
func TestProfileExtremeMeans(t *testing.T) {
	for _, mean := range []uint64{1 << 62, 1<<62 + 1, 1 << 63, math.MaxUint64} {
		every := map[simnic.FaultKind]uint64{}
		for _, k := range simnic.FaultKinds() {
			every[k] = mean
		}
		every[simnic.FaultKind(200)] = 1 // not a kind: ignored
		sch := simnic.NewSchedule(1, simnic.Profile{Every: every, LinkDownFor: mean})
		r, rec := newRig(t, simnictest.Options{NIC: simnic.Config{NTxd: 64, NRxd: 64, Schedule: sch}, TxZone: 64}, true)
		for i := 0; i < 20; i++ {
			f := make([]byte, 100)
			fillFrame(f, 0, uint32(i))
			require.NoError(t, r.Ctx.Transmit(r.Packet(f, 1)))
		}
		testutil.Eventually(t, "20 frames", func() bool { return rec.Len() == 20 })
		r.Close()
	}
	// A link loss at every status read (mean 1) that lasts a mean of
	// 2^64−1 reads: the link goes down at the first read and stays down.
	sch := simnic.NewSchedule(2, simnic.Profile{Every: map[simnic.FaultKind]uint64{simnic.FaultLinkDown: 1}, LinkDownFor: math.MaxUint64})
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 64, NRxd: 64, Schedule: sch}, Config: iflib.Config{TimerInterval: time.Millisecond}, TxZone: 64})
	testutil.Eventually(t, "the scheduled link loss", func() bool { return !r.NIC.LinkUp() })
	fired := sch.Fired()
	require.Len(t, fired, 1, "fired %v, want one link loss", fired)
	require.Equal(t, simnic.FaultLinkDown, fired[0].Kind, "fired %v, want one link loss", fired)
	require.GreaterOrEqual(t, fired[0].Len, uint64(1), "fired %v, want one link loss", fired)
	time.Sleep(20 * time.Millisecond) // the timer polls the link meanwhile
	require.False(t, r.NIC.LinkUp(), "a link loss of 2^63 reads ended")
	// SetLink ends the loss (the next read may start another: mean 1).
	r.NIC.SetLink(true)
	require.True(t, r.NIC.LinkUp(), "SetLink(true) did not end the loss")
	r.Close()
}

// Issue 20 §2 item 6: a legal but slow wire (LineRate 1 bit/s: 700 s per
// frame; a FrameRate so small that a frame's time overflows a Duration)
// never makes Stop, Detach or a rig's Close wait for the wire: the pacer's
// wait ends at the stop. The frames the device had taken are counted.
func TestSlowWireStopsAtOnce(t *testing.T) {
	for name, cfg := range map[string]simnic.Config{
		"LineRate 1":        {LineRate: 1},
		"FrameRate 1e-300":  {FrameRate: 1e-300},
		"FrameRate 0.001":   {FrameRate: 0.001},
		"both, with ITR 1s": {LineRate: 1e-300, FrameRate: 1e-300, ITR: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.NTxd, cfg.NRxd = 64, 64
			r := simnictest.New(t, simnictest.Options{NIC: cfg, Config: iflib.Config{TxMode: iflib.TxModeSimple}, TxZone: 64})
			for i := 0; i < 5; i++ {
				f := make([]byte, 100)
				fillFrame(f, 0, uint32(i))
				require.NoError(t, r.Ctx.Transmit(r.Packet(f, 1)))
			}
			// The device holds the first frame for its wire time (700 s
			// at 1 bit/s) or longer.
			time.Sleep(20 * time.Millisecond)
			st := r.NIC.Stats()
			require.Zero(t, st.TxFrames, "%d frames on a wire that needs minutes for one", st.TxFrames)
			bounded(t, "Stop", 10*time.Second, func() { r.Ctx.Stop() })
			bounded(t, "Close", 10*time.Second, r.Close)
			st = r.NIC.Stats()
			require.False(t, st.TxFrames > 5 || st.TxProcessed != st.TxPackets, "device stats %+v", st)
		})
	}
}

// Issue 20 §2 item 6: a Lossless generator on a NIC whose link is down
// parks until the link comes back (one RxLinkDown drop per link loss, not
// one per retry), its Stop returns, and so does the Env's Close with it
// running. When the link comes back, the frame it held is taken.
func TestLosslessGeneratorLinkDown(t *testing.T) {
	env := simnictest.NewEnv(t, simnictest.EnvOptions{Sim: busdma.SimConfig{Size: 16 << 20}})
	nic, err := env.NewNIC(simnic.Config{NTxd: 64, NRxd: 64})
	require.NoError(t, err)
	nic.SetLink(false)
	next := func(seq uint64, buf []byte) int { fillFrame(buf[:100], 0, uint32(seq)); return 100 }
	g := &simnic.Generator{Next: next, Lossless: true, Count: 1}
	require.NoError(t, env.Start(g, nic))
	testutil.Eventually(t, "the first refusal", func() bool { return nic.Stats().RxLinkDown >= 1 })
	time.Sleep(20 * time.Millisecond) // a spinning generator would count thousands meanwhile
	st := nic.Stats()
	require.False(t, st.RxLinkDown != 1 || g.Sent() != 0, "link down: %d drops counted, %d sent; want 1 and 0 (parked)", st.RxLinkDown, g.Sent())
	nic.SetLink(true)
	bounded(t, "Wait after the link came back", 10*time.Second, func() { _ = g.Wait() })
	require.Equal(t, uint64(1), g.Sent(), "sent %d refused %d, want 1 and 0", g.Sent(), g.Refused())
	require.Zero(t, g.Refused(), "sent %d refused %d, want 1 and 0", g.Sent(), g.Refused())
	// Parked on a link that never comes back: Stop and Close return.
	nic.SetLink(false)
	g2 := &simnic.Generator{Next: next, Lossless: true}
	require.NoError(t, env.Start(g2, nic))
	g3 := &simnic.Generator{Next: next} // not lossless: parks too, counts its refusals
	require.NoError(t, env.Start(g3, nic))
	testutil.Eventually(t, "both generators refused", func() bool { return nic.Stats().RxLinkDown >= 3 })
	time.Sleep(20 * time.Millisecond)
	d := nic.Stats().RxLinkDown
	require.LessOrEqual(t, d, uint64(3), "%d link-down drops for two parked generators, want at most 3", d)
	bounded(t, "Stop of a parked lossless generator", 10*time.Second, func() { _ = g2.Stop() })
	require.Zero(t, g2.Sent(), "sent %d refused %d, want 0 and 1 (the frame in hand at Stop)", g2.Sent(), g2.Refused())
	require.Equal(t, uint64(1), g2.Refused(), "sent %d refused %d, want 0 and 1 (the frame in hand at Stop)", g2.Sent(), g2.Refused())
	bounded(t, "Env.Close with a parked generator", 10*time.Second, func() {
		assert.NoError(t, env.Close())
	})
	require.Zero(t, g3.Sent(), "sent %d refused %d, want 0 and 1", g3.Sent(), g3.Refused())
	require.Equal(t, uint64(1), g3.Refused(), "sent %d refused %d, want 0 and 1", g3.Sent(), g3.Refused())
}

// Issue 20 §2 item 6: a generator whose Rate is so small that the next
// frame's time overflows a Duration waits for Stop instead of sending at
// full speed (the overflowed conversion used to make every due time lie
// in the past).
func TestGeneratorTinyRate(t *testing.T) {
	for _, rate := range []float64{1e-300, math.SmallestNonzeroFloat64, 1e-9} {
		sink := &simnic.Sink{}
		g := &simnic.Generator{Next: func(seq uint64, buf []byte) int { return 60 }, Rate: rate}
		require.NoError(t, g.Start(sink))
		testutil.Eventually(t, "frame 0", func() bool { return g.Sent() >= 1 })
		time.Sleep(10 * time.Millisecond) // the old overflow sent thousands meanwhile
		bounded(t, "Stop", 10*time.Second, func() { _ = g.Stop() })
		require.Equal(t, uint64(1), g.Sent(), "rate %g: sent %d frames, want 1 (frame 0 is due at once)", rate, g.Sent())
	}
}

// A Config beyond the ranges the device models is a *ConfigError naming the
// field.
func TestConfigDurationsRefused(t *testing.T) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 4 << 20})
	require.NoError(t, err)
	for field, cfg := range map[string]simnic.Config{
		"ITR":        {ITR: time.Second + 1},
		"WBDelay":    {WBDelay: math.MaxInt64},
		"DMALatency": {DMALatency: math.MaxInt64},
	} {
		_, err := simnic.New(space, cfg)
		var ce *simnic.ConfigError
		assert.False(t, !errors.As(err, &ce) || ce.Field != "Config."+field, "%s: %v, want a *ConfigError for it", field, err)
	}
}

// A generator's bad Rate is ErrGenConfig naming the field and the value.
func TestGeneratorConfigErrorNamesField(t *testing.T) {
	err := (&simnic.Generator{Next: func(uint64, []byte) int { return 60 }, Rate: math.Inf(1)}).Start(&simnic.Sink{})
	require.ErrorIs(t, err, simnic.ErrGenConfig, "Start with Rate +Inf: %v", err)
	require.Contains(t, err.Error(), "Rate +Inf", "Start with Rate +Inf: %v", err)
}

// refuser is an endpoint without WaitRoom that refuses everything.
type refuser struct{ calls atomic.Uint64 }

func (r *refuser) Receive([]byte) bool { r.calls.Add(1); return false }

// A lossless generator facing an endpoint without WaitRoom that refuses
// for ever backs off instead of spinning (its attempts over 50 ms stay in
// the hundreds, where a spin makes millions), and its Stop counts the
// frame in hand as refused: Sent + Refused is every frame offered.
func TestLosslessGeneratorBacksOff(t *testing.T) {
	r := &refuser{}
	g := &simnic.Generator{Next: func(uint64, []byte) int { return 60 }, Lossless: true}
	require.NoError(t, g.Start(r))
	time.Sleep(50 * time.Millisecond)
	bounded(t, "Stop", 10*time.Second, func() { _ = g.Stop() })
	n := r.calls.Load()
	require.LessOrEqual(t, n, uint64(5000), "%d attempts in 50 ms: the generator spins", n)
	require.Zero(t, g.Sent(), "sent %d refused %d, want 0 and 1", g.Sent(), g.Refused())
	require.Equal(t, uint64(1), g.Refused(), "sent %d refused %d, want 0 and 1", g.Sent(), g.Refused())
}

// The raw forwarder's Stop on a slow wire (LineRate 1 bit/s on the
// sending NIC) returns at once too: the device's pacer wait ends at stop.
func TestRawForwarderSlowWireStops(t *testing.T) {
	env := simnictest.NewEnv(t, simnictest.EnvOptions{Sim: busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20}})
	a, err := env.NewNIC(simnic.Config{Name: "rawa", NTxd: 64, NRxd: 64})
	require.NoError(t, err)
	b, err := env.NewNIC(simnic.Config{Name: "rawb", NTxd: 64, NRxd: 64, LineRate: 1, DMALatency: time.Millisecond})
	require.NoError(t, err)
	sink := &simnic.Sink{}
	b.SetPeer(sink)
	fwd, err := env.NewRawForwarder(a, b, simnic.RawConfig{})
	require.NoError(t, err)
	require.NoError(t, fwd.Start())
	buf := make([]byte, 100)
	for i := 0; i < 3; i++ {
		fillFrame(buf, 0, uint32(i))
		a.Receive(buf)
	}
	testutil.Eventually(t, "a frame forwarded", func() bool { return fwd.Stats().Forwarded >= 1 })
	time.Sleep(10 * time.Millisecond)
	bounded(t, "RawForwarder.Stop", 10*time.Second, fwd.Stop)
	bounded(t, "Env.Close", 10*time.Second, func() {
		assert.NoError(t, env.Close())
	})
	require.LessOrEqual(t, sink.Frames(), uint64(1), "%d frames on a wire that needs minutes for one", sink.Frames())
}
