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

// Issue 11 item 26: an impossible Config is a *ConfigError, never a panic.
func TestNewRejectsBadConfig(t *testing.T) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 4 << 20})
	require.NoError(t, err)
	for name, cfg := range map[string]simnic.Config{
		"MaxFrame -1":       {MaxFrame: -1},
		"MaxFrame 30":       {MaxFrame: 30},
		"MaxFrame 1<<20":    {MaxFrame: 1 << 20},
		"FIFO -4":           {FIFO: -4},
		"FIFO 3":            {FIFO: 3},
		"FIFO huge":         {FIFO: 1 << 30},
		"Queues -1":         {Queues: -1},
		"Queues 1000":       {Queues: 1000},
		"NTxd -1":           {NTxd: -1},
		"NRxd 1<<20":        {NRxd: 1 << 20},
		"RxBufSize 16":      {RxBufSize: 16},
		"RxBufSize -2048":   {RxBufSize: -2048},
		"TxSegs 0 (neg)":    {TxSegs: -3},
		"TxSegs 129":        {TxSegs: 129},
		"TSOSegs -1":        {TSOSegs: -1},
		"TSOSegs 129":       {TSOSegs: 129},
		"LineRate NaN":      {LineRate: math.NaN()},
		"FrameRate -1":      {FrameRate: -1},
		"LineRate Inf":      {LineRate: math.Inf(1)},
		"ITR negative":      {ITR: -time.Millisecond},
		"Unit negative":     {Unit: -1},
		"RxBufSize 1 << 20": {RxBufSize: 1 << 20},
	} {
		n, err := simnic.New(space, cfg)
		var ce *simnic.ConfigError
		assert.False(t, !errors.Is(err, simnic.ErrConfig) || !errors.As(err, &ce) || n != nil, "%s: New = %v, %v; want a *ConfigError", name, n, err)
	}
	_, err = simnic.New(nil, simnic.Config{})
	assert.ErrorIs(t, err, simnic.ErrConfig, "nil space: %v, want ErrConfig", err)
	// Sizes iflib refuses (not a power of two) are the device's to accept.
	if n, err := simnic.New(space, simnic.Config{NTxd: 1000, NRxd: 100}); assert.NoError(t, err, "NTxd 1000") {
		_ = n.Bus().Close()
	}
}

// Issue 11 item 26: the generator's lifecycle misuse gets typed errors
// instead of a panic, a hang or a killed process.
func TestGeneratorLifecycleErrors(t *testing.T) {
	g := &simnic.Generator{Next: func(seq uint64, buf []byte) int { return 60 }, Count: 10}
	done := make(chan error, 2)
	go func() { done <- g.Stop() }()
	go func() { done <- g.Wait() }()
	for i := 0; i < 2; i++ {
		select {
		case err := <-done:
			assert.ErrorIs(t, err, simnic.ErrGenNotStarted, "Stop/Wait before Start: %v, want ErrGenNotStarted", err)
		case <-time.After(5 * time.Second):
			require.FailNow(t, "Stop or Wait before Start hangs")
		}
	}
	sink := &simnic.Sink{}
	require.NoError(t, g.Start(sink))
	err := g.Start(sink)
	assert.ErrorIs(t, err, simnic.ErrGenStarted, "second Start: %v, want ErrGenStarted", err)
	require.NoError(t, g.Wait())
	assert.NoError(t, g.Stop(), "Stop after the end")
	assert.NoError(t, g.Stop(), "second Stop")
	assert.False(t, sink.Frames() != 10 || g.Sent() != 10, "sent %d, sink %d; want 10", g.Sent(), sink.Frames())
	for name, bad := range map[string]*simnic.Generator{
		"nil Next": {},
		"NaN rate": {Next: g.Next, Rate: math.NaN()},
		"neg rate": {Next: g.Next, Rate: -1},
	} {
		err := bad.Start(sink)
		assert.ErrorIs(t, err, simnic.ErrGenConfig, "%s: %v, want ErrGenConfig", name, err)
	}
	err = (&simnic.Generator{Next: g.Next}).Start(nil)
	assert.ErrorIs(t, err, simnic.ErrGenConfig, "nil endpoint: %v, want ErrGenConfig", err)
}

