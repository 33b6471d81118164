package seedbench

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/cputime"
	"github.com/goiflib/goiflib/internal/race"
	"github.com/goiflib/goiflib/internal/testutil"
)

// arrivals checks frames at B's sink against ForwardFrame: each sequence
// number exactly once, byte for byte.
type arrivals struct {
	mu    sync.Mutex
	size  int
	flows int
	seen  []uint8
	bad   []string
	want  []byte
}

func newArrivals(n, size, flows int) *arrivals {
	return &arrivals{size: size, flows: flows, seen: make([]uint8, n), want: make([]byte, size)}
}

func (a *arrivals) inspect(f []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	seq, ok := ForwardSeq(f)
	switch {
	case !ok || seq >= uint64(len(a.seen)):
		a.bad = append(a.bad, fmt.Sprintf("unknown frame of %d bytes", len(f)))
	case !bytes.Equal(f, a.want[:ForwardFrame(a.want, a.size, a.flows, seq)]):
		a.bad = append(a.bad, fmt.Sprintf("frame %d corrupted", seq))
	default:
		a.seen[seq]++
	}
}

// check reports corrupt or duplicated frames and returns how many arrived.
func (a *arrivals) check(t *testing.T) int {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	require.Empty(t, a.bad, "bad frames")
	got := 0
	for seq, c := range a.seen {
		require.LessOrEqual(t, c, uint8(1), "frame %d arrived %d times", seq, c)
		got += int(c)
	}
	return got
}

// runCount forwards exactly n generated frames (lossless generator) and
// waits until each is at B's sink or counted lost. It returns the counters
// from the rig's start.
func runCount(t *testing.T, o ForwardOpts, n int) (ForwardResult, *arrivals, *ForwardRig) {
	t.Helper()
	o.Checker = true
	o.Count, o.Lossless = uint64(n), true
	if o.FrameLen == 0 {
		o.FrameLen = ForwardFrameLen
	}
	arr := newArrivals(n, o.FrameLen, max(o.Flows, 1))
	o.Inspect = arr.inspect
	r, err := NewForwardRig(o)
	require.NoError(t, err)
	r.Gen.Wait()
	testutil.Eventually(t, "every frame forwarded or counted lost", func() bool {
		s := r.Snapshot()
		return s.Forwarded+s.TxErrors+s.RxDrops >= uint64(n)
	})
	time.Sleep(5 * time.Millisecond) // a duplicate would show up now
	res := r.Snapshot()
	require.NoError(t, r.Close())
	require.Equal(t, uint64(n), res.Offered, "offered %d, refused %d; want %d, 0", res.Offered, res.Refused, n)
	require.Zero(t, res.Refused, "offered %d, refused %d; want %d, 0", res.Offered, res.Refused, n)
	require.Equal(t, uint64(n), res.Forwarded+res.TxErrors+res.RxDrops, "forwarded %d + tx errors %d + rx drops %d != %d", res.Forwarded, res.TxErrors, res.RxDrops, n)
	got := arr.check(t)
	require.Equal(t, res.Forwarded, uint64(got), "%d distinct frames intact at the sink, counter says %d", got, res.Forwarded)
	return res, arr, r
}

// TestForwardExactlyOnce forwards N frames with a transmit mode that never
// drops (drbr blocks the RX task instead): every frame arrives exactly
// once and intact, and detach leaves no map loaded and every zone full
// (NewForwardRig's Close checks both).
func TestForwardExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    ForwardOpts
	}{
		{"64B", ForwardOpts{}},
		{"copy-thresh-flows", ForwardOpts{FrameLen: 128, Flows: 5, Config: iflib.Config{RxSortByFlow: true}}},
		{"1500B-perpacket", ForwardOpts{FrameLen: 1500, Config: iflib.Config{RxPerPacket: true, RxBudget: 4}}},
		{"jumbo-multifrag", ForwardOpts{FrameLen: 9000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 3000
			if tc.o.FrameLen > 1500 {
				n = 500
			}
			if race.Enabled {
				n /= 3
			}
			tc.o.Config.TxMode = iflib.TxModeDRBR
			res, _, r := runCount(t, tc.o, n)
			require.Equal(t, uint64(n), res.Forwarded, "%d of %d forwarded (tx errors %d, rx drops %d)", res.Forwarded, n, res.TxErrors, res.RxDrops)
			require.Equal(t, uint64(n), res.Received, "iflib received %d, want %d", res.Received, n)
			got := r.NICB.Stats().TxFrames
			require.Equal(t, uint64(n), got, "B's device sent %d frames, want %d", got, n)
		})
	}
}

