package iflib_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
)

type env struct {
	t     *testing.T
	space *busdma.SimSpace
	nic   *simnic.NIC
	drv   *simnic.Driver
	ctx   *iflib.Context
	zone  *iflib.Zone
	sink  *simnic.Sink
}

func newEnv(t *testing.T, nc simnic.Config, cfg iflib.Config) (*env, error) {
	t.Helper()
	chk := busdmatest.NewChecker(t)
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 32 << 20, ContigSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	nc.Checker = chk
	nic, err := simnic.New(space, nc)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, space: space, nic: nic, sink: &simnic.Sink{}}
	nic.SetPeer(e.sink)
	if cfg.RxZoneSize == 0 {
		cfg.RxZoneSize = 1024 + 256
	}
	drv, err := nic.Attach(iflib.Attachment{Config: cfg})
	if err != nil {
		return nil, err
	}
	e.drv, e.ctx = drv, drv.Context()
	if e.zone, err = iflib.NewZone(space, "tx", iflib.MCLBytes, 4096); err != nil {
		t.Fatal(err)
	}
	return e, nil
}

func (e *env) pkt(size int) *iflib.Packet {
	p, err := e.zone.Get()
	if err != nil {
		e.t.Fatal(err)
	}
	p.SetLen(size)
	copy(p.Bytes(), []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45})
	p.Hdr.Len = size
	return p
}

// done detaches and checks the accounting: every packet home, no map loaded.
func (e *env) done() {
	e.t.Helper()
	if err := e.drv.Teardown(e.zone); err != nil {
		e.t.Fatal(err)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newEnv(t, tc.nc, tc.cfg)
			if !errors.Is(err, iflib.ErrConfig) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			var ce *iflib.ConfigError
			if !errors.As(err, &ce) || ce.Field == "" {
				t.Fatalf("err = %v does not name the field", err)
			}
		})
	}
	if _, err := iflib.Register(iflib.Attachment{}); !errors.Is(err, iflib.ErrConfig) {
		t.Fatalf("empty attachment: %v", err)
	}
	space, _ := busdma.NewSimSpace(busdma.SimConfig{})
	if _, err := iflib.NewZone(space, "z", 0, 10); !errors.Is(err, iflib.ErrConfig) {
		t.Fatalf("zero cluster size: %v", err)
	}
}

