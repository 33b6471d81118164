package simnic_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// rawRig is two NICs on one Env, a raw forwarder from A's wire to B's,
// and B's wire ending in a sink. The Env's teardown closes the forwarder
// and checks the books.
type rawRig struct {
	env  *simnictest.Env
	a, b *simnic.NIC
	fwd  *simnic.RawForwarder
	sink *simnic.Sink
}

func newRawRig(tb testing.TB, eo simnictest.EnvOptions, cfg simnic.RawConfig) *rawRig {
	tb.Helper()
	env := simnictest.NewEnv(tb, eo)
	a, err := env.NewNIC(simnic.Config{Name: "rawa"})
	if err != nil {
		tb.Fatal(err)
	}
	b, err := env.NewNIC(simnic.Config{Name: "rawb"})
	if err != nil {
		tb.Fatal(err)
	}
	r := &rawRig{env: env, a: a, b: b, sink: &simnic.Sink{}}
	b.SetPeer(r.sink)
	if r.fwd, err = env.NewRawForwarder(a, b, cfg); err != nil {
		tb.Fatal(err)
	}
	return r
}

// close tears the Env down now, reporting every problem.
func (r *rawRig) close(tb testing.TB) {
	tb.Helper()
	if err := r.env.Close(); err != nil {
		tb.Error(err)
	}
}

// rawFrame is frame seq of the raw tests: its bytes are a function of seq.
func rawFrame(buf []byte, size int, seq uint32) []byte {
	b := buf[:size]
	fillFrame(b, seq%7, seq)
	if size >= 50 {
		binary.BigEndian.PutUint32(b[46:50], seq)
	}
	return b
}

// forwardAndCheck pushes n frames of the given sizes into A (retrying
// while A's FIFO is full) and checks that each arrives at B's sink exactly
// once and byte for byte.
func forwardAndCheck(t *testing.T, r *rawRig, n int, sizes []int) {
	t.Helper()
	var mu sync.Mutex
	seen := make([]int, n)
	bad := 0
	want := make([]byte, 16384)
	r.sink.Inspect = func(f []byte) {
		mu.Lock()
		defer mu.Unlock()
		if len(f) < 50 {
			bad++
			return
		}
		seq := binary.BigEndian.Uint32(f[46:50])
		if int(seq) >= n || !bytes.Equal(f, rawFrame(want, sizes[int(seq)%len(sizes)], seq)) {
			bad++
			return
		}
		seen[seq]++
	}
	if err := r.fwd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16384)
	for i := 0; i < n; i++ {
		f := rawFrame(buf, sizes[i%len(sizes)], uint32(i))
		for !r.a.Receive(f) {
			runtime.Gosched()
		}
	}
	waitFor(t, "frames at B's sink", func() bool { return r.sink.Frames() >= uint64(n) })
	time.Sleep(5 * time.Millisecond) // a duplicate would show up now
	r.fwd.Stop()
	mu.Lock()
	defer mu.Unlock()
	if bad != 0 {
		t.Fatalf("%d frames corrupted or unknown", bad)
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("frame %d arrived %d times", i, c)
		}
	}
	st := r.fwd.Stats()
	if st.Forwarded != uint64(n) || st.Received != uint64(n) || st.Errors != 0 {
		t.Fatalf("stats %+v, want %d received and forwarded", st, n)
	}
	if st.Completed == 0 || st.Doorbells == 0 {
		t.Fatalf("stats %+v: no completions or doorbells", st)
	}
}

func TestRawForwardIntact(t *testing.T) {
	n := 4000
	if testing.Short() || raceEnabled {
		n = 1000
	}
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"64B", []int{64}},
		{"mixed", []int{60, 64, 128, 129, 1500, 2048}},
		{"jumbo-multifrag", []int{2049, 4000, 9000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRawRig(t, simnictest.EnvOptions{Sim: busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20}}, simnic.RawConfig{})
			count := n
			if tc.name == "jumbo-multifrag" {
				count = n / 4
			}
			forwardAndCheck(t, r, count, tc.sizes)
			r.close(t)
		})
	}
}

// TestRawForwardIOMMU runs the raw loop behind the IOMMU model: every
// cluster is mapped once on each device's domain, and no access faults.
func TestRawForwardIOMMU(t *testing.T) {
	r := newRawRig(t, simnictest.EnvOptions{IOMMU: true, Sim: busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20}},
		simnic.RawConfig{Batch: 16, Buffers: 512})
	space := r.env.IOMMU
	forwardAndCheck(t, r, 2000, []int{64, 1000})
	// Restart after a stop: the rings are reprogrammed, the buffers reposted.
	r.sink.Inspect = nil
	if err := r.fwd.Start(); err != nil {
		t.Fatal(err)
	}
	before := r.sink.Frames()
	buf := make([]byte, 64)
	for i := 0; i < 500; i++ {
		for !r.a.Receive(rawFrame(buf, 64, uint32(i))) {
			runtime.Gosched()
		}
	}
	waitFor(t, "frames after restart", func() bool { return r.sink.Frames() >= before+500 })
	r.close(t)
	st := space.Stats()
	if want := uint64(2*512 + 4); st.Maps != want {
		t.Fatalf("%d IOMMU maps of clusters and rings, want %d (static mappings: one per cluster per device, plus 4 rings)", st.Maps, want)
	}
}