// TestForwardIOMMU forwards through the IOMMU model with its default mp_ring
// transmit: no fault; with ifsd_ba reuse the receive side loads at most one
// mapping per ring slot however many packets pass, and without it at least
// one per packet.
func TestForwardIOMMU(t *testing.T) {
	n := 4000
	if race.Enabled {
		n = 1500
	}
	for _, noReuse := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoRxReuse=%v", noReuse), func(t *testing.T) {
			o := ForwardOpts{IOMMU: true, MapTime: 100 * time.Nanosecond, UnmapTime: 100 * time.Nanosecond, Config: iflib.Config{NoRxReuse: noReuse}}
			res, _, r := runCount(t, o, n)
			f := r.Env.IOMMU.Stats().Faults
			require.Zero(t, f, "%d IOMMU faults: %v", f, r.Env.IOMMU.Faults())
			require.NotZero(t, res.Forwarded, "nothing forwarded")
			nrxd := uint64(r.NICA.Config().NRxd)
			require.False(t, !noReuse && res.MapLoads > nrxd, "%d RX map loads for %d packets with reuse; want ≤ %d (one per slot)", res.MapLoads, res.Received, nrxd)
			require.False(t, noReuse && res.MapLoads < res.Received, "%d RX map loads for %d packets without reuse; want ≥ one per packet", res.MapLoads, res.Received)
			require.False(t, !noReuse && res.BAReuses < res.Received-nrxd, "%d reposts by ifsd_ba for %d packets", res.BAReuses, res.Received)
		})
	}
}

// TestForwardRxOnly: the RX-only variant frees every packet; nothing
// reaches B.
func TestForwardRxOnly(t *testing.T) {
	const n = 2000
	o := ForwardOpts{RxOnly: true, Count: n, Lossless: true, Checker: true}
	r, err := NewForwardRig(o)
	require.NoError(t, err)
	r.Gen.Wait()
	testutil.Eventually(t, "every frame received", func() bool { s := r.Snapshot(); return s.Received+s.RxDrops >= n })
	res := r.Snapshot()
	require.NoError(t, r.Close())
	require.Equal(t, uint64(n), res.Received, "received %d, forwarded %d, drops %d; want %d, 0, 0", res.Received, res.Forwarded, res.RxDrops, n)
	require.Zero(t, res.Forwarded, "received %d, forwarded %d, drops %d; want %d, 0, 0", res.Received, res.Forwarded, res.RxDrops, n)
	require.Zero(t, res.RxDrops, "received %d, forwarded %d, drops %d; want %d, 0, 0", res.Received, res.Forwarded, res.RxDrops, n)
}