func TestTransmitBadInputAndLifecycle(t *testing.T) {
	e, err := newEnv(t, simnic.Config{}, iflib.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ctx.Transmit(nil); !errors.Is(err, iflib.ErrNilPacket) {
		t.Fatalf("nil: %v", err)
	}
	// Before Init: not running; the packet is freed.
	if err := e.ctx.Transmit(e.pkt(100)); !errors.Is(err, iflib.ErrNotRunning) {
		t.Fatalf("before init: %v", err)
	}
	if err := e.ctx.Init(); err != nil {
		t.Fatal(err)
	}
	empty := e.pkt(0)
	if err := e.ctx.Transmit(empty); !errors.Is(err, iflib.ErrEmptyPacket) {
		t.Fatalf("empty: %v", err)
	}
	// Larger than the TX tag's maxsize (65535): a chain of 40 × 2 KiB.
	var head *iflib.Packet
	for i := 0; i < 40; i++ {
		p := e.pkt(2048)
		p.Next = head
		head = p
	}
	head.Hdr.Len = head.ChainLen()
	if err := e.ctx.Transmit(head); !errors.Is(err, iflib.ErrTooBig) && !errors.Is(err, iflib.ErrNoMem) {
		t.Fatalf("oversize: %v", err)
	}
	// A header length that disagrees with the chain.
	bad := e.pkt(100)
	bad.Hdr.Len = 5000
	if err := e.ctx.Transmit(bad); err == nil {
		t.Fatal("inconsistent length accepted")
	}
	if err := e.ctx.Transmit(e.pkt(100)); err != nil {
		t.Fatalf("good packet: %v", err)
	}
	waitUntil(t, "good packet on the wire", func() bool { return e.sink.Frames() == 1 })
	if err := e.ctx.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := e.ctx.Transmit(e.pkt(100)); !errors.Is(err, iflib.ErrNotRunning) {
		t.Fatalf("after stop: %v", err)
	}
	if got := e.ctx.Counter(iflib.IfCounterOPackets); got != 1 {
		t.Fatalf("opackets = %d, want 1", got)
	}
	if got := e.ctx.Counter(iflib.IfCounterOQDrops) + e.ctx.Counter(iflib.IfCounterOErrors); got != 5 {
		t.Fatalf("oqdrops+oerrors = %d, want 5 (before-init, empty, oversize, bad length, after-stop)", got)
	}
	e.done()
	if err := e.ctx.Detach(); !errors.Is(err, iflib.ErrState) {
		t.Fatalf("second detach: %v", err)
	}
	if err := e.ctx.Init(); !errors.Is(err, iflib.ErrState) {
		t.Fatalf("init after detach: %v", err)
	}
}

// More segments than the TX tag allows (nsegments clamped to 4 here):
// the packet is collapsed or defragmented and still sent intact.
func TestDefragWhenTooManySegments(t *testing.T) {
	e, err := newEnv(t, simnic.Config{TxSegs: 4}, iflib.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	var mu sync.Mutex
	e.sink.Inspect = func(f []byte) { mu.Lock(); got = append([]byte(nil), f...); mu.Unlock() }
	if err := e.ctx.Init(); err != nil {
		t.Fatal(err)
	}
	var head, tail *iflib.Packet
	var want []byte
	for i := 0; i < 12; i++ { // 12 buffers of 100 bytes: more than 4 segments
		p, _ := e.zone.Get()
		b := make([]byte, 100)
		for j := range b {
			b[j] = byte(i*100 + j)
		}
		p.Append(b)
		want = append(want, b...)
		if head == nil {
			head = p
		} else {
			tail.Next = p
		}
		tail = p
	}
	head.Hdr.Len = len(want)
	if err := e.ctx.Transmit(head); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "frame on the wire", func() bool { return e.sink.Frames() == 1 })
	mu.Lock()
	if string(got) != string(want) {
		t.Fatalf("defragged frame differs")
	}
	mu.Unlock()
	if v, _ := e.ctx.SysctlValue("dev.simnic.0.iflib.txq0.collapses"); v.(uint64) == 0 {
		t.Fatal("no collapse counted")
	}
	e.done()
}

// Stop with traffic in flight in every mode: senders keep sending while
// Stop runs; afterwards every packet is back, no map is loaded, and every
// transmit is accounted for as sent, dropped or refused.
func TestStopWithTrafficInFlight(t *testing.T) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		t.Run(mode.String(), func(t *testing.T) {
			before := runtime.NumGoroutine()
			e, err := newEnv(t, simnic.Config{LineRate: 2e9}, iflib.Config{TxMode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.ctx.Init(); err != nil {
				t.Fatal(err)
			}
			var ok, failed atomic.Uint64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for s := 0; s < 8; s++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := e.zone.NewCache()
					defer c.Flush()
					for {
						select {
						case <-stop:
							return
						default:
						}
						p, err := c.Get()
						if err != nil {
							time.Sleep(10 * time.Microsecond)
							continue
						}
						p.SetLen(600)
						p.Hdr.Len = 600
						if e.ctx.Transmit(p) == nil {
							ok.Add(1)
						} else {
							failed.Add(1)
						}
					}
				}()
			}
			time.Sleep(30 * time.Millisecond)
			if err := e.ctx.Stop(); err != nil {
				t.Fatal(err)
			}
			close(stop)
			wg.Wait()
			sent := e.ctx.Counter(iflib.IfCounterOPackets)
			drops := e.ctx.Counter(iflib.IfCounterOQDrops) + e.ctx.Counter(iflib.IfCounterOErrors)
			if sent+drops < ok.Load()+failed.Load() || ok.Load() == 0 {
				t.Fatalf("accepted %d refused %d, but opackets %d + drops %d", ok.Load(), failed.Load(), sent, drops)
			}
			if e.sink.Frames() > sent {
				t.Fatalf("wire saw %d frames, iflib encapsulated %d", e.sink.Frames(), sent)
			}
			e.done()
			// No goroutine left: the queue tasks, the timer, the admin
			// task and the device model all ended with Detach.
			waitUntil(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
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
	if err != nil {
		t.Fatal(err)
	}
	bus, err := busdma.NewDevice(space, busdma.DeviceConfig{Checker: busdmatest.NewChecker(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = iflib.Register(iflib.Attachment{Driver: zeroQueues{}, Shared: simnic.Shared(simnic.Config{}), Bus: bus})
	var ce *iflib.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Field, "QSetsMax") {
		t.Fatalf("zero queues: %v", err)
	}
	if err := bus.Close(); err != nil {
		t.Fatalf("nothing may stay loaded after a failed attach: %v", err)
	}
}