func TestRawForwarderBadConfig(t *testing.T) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	other, err := busdma.NewSimSpace(busdma.SimConfig{})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(s busdma.Space, cfg simnic.Config) *simnic.NIC {
		n, err := simnic.New(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := mk(space, simnic.Config{})
	for name, tc := range map[string]struct {
		rx, tx *simnic.NIC
		cfg    simnic.RawConfig
	}{
		"same NIC":     {a, a, simnic.RawConfig{}},
		"nil":          {a, nil, simnic.RawConfig{}},
		"two spaces":   {a, mk(other, simnic.Config{}), simnic.RawConfig{}},
		"multi-queue":  {a, mk(space, simnic.Config{Queues: 2}), simnic.RawConfig{}},
		"odd ring":     {a, mk(space, simnic.Config{NTxd: 1000}), simnic.RawConfig{}},
		"neg batch":    {a, mk(space, simnic.Config{}), simnic.RawConfig{Batch: -1}},
		"one buffer":   {a, mk(space, simnic.Config{}), simnic.RawConfig{Buffers: 1}},
		"huge buffers": {a, mk(space, simnic.Config{}), simnic.RawConfig{Buffers: 1 << 21}},
	} {
		if _, err := simnic.NewRawForwarder(tc.rx, tc.tx, tc.cfg); !errors.Is(err, simnic.ErrRawConfig) {
			t.Errorf("%s: err %v, want ErrRawConfig", name, err)
		}
	}
	// Lifecycle errors: double start, a device already driven, use after close.
	r := newRawRig(t, simnictest.EnvOptions{Sim: busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20}}, simnic.RawConfig{Buffers: 64})
	if err := r.fwd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.fwd.Start(); !errors.Is(err, simnic.ErrRawBusy) {
		t.Errorf("second Start: %v, want ErrRawBusy", err)
	}
	c, err := r.env.NewNIC(simnic.Config{Name: "rawc"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := simnic.NewRawForwarder(r.a, c, simnic.RawConfig{Buffers: 64}); !errors.Is(err, simnic.ErrRawBusy) || !errors.Is(err, simnic.ErrBusy) {
		t.Errorf("a second forwarder on a driven NIC: %v, want ErrRawBusy and ErrBusy", err)
	}
	// iflib cannot take a NIC a raw forwarder drives (issue: Init used to
	// succeed and reprogram the running device).
	if _, err := r.env.Attach(r.b, iflib.Attachment{}); !errors.Is(err, simnic.ErrBusy) {
		t.Errorf("Attach of a NIC a raw forwarder drives: %v, want ErrBusy", err)
	}
	// c is free: the failed forwarder released what it had claimed.
	d, err := r.env.Attach(c, iflib.Attachment{Config: iflib.Config{RxZoneSize: 600}})
	if err != nil {
		t.Fatalf("Attach of a free NIC after a refused forwarder: %v", err)
	}
	if _, err := simnic.NewRawForwarder(c, r.b, simnic.RawConfig{Buffers: 64}); !errors.Is(err, simnic.ErrBusy) {
		t.Errorf("a forwarder on an attached NIC: %v, want ErrBusy", err)
	}
	if err := d.Context().Detach(); err != nil {
		t.Fatal(err)
	}
	r.close(t)
	if err := r.fwd.Start(); !errors.Is(err, simnic.ErrRawClosed) {
		t.Errorf("Start after Close: %v, want ErrRawClosed", err)
	}
	if err := r.fwd.Close(); !errors.Is(err, simnic.ErrRawClosed) {
		t.Errorf("second Close: %v, want ErrRawClosed", err)
	}
}

// BenchmarkRaw is the raw loop alone: 64-byte frames pushed into A's FIFO
// as fast as it takes them, b.N frames forwarded to B's sink.
func BenchmarkRaw(b *testing.B) {
	r := newRawRig(b, simnictest.EnvOptions{NoChecker: true, Sim: busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20}}, simnic.RawConfig{})
	if err := r.fwd.Start(); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 64)
	f := rawFrame(buf, 64, 1)
	b.ReportAllocs()
	b.ResetTimer()
	start := r.sink.Frames()
	t0 := time.Now()
	refused := 0
	for i := 0; i < b.N; i++ {
		for !r.a.Receive(f) {
			refused++
			r.a.WaitRoom(f, nil) // park until the device pops a frame
		}
	}
	for r.sink.Frames()-start < uint64(b.N) {
		runtime.Gosched()
	}
	el := time.Since(t0)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds()/1e6, "Mpps")
	b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
	r.close(b)
}