// TestForwardProgress runs Forward with progress: samples arrive in time
// order, the result adds up, and both print what they counted.
func TestForwardProgress(t *testing.T) {
	var samples []ForwardSample
	var res ForwardResult
	var err error
	// A loaded machine (the race detector, shared CPUs) may forward
	// nothing in a 200 ms window: lengthen it (0.8 s, then 3.2 s).
	for d := 200 * time.Millisecond; d <= 3200*time.Millisecond; d *= 4 {
		samples = samples[:0]
		res, err = Forward(ForwardOpts{Duration: d, Interval: d / 4, Warmup: 20 * time.Millisecond,
			Checker: true}, func(s ForwardSample) { samples = append(samples, s) })
		require.NoError(t, err)
		if res.Forwarded > 0 {
			break
		}
		t.Logf("nothing forwarded in %v: again for %v", d, 4*d)
	}
	require.GreaterOrEqual(t, len(samples), 2, "%d progress samples, want several", len(samples))
	for i := 1; i < len(samples); i++ {
		require.Greater(t, samples[i].Elapsed, samples[i-1].Elapsed, "samples not in time order: %v", samples)
	}
	require.NotZero(t, res.Forwarded, "nothing forwarded: %v", res)
	require.NotZero(t, res.Received, "nothing forwarded: %v", res)
	require.Greater(t, res.Elapsed, time.Duration(0), "nothing forwarded: %v", res)
	require.GreaterOrEqual(t, res.Offered, res.Refused, "counters do not add up: %v", res)
	require.LessOrEqual(t, res.Forwarded, res.Received+uint64(iflib.MPRingSize)+4096, "counters do not add up: %v", res)
	s, want := res.String(), fmt.Sprintf("forwarded %d (%.3f Mpps)", res.Forwarded, res.FwdMpps())
	require.Contains(t, s, want, "report %q lacks %q", s, want)
	s, want = samples[0].String(), fmt.Sprintf("fwd %6.3f Mpps", samples[0].FwdMpps)
	require.Contains(t, s, want, "progress line %q lacks %q", s, want)
}

func TestForwardBadOpts(t *testing.T) {
	for _, o := range []ForwardOpts{
		{FrameLen: 49}, {FrameLen: 9001}, {Flows: -1}, {Flows: 1 << 17},
		{Duration: -1}, {IOMMU: true, MapTime: -5}, {Raw: true, RxOnly: true}, {RawBatch: -1},
	} {
		_, err := NewForwardRig(o)
		assert.ErrorIs(t, err, ErrForwardOpts, "%+v: err %v, want ErrForwardOpts", o, err)
		_, err = Forward(o, nil)
		assert.ErrorIs(t, err, ErrForwardOpts, "Forward %+v: err %v, want ErrForwardOpts", o, err)
	}
	r, err := NewForwardRig(ForwardOpts{Count: 10})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	err = r.Close()
	require.ErrorIs(t, err, ErrForwardOpts, "second Close: %v", err)
}

// TestForwardRaw: the hand-written baseline over the same rig forwards
// every frame exactly once and intact.
func TestForwardRaw(t *testing.T) {
	const n = 3000
	res, _, _ := runCount(t, ForwardOpts{Raw: true, RawBatch: 8}, n)
	require.Equal(t, uint64(n), res.Forwarded, "raw loop: received %d, forwarded %d of %d", res.Received, res.Forwarded, n)
	require.Equal(t, uint64(n), res.Received, "raw loop: received %d, forwarded %d of %d", res.Received, res.Forwarded, n)
}

// TestForwardRunPackets: a window counted in packets holds at least that
// many, with the CPU time the process spent meanwhile.
func TestForwardRunPackets(t *testing.T) {
	n := uint64(5000)
	if race.Enabled {
		n = 1000
	}
	for _, o := range []ForwardOpts{{Checker: true}, {Checker: true, Raw: true}, {Checker: true, RxOnly: true}} {
		r, err := NewForwardRig(o)
		require.NoError(t, err)
		res := r.RunPackets(n, 30*time.Second)
		require.NoError(t, r.Close())
		require.GreaterOrEqual(t, res.Packets(), n, "%+v: window counted %d packets (%v)", o, res.Packets(), res)
		require.False(t, res.Mpps() <= 0, "%+v: window counted %d packets (%v)", o, res.Packets(), res)
		require.False(t, cputime.Supported && res.CPUNsPerPkt() <= 0, "%+v: CPU time %v", o, res.CPU)
	}
}

// TestForwardPause: a paused rig offers nothing; resumed, it forwards;
// paused again, it goes quiet; Close ends a generator waiting at the gate.
func TestForwardPause(t *testing.T) {
	r, err := NewForwardRig(ForwardOpts{Checker: true, Paused: true})
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	s := r.Snapshot()
	require.Zero(t, s.Offered, "paused rig offered %d frames", s.Offered)
	r.Resume()
	testutil.Eventually(t, "frames forwarded after Resume", func() bool { return r.Snapshot().Forwarded > 1000 })
	r.Pause()
	testutil.Eventually(t, "the paused rig to drain", r.Quiet)
	before := r.Snapshot()
	time.Sleep(30 * time.Millisecond)
	after := r.Snapshot()
	require.False(t, after.Offered != before.Offered || after.Forwarded != before.Forwarded, "paused rig still moving: offered %d → %d, forwarded %d → %d", before.Offered, after.Offered, before.Forwarded, after.Forwarded)
	require.NoError(t, r.Close())
}