// Issue 11 item 26: a NIC is bound to one driver; a second Attach is
// ErrBusy, and after Detach the NIC can be attached again.
func TestAttachTwiceIsBusy(t *testing.T) {
	env := simnictest.NewEnv(t, simnictest.EnvOptions{})
	n, err := env.NewNIC(simnic.Config{NTxd: 256, NRxd: 256})
	require.NoError(t, err)
	cfg := iflib.Config{RxZoneSize: 600}
	d, err := env.Attach(n, iflib.Attachment{Config: cfg})
	require.NoError(t, err)
	require.NoError(t, d.Context().Init())
	_, err = env.Attach(n, iflib.Attachment{Config: cfg})
	require.ErrorIs(t, err, simnic.ErrBusy, "second Attach: %v, want ErrBusy", err)
	require.NoError(t, d.Context().Detach())
	d2, err := env.Attach(n, iflib.Attachment{Config: cfg})
	require.NoError(t, err, "Attach after Detach")
	require.NoError(t, d2.Context().Init())
}

// Issue 11 item 25: a 30000-byte frame without TSO is refused at Transmit
// and counted, in every TX mode; nothing of it reaches the wire.
func TestOversizeFrameRefused(t *testing.T) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		t.Run(mode.String(), func(t *testing.T) {
			r, rec := newRig(t, simnictest.Options{Config: iflib.Config{TxMode: mode}}, true)
			big := make([]byte, 30000)
			fillFrame(big, 0, 1)
			err := r.Ctx.Transmit(r.Packet(big, 15))
			require.Error(t, err, "a 30000-byte frame without TSO was accepted")
			small := make([]byte, 100)
			fillFrame(small, 0, 2)
			require.NoError(t, r.Ctx.Transmit(r.Packet(small, 1)))
			testutil.Eventually(t, "the small frame", func() bool { return rec.Len() >= 1 })
			time.Sleep(5 * time.Millisecond)
			got := rec.Frames()
			require.Len(t, got, 1, "wire got %d frames, want only the 100-byte one", len(got))
			require.Len(t, got[0], 100, "wire got a %d-byte frame, want only the 100-byte one", len(got[0]))
			oe := r.Ctx.Counter(iflib.IfCounterOErrors)
			require.Equal(t, uint64(1), oe, "oerrors %d, want 1", oe)
			st := r.NIC.Stats()
			require.False(t, st.TxFrames != 1 || st.TxTooLong != 0, "device stats %+v", st)
		})
	}
}

// wrapDriver is a Device between iflib and simnic's driver (AttachWith):
// it delegates everything by embedding, and its AttachPre may change the
// softc context and call driver methods early.
type wrapDriver struct {
	*simnic.Driver
	qsets   int   // if set, the queue sets iflib uses (fewer than the NIC has)
	initErr error // the driver's Init called from AttachPre, before its rings exist
}

func (w *wrapDriver) AttachPre(ic *iflib.Context, sc *iflib.SoftcCtx) error {
	if err := w.Driver.AttachPre(ic, sc); err != nil {
		return err
	}
	if w.qsets > 0 {
		sc.NTxQSets, sc.NRxQSets = w.qsets, w.qsets
	}
	w.initErr = w.Driver.Init(ic)
	return nil
}