// Issue 17 item 3: a multi-descriptor frame with one bad fragment is
// dropped whole and counted; it is never forwarded as a shorter frame.
// Every other frame arrives whole.
func TestRawForwardDropsBadFrameWhole(t *testing.T) {
	r := newRawRig(t, simnictest.EnvOptions{Sim: busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20}}, simnic.RawConfig{})
	rec := &simnictest.Recorder{}
	r.b.SetPeer(rec)
	if err := r.fwd.Start(); err != nil {
		t.Fatal(err)
	}
	const n, size = 40, 5000 // three 2048-byte descriptors per frame
	buf := make([]byte, size)
	for i := 0; i < n; i++ {
		if i == n/2 {
			// The device writes back a bad length in the first
			// descriptor of this frame; its other two are fine.
			r.a.InjectRxBadLength()
		}
		f := rawFrame(buf, size, uint32(i))
		for !r.a.Receive(f) {
			runtime.Gosched()
		}
	}
	waitFor(t, "every frame handled", func() bool {
		st := r.fwd.Stats()
		return st.Forwarded+st.Errors >= n
	})
	waitFor(t, "the forwarded frames on the wire", func() bool { return rec.Len() >= n-1 })
	time.Sleep(5 * time.Millisecond)
	want := make([]byte, size)
	seen := map[uint32]bool{}
	for _, f := range rec.Frames() {
		seq := binary.BigEndian.Uint32(f[46:50])
		if len(f) != size || !bytes.Equal(f, rawFrame(want, size, seq)) {
			t.Fatalf("frame %d arrived as %d bytes (want %d, intact)", seq, len(f), size)
		}
		seen[seq] = true
	}
	if st := r.fwd.Stats(); st.Forwarded != n-1 || st.Errors != 1 || st.Received != n {
		t.Fatalf("stats %+v: want %d received, %d forwarded, 1 error", st, n, n-1)
	}
	// The injection hits whichever frame the device writes next, not
	// necessarily frame n/2: exactly one is missing.
	if len(seen) != n-1 {
		t.Fatalf("%d distinct frames arrived, want %d", len(seen), n-1)
	}
}

// Issue 20 §2 item 8: the forwarder restarted after stops under late and
// batched write-backs, in DD and head write-back modes, never lets the
// device touch memory outside a mapping (the env's checker reports any
// such access, and every missing sync, at Close) and loses no buffer.
// Before the fix, Start cleared rings still holding the last write-backs
// without a POSTREAD (the device then read an old write-back's hash as a
// buffer address), and in head write-back mode the head was written past
// the end of the forwarder's TX ring.
func TestRawRestartUnderLateWriteBacks(t *testing.T) {
	for name, cfg := range map[string]simnic.Config{
		"batched":             {WBThresh: 8, WBDelay: 200 * time.Microsecond},
		"late":                {WBDelay: 100 * time.Microsecond},
		"held-until-stop":     {WBThresh: 32, WBDelay: time.Second},
		"headwb":              {TxCompletion: simnic.TxCompletionHeadWB},
		"headwb-batched":      {TxCompletion: simnic.TxCompletionHeadWB, WBThresh: 8},
		"under-by-one-late":   {TxCompletion: simnic.TxCompletionDDUnderByOne, WBDelay: 50 * time.Microsecond},
		"headwb-held-to-stop": {TxCompletion: simnic.TxCompletionHeadWB, WBThresh: 32, WBDelay: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			env := simnictest.NewEnv(t, simnictest.EnvOptions{Sim: busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20}})
			ca, cb := cfg, cfg
			ca.Name, cb.Name = "rawa", "rawb"
			ca.NRxd, ca.NTxd, cb.NRxd, cb.NTxd = 64, 64, 64, 64
			a, err := env.NewNIC(ca)
			if err != nil {
				t.Fatal(err)
			}
			b, err := env.NewNIC(cb)
			if err != nil {
				t.Fatal(err)
			}
			sink := &simnic.Sink{}
			b.SetPeer(sink)
			fwd, err := env.NewRawForwarder(a, b, simnic.RawConfig{Batch: 8})
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 128)
			sent := 0
			for round := 0; round < 6; round++ {
				if err := fwd.Start(); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 50+round*7; i++ {
					for !a.Receive(rawFrame(buf, 128, uint32(sent))) {
						runtime.Gosched()
					}
					sent++
				}
				time.Sleep(time.Millisecond)
				fwd.Stop()
			}
			if err := env.Close(); err != nil {
				t.Fatal(err)
			}
			if ea, eb := a.Stats().DMAErrors, b.Stats().DMAErrors; ea != 0 || eb != 0 {
				t.Fatalf("device accesses refused: A %d, B %d", ea, eb)
			}
			// Every frame is forwarded, dropped by a stop (flushed from A's
			// FIFO, or abandoned on a ring), or was refused at A's wire:
			// none is sent twice.
			if got := sink.Frames(); got > uint64(sent) {
				t.Fatalf("%d frames at B's wire, %d sent", got, sent)
			}
		})
	}
}
