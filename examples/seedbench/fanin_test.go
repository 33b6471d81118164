package seedbench

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/cputime"
)

// TestSeed003Smoke runs every mode briefly with the busdma checker on:
// frames reach the wire, the counters add up, drbr refuses nothing, and
// the teardown finds nothing left behind.
func TestSeed003Smoke(t *testing.T) {
	for _, mode := range TxModes {
		r, err := NewTxRig(TxOptions{Config: iflib.Config{TxMode: mode}, ZonePkts: 8192, Checker: true})
		if err != nil {
			t.Fatal(err)
		}
		res := r.RunSenders(4, 150*time.Millisecond)
		if err := r.Close(); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if res.Frames == 0 {
			t.Errorf("%s: no frames on the wire", mode)
		}
		if res.Drops > res.Attempts || res.Frames > res.Attempts {
			t.Errorf("%s: %d frames and %d drops of %d attempts", mode, res.Frames, res.Drops, res.Attempts)
		}
		if mode == iflib.TxModeDRBR && res.Drops != 0 {
			t.Errorf("drbr refused %d transmits; it should block instead", res.Drops)
		}
		if cputime.Supported && (res.CPU <= 0 || res.CPUNsPerPkt() <= 0) {
			t.Errorf("%s: CPU time %v over the window", mode, res.CPU)
		}
		if res.FrameLen != FanInFrameLen || res.Gbps() <= 0 {
			t.Errorf("%s: frame length %d, %.2f Gb/s", mode, res.FrameLen, res.Gbps())
		}
	}
}

// TestTxRigCount: RunCount makes exactly the transmit attempts asked for,
// and every accepted one reaches the wire.
func TestTxRigCount(t *testing.T) {
	r, err := NewTxRig(TxOptions{Config: iflib.Config{TxMode: iflib.TxModeDRBR}, FrameLen: 1514, ZonePkts: 4096, Checker: true})
	if err != nil {
		t.Fatal(err)
	}
	res := r.RunCount(3, 5000)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 5000 || res.Frames != res.Attempts-res.Drops {
		t.Fatalf("attempts %d, frames %d, drops %d; want 5000 attempts, every accepted frame on the wire", res.Attempts, res.Frames, res.Drops)
	}
}

func TestTxRigBadOptions(t *testing.T) {
	for _, o := range []TxOptions{{FrameLen: 42}, {FrameLen: 42 + iflib.MCLBytes + 1}, {ZonePkts: 10}} {
		if _, err := NewTxRig(o); !errors.Is(err, ErrTxOpts) {
			t.Errorf("%+v: err %v, want ErrTxOpts", o, err)
		}
	}
}

// BenchmarkSeed003 is the fan-in table of "simple_tx with drbr deferral"
// as a benchmark: one TX queue, 1342-byte two-buffer frames; b.N transmit
// attempts shared by the senders, so ns/op and allocs/op are per packet.
// cpu-ns/pkt is the process's CPU time (getrusage) per frame on the wire.
//
//	go test -run '^$' -bench '^BenchmarkSeed003$' -benchtime 200000x -cpu 1,2 -count 5 ./examples/seedbench/
func BenchmarkSeed003(b *testing.B) {
	for _, mode := range TxModes {
		for _, n := range FanIns {
			b.Run(mode.String()+"/senders="+strconv.Itoa(n), func(b *testing.B) {
				r, err := NewTxRig(TxOptions{Config: iflib.Config{TxMode: mode}})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				b.ResetTimer()
				res := r.RunCount(n, b.N)
				b.StopTimer()
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(res.Gbps(), "Gb/s")
				b.ReportMetric(res.PPS()/1e6, "Mpps")
				b.ReportMetric(res.CPUNsPerPkt(), "cpu-ns/pkt")
				b.ReportMetric(res.DropPct(), "drop%")
			})
		}
	}
}

func TestTxResultPlus(t *testing.T) {
	a := TxResult{Mode: iflib.TxModeDRBR, Senders: 2, FrameLen: 100, Elapsed: time.Second, CPU: time.Second, Frames: 10, Attempts: 12, Drops: 2, NoPkt: 1}
	s := TxResult{}.Plus(a).Plus(a)
	if s.Mode != a.Mode || s.Senders != 2 || s.FrameLen != 100 || s.Elapsed != 2*time.Second || s.CPU != 2*time.Second ||
		s.Frames != 20 || s.Attempts != 24 || s.Drops != 4 || s.NoPkt != 2 {
		t.Fatalf("%+v", s)
	}
	if s.PPS() != a.PPS() || s.CPUNsPerPkt() != a.CPUNsPerPkt() || s.DropPct() != a.DropPct() {
		t.Fatalf("rates of the sum differ: %v %v %v", s.PPS(), s.CPUNsPerPkt(), s.DropPct())
	}
}

// TestTxRigWaitQuiet: after a run every accepted packet reaches the wire
// and the rig reports quiet; the next run starts from there.
func TestTxRigWaitQuiet(t *testing.T) {
	for _, mode := range TxModes {
		r, err := NewTxRig(TxOptions{Config: iflib.Config{TxMode: mode}, ZonePkts: 4096})
		if err != nil {
			t.Fatal(err)
		}
		res := r.RunSenders(4, 100*time.Millisecond)
		if !r.WaitQuiet(5 * time.Second) {
			t.Fatalf("%v: not quiet: %d frames on the wire, %d accepted", mode, r.Sink.Frames(), r.accepted.Load())
		}
		// The window itself may carry no frame on a loaded machine (the
		// device goroutine may get no CPU while the senders spin); what was
		// accepted must all be on the wire once quiet.
		if got, want := r.Sink.Frames(), r.accepted.Load(); got != want || want == 0 {
			t.Fatalf("%v: %d frames on the wire, %d accepted (want equal, and some)", mode, got, want)
		}
		if res.CPUsBusy() < 0 {
			t.Fatalf("%v: %+v", mode, res)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