func TestForwardResultPlus(t *testing.T) {
	a := ForwardResult{Elapsed: time.Second, CPU: time.Second / 2, Offered: 5, Refused: 1, Received: 4, Forwarded: 3, TxErrors: 1,
		RxDrops: 1, MapLoads: 2, BAReuses: 2, IOMMU: busdma.IOMMUStats{Maps: 1, Unmaps: 1, PagesMapped: 1, PagesUnmapped: 1, Faults: 1}}
	s := a.Plus(a)
	require.Equal(t, a, s.sub(a), "(a+a)-a = %+v, want %+v", s.sub(a), a)
	require.False(t, s.Mpps() != a.Mpps(), "rates of the sum differ")
	require.False(t, s.CPUNsPerPkt() != a.CPUNsPerPkt(), "rates of the sum differ")
	require.Equal(t, 2*a.Lost(), s.Lost(), "rates of the sum differ")
}

// TestForwardQueuesCrossed forwards over two queue pairs with every packet
// A received on RX queue i sent on B's TX queue 1-i: each frame arrives
// once and intact, both of A's RX queues carried traffic, and each of B's
// TX queues sent exactly what the other RX queue received.
func TestForwardQueuesCrossed(t *testing.T) {
	n := 4000
	if race.Enabled {
		n = 1500
	}
	res, _, r := runCount(t, ForwardOpts{Queues: 2, Flows: 64, TxQueue: func(rxq int) int { return 1 - rxq },
		Config: iflib.Config{TxMode: iflib.TxModeDRBR}}, n)
	require.Equal(t, uint64(n), res.Forwarded, "forwarded %d of %d", res.Forwarded, n)
	for q := range 2 {
		rx, err := r.CtxA.RxQueueStats(q)
		require.NoError(t, err)
		tx, err := r.CtxB.TxQueueStats(1 - q)
		require.NoError(t, err)
		require.NotZero(t, rx.IPackets, "A's rxq%d received %d of %d: want both queues used", q, rx.IPackets, n)
		require.NotEqual(t, uint64(n), rx.IPackets, "A's rxq%d received %d of %d: want both queues used", q, rx.IPackets, n)
		require.Equal(t, rx.IPackets, tx.OPackets, "B's txq%d sent %d, A's rxq%d received %d", 1-q, tx.OPackets, q, rx.IPackets)
	}
}

// TestForwardStallsAndDrops: the generator's stalls are its refusals and
// the drops are iflib's; per packet and CPUs busy follow the counters.
func TestForwardStallsAndDrops(t *testing.T) {
	r := ForwardResult{Elapsed: 2 * time.Second, CPU: 3 * time.Second, Refused: 7, TxErrors: 2, RxDrops: 1, Forwarded: 100}
	require.Equal(t, uint64(7), r.Stalls(), "stalls %d, drops %d, lost %d", r.Stalls(), r.Drops(), r.Lost())
	require.Equal(t, uint64(3), r.Drops(), "stalls %d, drops %d, lost %d", r.Stalls(), r.Drops(), r.Lost())
	require.Equal(t, uint64(10), r.Lost(), "stalls %d, drops %d, lost %d", r.Stalls(), r.Drops(), r.Lost())
	require.False(t, r.PerPacket(r.Stalls()) != 0.07, "stalls/pkt %v, CPUs busy %v", r.PerPacket(r.Stalls()), r.CPUsBusy())
	require.False(t, r.CPUsBusy() != 1.5, "stalls/pkt %v, CPUs busy %v", r.PerPacket(r.Stalls()), r.CPUsBusy())
}