// AttachWith puts a wrapper between iflib and the driver. A driver that
// uses fewer queues than the NIC has gets every frame on the queues it
// programmed (receive side scaling spreads over those only); Init before
// the rings exist is an error, not a panic; a wrap that returns nil is a
// *ConfigError and leaves the NIC free.
func TestAttachWith(t *testing.T) {
	env := simnictest.NewEnv(t, simnictest.EnvOptions{})
	n, err := env.NewNIC(simnic.Config{NTxd: 256, NRxd: 256, Queues: 4})
	require.NoError(t, err)
	var ce *simnic.ConfigError
	_, err = env.AttachWith(n, iflib.Attachment{}, func(*simnic.Driver, *iflib.SharedCtx) iflib.Device { return nil })
	require.True(t, errors.As(err, &ce), "a nil wrapper: %v, want a *ConfigError", err)
	var w *wrapDriver
	var got atomic.Uint64
	input := func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
		for _, m := range pkts {
			m.Free()
		}
		got.Add(uint64(len(pkts)))
	}
	d, err := env.AttachWith(n, iflib.Attachment{Config: iflib.Config{RxZoneSize: 600}, Input: input},
		func(d *simnic.Driver, sh *iflib.SharedCtx) iflib.Device {
			w = &wrapDriver{Driver: d, qsets: 1}
			return w
		})
	require.NoError(t, err)
	require.Error(t, w.initErr, "Init before the rings were allocated succeeded")
	nq := d.Context().NumTxQueues()
	require.Equal(t, 1, nq, "%d TX queues, want 1", nq)
	require.NoError(t, d.Context().Init())
	const frames = 64
	for i := 0; i < frames; i++ {
		f := simnictest.FrameSpec{Flow: uint32(i), Seq: uint32(i), Len: 100}.Build(nil)
		for !n.Receive(f) {
			time.Sleep(time.Millisecond)
		}
	}
	testutil.Eventually(t, "every frame on the one queue in use", func() bool { return got.Load() == frames })
}

// moreSetsDriver reports more queue sets than the NIC has (a wrapper
// raising NTxQSetsMax or NRxQSetsMax behind simnic's back).
type moreSetsDriver struct {
	*simnic.Driver
	tx, rx int
}

func (w *moreSetsDriver) AttachPre(ic *iflib.Context, sc *iflib.SoftcCtx) error {
	if err := w.Driver.AttachPre(ic, sc); err != nil {
		return err
	}
	if w.tx > 0 {
		sc.NTxQSetsMax = w.tx
	}
	if w.rx > 0 {
		sc.NRxQSetsMax = w.rx
	}
	return nil
}

// A driver given more queue sets than its NIC has refuses them in
// IFDI_TX/RX_QUEUES_ALLOC with a *ConfigError naming the argument; before,
// it accepted them and TxdCreditsUpdate or RxdAvailable indexed past the
// device's queues (a panic in the TX task; FuzzModel's finding). The NIC is
// free again afterwards.
func TestDriverRefusesMoreQueueSetsThanNIC(t *testing.T) {
	for _, tc := range []struct {
		name, field string
		tx, rx      int
	}{
		{"tx", "ntxqsets", 5, 0},
		{"rx", "nrxqsets", 0, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := simnictest.NewEnv(t, simnictest.EnvOptions{})
			n, err := env.NewNIC(simnic.Config{NTxd: 64, NRxd: 64, Queues: 1})
			require.NoError(t, err)
			wrap := func(d *simnic.Driver, _ *iflib.SharedCtx) iflib.Device {
				return &moreSetsDriver{Driver: d, tx: tc.tx, rx: tc.rx}
			}
			cfg := iflib.Config{RxZoneSize: 256}
			d, err := env.AttachWith(n, iflib.Attachment{Config: cfg}, wrap)
			if err == nil {
				// iflib allocates the queues at Register or at Init: either
				// refuses.
				err = d.Context().Init()
			}
			require.Error(t, err)
			var ce *simnic.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field)
			assert.Equal(t, 5, ce.Value)
			assert.ErrorIs(t, err, simnic.ErrConfig)
			assert.Contains(t, err.Error(), tc.field+" = 5")
			if d == nil {
				// Register failed: the NIC was released.
				d2, err := env.Attach(n, iflib.Attachment{Config: cfg})
				require.NoError(t, err)
				require.NoError(t, d2.Context().Init())
			}
		})
	}
}
