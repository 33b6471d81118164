package seedbench

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/cputime"
)

// TestSeed003Smoke runs every mode briefly with the busdma checker on:
// frames reach the wire, the counters add up, drbr refuses nothing, and
// the teardown finds nothing left behind.
func TestSeed003Smoke(t *testing.T) {
	for _, mode := range TxModes {
		r, err := NewTxRig(TxOptions{Config: iflib.Config{TxMode: mode}, ZonePkts: 8192, Checker: true})
		require.NoError(t, err)
		res := r.RunSenders(4, 150*time.Millisecond)
		require.NoError(t, r.Close(), "%s", mode)
		assert.NotZero(t, res.Frames, "%s: no frames on the wire", mode)
		assert.False(t, res.Drops > res.Attempts || res.Frames > res.Attempts, "%s: %d frames and %d drops of %d attempts", mode, res.Frames, res.Drops, res.Attempts)
		assert.False(t, mode == iflib.TxModeDRBR && res.Drops != 0, "drbr refused %d transmits; it should block instead", res.Drops)
		assert.False(t, cputime.Supported && (res.CPU <= 0 || res.CPUNsPerPkt() <= 0), "%s: CPU time %v over the window", mode, res.CPU)
		assert.False(t, res.FrameLen != FanInFrameLen || res.Gbps() <= 0, "%s: frame length %d, %.2f Gb/s", mode, res.FrameLen, res.Gbps())
	}
}

// TestTxRigCount: RunCount makes exactly the transmit attempts asked for,
// and every accepted one reaches the wire.
func TestTxRigCount(t *testing.T) {
	r, err := NewTxRig(TxOptions{Config: iflib.Config{TxMode: iflib.TxModeDRBR}, FrameLen: 1514, ZonePkts: 4096, Checker: true})
	require.NoError(t, err)
	res := r.RunCount(3, 5000)
	require.NoError(t, r.Close())
	require.Equal(t, uint64(5000), res.Attempts, "attempts %d, frames %d, drops %d; want 5000 attempts, every accepted frame on the wire", res.Attempts, res.Frames, res.Drops)
	require.Equal(t, res.Attempts-res.Drops, res.Frames, "attempts %d, frames %d, drops %d; want 5000 attempts, every accepted frame on the wire", res.Attempts, res.Frames, res.Drops)
}

func TestTxRigBadOptions(t *testing.T) {
	for _, o := range []TxOptions{{FrameLen: 42}, {FrameLen: 42 + iflib.MCLBytes + 1}, {ZonePkts: 10}} {
		_, err := NewTxRig(o)
		assert.ErrorIs(t, err, ErrTxOpts, "%+v: err %v, want ErrTxOpts", o, err)
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
				require.NoError(b, err)
				b.ReportAllocs()
				b.ResetTimer()
				res := r.RunCount(n, b.N)
				b.StopTimer()
				require.NoError(b, r.Close())
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
	require.Equal(t, a.Mode, s.Mode, "%+v", s)
	require.Equal(t, 2, s.Senders, "%+v", s)
	require.Equal(t, 100, s.FrameLen, "%+v", s)
	require.Equal(t, 2*time.Second, s.Elapsed, "%+v", s)
	require.Equal(t, 2*time.Second, s.CPU, "%+v", s)
	require.Equal(t, uint64(20), s.Frames, "%+v", s)
	require.Equal(t, uint64(24), s.Attempts, "%+v", s)
	require.Equal(t, uint64(4), s.Drops, "%+v", s)
	require.Equal(t, uint64(2), s.NoPkt, "%+v", s)
	require.False(t, s.PPS() != a.PPS(), "rates of the sum differ: %v %v %v", s.PPS(), s.CPUNsPerPkt(), s.DropPct())
	require.False(t, s.CPUNsPerPkt() != a.CPUNsPerPkt(), "rates of the sum differ: %v %v %v", s.PPS(), s.CPUNsPerPkt(), s.DropPct())
	require.False(t, s.DropPct() != a.DropPct(), "rates of the sum differ: %v %v %v", s.PPS(), s.CPUNsPerPkt(), s.DropPct())
}

// TestTxRigWaitQuiet: after a run every accepted packet reaches the wire
// and the rig reports quiet; the next run starts from there.
func TestTxRigWaitQuiet(t *testing.T) {
	for _, mode := range TxModes {
		r, err := NewTxRig(TxOptions{Config: iflib.Config{TxMode: mode}, ZonePkts: 4096})
		require.NoError(t, err)
		res := r.RunSenders(4, 100*time.Millisecond)
		require.True(t, r.WaitQuiet(5*time.Second), "%v: not quiet: %d frames on the wire, %d accepted", mode, r.Sink.Frames(), r.accepted.Load())
		// The window itself may carry no frame on a loaded machine (the
		// device goroutine may get no CPU while the senders spin); what was
		// accepted must all be on the wire once quiet.
		got, want := r.Sink.Frames(), r.accepted.Load()
		require.False(t, got != want || want == 0, "%v: %d frames on the wire, %d accepted (want equal, and some)", mode, got, want)
		require.False(t, res.CPUsBusy() < 0, "%v: %+v", mode, res)
		require.NoError(t, r.Close())
	}
}
