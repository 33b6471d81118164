package iflib_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// env is one simnic attached to iflib through the shared rig
// (simnictest), with a TX zone and a sink; its teardown checks everything.
type env struct {
	t    *testing.T
	se   *simnictest.Env
	nic  *simnic.NIC
	drv  *simnic.Driver
	ctx  *iflib.Context
	zone *iflib.Zone
	sink *simnic.Sink
}

func newEnv(t *testing.T, nc simnic.Config, cfg iflib.Config) (*env, error) {
	t.Helper()
	se := simnictest.NewEnv(t, simnictest.EnvOptions{Sim: busdma.SimConfig{Size: 32 << 20, ContigSize: 1 << 20}})
	nic, err := se.NewNIC(nc)
	require.NoError(t, err)
	e := &env{t: t, se: se, nic: nic, sink: &simnic.Sink{}}
	nic.SetPeer(e.sink)
	if cfg.RxZoneSize == 0 {
		cfg.RxZoneSize = 1024 + 256
	}
	drv, err := se.Attach(nic, iflib.Attachment{Config: cfg})
	if err != nil {
		return nil, err
	}
	e.drv, e.ctx = drv, drv.Context()
	e.zone, err = se.NewZone("tx", iflib.MCLBytes, 4096)
	require.NoError(t, err)
	return e, nil
}

func (e *env) pkt(size int) *iflib.Packet {
	p, err := e.zone.Get()
	require.NoError(e.t, err)
	p.SetLen(size)
	copy(p.Bytes(), []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45})
	p.Hdr.Len = size
	return p
}

// done tears the rig down and checks the books: every packet home, no map
// loaded, no checker report, no goroutine left.
func (e *env) done() {
	e.t.Helper()
	require.NoError(e.t, e.se.Close())
}

func TestBadConfiguration(t *testing.T) {
	for _, tc := range []struct {
		name string
		nc   simnic.Config
		cfg  iflib.Config
	}{
		{"ring not a power of two", simnic.Config{NTxd: 1000}, iflib.Config{}},
		{"rx ring not a power of two", simnic.Config{NRxd: 100}, iflib.Config{}},
		{"negative rx budget", simnic.Config{}, iflib.Config{RxBudget: -1}},
		{"reclaim threshold above ntxd/2", simnic.Config{}, iflib.Config{TxReclaimThresh: 100000}},
		{"unknown mode", simnic.Config{}, iflib.Config{TxMode: 9}},
		{"drbr size", simnic.Config{}, iflib.Config{TxMode: iflib.TxModeDRBR, DRBRSize: 1000}},
		{"negative zone", simnic.Config{}, iflib.Config{RxZoneSize: -5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newEnv(t, tc.nc, tc.cfg)
			require.ErrorIs(t, err, iflib.ErrConfig)
			var ce *iflib.ConfigError
			require.True(t, errors.As(err, &ce))
			require.NotEmpty(t, ce.Field, "the error names the field")
		})
	}
	_, err := iflib.Register(iflib.Attachment{})
	require.ErrorIs(t, err, iflib.ErrConfig)
	space, err := busdma.NewSimSpace(busdma.SimConfig{})
	require.NoError(t, err)
	_, err = iflib.NewZone(space, "z", 0, 10)
	require.ErrorIs(t, err, iflib.ErrConfig)
}

func TestTransmitBadInputAndLifecycle(t *testing.T) {
	e, err := newEnv(t, simnic.Config{}, iflib.Config{})
	require.NoError(t, err)
	require.ErrorIs(t, e.ctx.Transmit(nil), iflib.ErrNilPacket)
	// Before Init: not running; the packet is freed.
	require.ErrorIs(t, e.ctx.Transmit(e.pkt(100)), iflib.ErrNotRunning)
	require.NoError(t, e.ctx.Init())
	require.ErrorIs(t, e.ctx.Transmit(e.pkt(0)), iflib.ErrEmptyPacket)
	// Larger than the TX tag's maxsize (65535): a chain of 40 × 2 KiB.
	head, err := e.zone.GetChain(make([]byte, 40*2048), 0)
	require.NoError(t, err)
	require.Equal(t, 40, head.NumBufs())
	require.ErrorIs(t, e.ctx.Transmit(head), iflib.ErrTooBig)
	// A header length that disagrees with the chain.
	bad := e.pkt(100)
	bad.Hdr.Len = 5000
	require.ErrorIs(t, e.ctx.Transmit(bad), iflib.ErrBadLength)
	require.NoError(t, e.ctx.Transmit(e.pkt(100)))
	testutil.Eventually(t, "good packet on the wire", func() bool { return e.sink.Frames() == 1 })
	require.NoError(t, e.ctx.Stop())
	require.ErrorIs(t, e.ctx.Transmit(e.pkt(100)), iflib.ErrNotRunning)
	require.Equal(t, uint64(1), e.ctx.Counter(iflib.IfCounterOPackets))
	require.Equal(t, uint64(5), e.ctx.Counter(iflib.IfCounterOQDrops)+e.ctx.Counter(iflib.IfCounterOErrors),
		"before-init, empty, oversize, bad length, after-stop")
	require.NoError(t, e.ctx.Detach())
	require.ErrorIs(t, e.ctx.Detach(), iflib.ErrDetached, "second detach")
	require.ErrorIs(t, e.ctx.Init(), iflib.ErrDetached, "init after detach")
	e.done()
}

// More segments than the TX tag allows (nsegments clamped to 4 here):
// the packet is collapsed or defragmented and still sent intact.
func TestDefragWhenTooManySegments(t *testing.T) {
	e, err := newEnv(t, simnic.Config{TxSegs: 4}, iflib.Config{})
	require.NoError(t, err)
	var got []byte
	var mu sync.Mutex
	e.sink.Inspect = func(f []byte) { mu.Lock(); got = append([]byte(nil), f...); mu.Unlock() }
	require.NoError(t, e.ctx.Init())
	head, want := chain(t, e.zone, 12, 100) // 12 buffers: more than 4 segments
	require.NoError(t, e.ctx.Transmit(head))
	testutil.Eventually(t, "frame on the wire", func() bool { return e.sink.Frames() == 1 })
	mu.Lock()
	require.Equal(t, want, got, "defragged frame differs")
	mu.Unlock()
	v, _ := e.ctx.SysctlValue("dev.simnic.0.iflib.txq0.collapses")
	require.NotZero(t, v, "no collapse counted")
	e.done()
}

// Stop with traffic in flight in every mode: senders keep sending while
// Stop runs; afterwards every packet is back, no map is loaded, no
// goroutine is left, and every transmit is accounted for as sent, dropped
// or refused.
func TestStopWithTrafficInFlight(t *testing.T) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		t.Run(mode.String(), func(t *testing.T) {
			e, err := newEnv(t, simnic.Config{LineRate: 2e9}, iflib.Config{TxMode: mode})
			require.NoError(t, err)
			require.NoError(t, e.ctx.Init())
			var handed, ok atomic.Uint64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			txSenders(&wg, e.ctx, e.zone, 8, -1, 600, stop, &handed, &ok)
			time.Sleep(30 * time.Millisecond)
			require.NoError(t, e.ctx.Stop())
			close(stop)
			wg.Wait()
			st, _ := e.ctx.TxQueueStats(0)
			require.NotZero(t, ok.Load())
			// Every transmit: encapsulated (then sent, or discarded by Stop
			// and counted in stop_discards), or dropped and counted: refused
			// at the call, or purged from the software ring by Stop.
			require.Equal(t, handed.Load(), st.OPackets+st.OQDrops+st.OErrors, "every transmit accounted for")
			require.LessOrEqual(t, e.sink.Frames()+st.StopDiscards, st.OPackets+st.StopDiscards)
			require.GreaterOrEqual(t, e.sink.Frames()+st.StopDiscards, st.OPackets, "encapsulated packets neither sent nor counted")
			e.done() // the rig checks zones, maps and goroutines
		})
	}
}

// zeroQueues is a driver whose AttachPre reports no queues.
type zeroQueues struct{ iflib.TxRx }

func (zeroQueues) AttachPre(_ *iflib.Context, sc *iflib.SoftcCtx) error {
	sc.NTxQSetsMax, sc.NRxQSetsMax = 0, 0
	sc.TxRx = zeroQueues{}
	return nil
}
func (zeroQueues) TxQueuesAlloc([]iflib.RingMem, int, int) error { return nil }
func (zeroQueues) RxQueuesAlloc([]iflib.RingMem, int, int) error { return nil }
func (zeroQueues) Init(*iflib.Context) error                     { return nil }
func (zeroQueues) Stop(*iflib.Context)                           {}
func (zeroQueues) IntrEnable(*iflib.Context)                     {}
func (zeroQueues) IntrDisable(*iflib.Context)                    {}
func (zeroQueues) Detach(*iflib.Context) error                   { return nil }

func TestZeroQueuesRejected(t *testing.T) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{})
	require.NoError(t, err)
	bus, err := busdma.NewDevice(space, busdma.DeviceConfig{Checker: busdmatest.NewChecker(t)})
	require.NoError(t, err)
	_, err = iflib.Register(iflib.Attachment{Driver: zeroQueues{}, Shared: simnic.Shared(simnic.Config{}), Bus: bus})
	var ce *iflib.ConfigError
	require.True(t, errors.As(err, &ce))
	require.Contains(t, ce.Field, "QSetsMax")
	require.NoError(t, bus.Close(), "nothing may stay loaded after a failed attach")
	require.Zero(t, space.Allocated(), "nothing may stay allocated after a failed attach")
}
