package seedbench

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/cputime"
	"github.com/goiflib/goiflib/internal/race"
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
	if len(a.bad) > 0 {
		t.Fatalf("%d bad frames, first: %s", len(a.bad), a.bad[0])
	}
	got := 0
	for seq, c := range a.seen {
		if c > 1 {
			t.Fatalf("frame %d arrived %d times", seq, c)
		}
		got += int(c)
	}
	return got
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(200 * time.Microsecond)
	}
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
	if err != nil {
		t.Fatal(err)
	}
	r.Gen.Wait()
	waitUntil(t, "every frame forwarded or counted lost", func() bool {
		s := r.Snapshot()
		return s.Forwarded+s.TxErrors+s.RxDrops >= uint64(n)
	})
	time.Sleep(5 * time.Millisecond) // a duplicate would show up now
	res := r.Snapshot()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if res.Offered != uint64(n) || res.Refused != 0 {
		t.Fatalf("offered %d, refused %d; want %d, 0", res.Offered, res.Refused, n)
	}
	if res.Forwarded+res.TxErrors+res.RxDrops != uint64(n) {
		t.Fatalf("forwarded %d + tx errors %d + rx drops %d != %d", res.Forwarded, res.TxErrors, res.RxDrops, n)
	}
	if got := arr.check(t); uint64(got) != res.Forwarded {
		t.Fatalf("%d distinct frames intact at the sink, counter says %d", got, res.Forwarded)
	}
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
			if res.Forwarded != uint64(n) {
				t.Fatalf("%d of %d forwarded (tx errors %d, rx drops %d)", res.Forwarded, n, res.TxErrors, res.RxDrops)
			}
			if res.Received != uint64(n) {
				t.Fatalf("iflib received %d, want %d", res.Received, n)
			}
			if got := r.NICB.Stats().TxFrames; got != uint64(n) {
				t.Fatalf("B's device sent %d frames, want %d", got, n)
			}
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
			if f := r.Env.IOMMU.Stats().Faults; f != 0 {
				t.Fatalf("%d IOMMU faults: %v", f, r.Env.IOMMU.Faults())
			}
			if res.Forwarded == 0 {
				t.Fatal("nothing forwarded")
			}
			nrxd := uint64(r.NICA.Config().NRxd)
			if !noReuse && res.MapLoads > nrxd {
				t.Fatalf("%d RX map loads for %d packets with reuse; want ≤ %d (one per slot)", res.MapLoads, res.Received, nrxd)
			}
			if noReuse && res.MapLoads < res.Received {
				t.Fatalf("%d RX map loads for %d packets without reuse; want ≥ one per packet", res.MapLoads, res.Received)
			}
			if !noReuse && res.BAReuses < res.Received-nrxd {
				t.Fatalf("%d reposts by ifsd_ba for %d packets", res.BAReuses, res.Received)
			}
		})
	}
}

// TestForwardRxOnly: the RX-only variant frees every packet; nothing
// reaches B.
func TestForwardRxOnly(t *testing.T) {
	const n = 2000
	o := ForwardOpts{RxOnly: true, Count: n, Lossless: true, Checker: true}
	r, err := NewForwardRig(o)
	if err != nil {
		t.Fatal(err)
	}
	r.Gen.Wait()
	waitUntil(t, "every frame received", func() bool { s := r.Snapshot(); return s.Received+s.RxDrops >= n })
	res := r.Snapshot()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if res.Received != n || res.Forwarded != 0 || res.RxDrops != 0 {
		t.Fatalf("received %d, forwarded %d, drops %d; want %d, 0, 0", res.Received, res.Forwarded, res.RxDrops, n)
	}
}

// TestForwardProgress runs Forward with progress: samples arrive in time
// order, the result adds up, and both print what they counted.
func TestForwardProgress(t *testing.T) {
	var samples []ForwardSample
	res, err := Forward(ForwardOpts{Duration: 200 * time.Millisecond, Interval: 50 * time.Millisecond, Warmup: 20 * time.Millisecond,
		Checker: true}, func(s ForwardSample) { samples = append(samples, s) })
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) < 2 {
		t.Fatalf("%d progress samples, want several", len(samples))
	}
	for i := 1; i < len(samples); i++ {
		if samples[i].Elapsed <= samples[i-1].Elapsed {
			t.Fatalf("samples not in time order: %v", samples)
		}
	}
	if res.Forwarded == 0 || res.Received == 0 || res.Elapsed <= 0 {
		t.Fatalf("nothing forwarded: %v", res)
	}
	if res.Offered < res.Refused || res.Forwarded > res.Received+uint64(iflib.MPRingSize)+4096 {
		t.Fatalf("counters do not add up: %v", res)
	}
	if s, want := res.String(), fmt.Sprintf("forwarded %d (%.3f Mpps)", res.Forwarded, res.FwdMpps()); !strings.Contains(s, want) {
		t.Fatalf("report %q lacks %q", s, want)
	}
	if s, want := samples[0].String(), fmt.Sprintf("fwd %6.3f Mpps", samples[0].FwdMpps); !strings.Contains(s, want) {
		t.Fatalf("progress line %q lacks %q", s, want)
	}
}

func TestForwardBadOpts(t *testing.T) {
	for _, o := range []ForwardOpts{
		{FrameLen: 49}, {FrameLen: 9001}, {Flows: -1}, {Flows: 1 << 17},
		{Duration: -1}, {IOMMU: true, MapTime: -5}, {Raw: true, RxOnly: true}, {RawBatch: -1},
	} {
		if _, err := NewForwardRig(o); !errors.Is(err, ErrForwardOpts) {
			t.Errorf("%+v: err %v, want ErrForwardOpts", o, err)
		}
		if _, err := Forward(o, nil); !errors.Is(err, ErrForwardOpts) {
			t.Errorf("Forward %+v: err %v, want ErrForwardOpts", o, err)
		}
	}
	r, err := NewForwardRig(ForwardOpts{Count: 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); !errors.Is(err, ErrForwardOpts) {
		t.Fatalf("second Close: %v", err)
	}
}

// TestForwardRaw: the hand-written baseline over the same rig forwards
// every frame exactly once and intact.
func TestForwardRaw(t *testing.T) {
	const n = 3000
	res, _, _ := runCount(t, ForwardOpts{Raw: true, RawBatch: 8}, n)
	if res.Forwarded != n || res.Received != n {
		t.Fatalf("raw loop: received %d, forwarded %d of %d", res.Received, res.Forwarded, n)
	}
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
		if err != nil {
			t.Fatal(err)
		}
		res := r.RunPackets(n, 30*time.Second)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if res.Packets() < n || res.Mpps() <= 0 {
			t.Fatalf("%+v: window counted %d packets (%v)", o, res.Packets(), res)
		}
		if cputime.Supported && res.CPUNsPerPkt() <= 0 {
			t.Fatalf("%+v: CPU time %v", o, res.CPU)
		}
	}
}

// TestForwardPause: a paused rig offers nothing; resumed, it forwards;
// paused again, it goes quiet; Close ends a generator waiting at the gate.
func TestForwardPause(t *testing.T) {
	r, err := NewForwardRig(ForwardOpts{Checker: true, Paused: true})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if s := r.Snapshot(); s.Offered != 0 {
		t.Fatalf("paused rig offered %d frames", s.Offered)
	}
	r.Resume()
	waitUntil(t, "frames forwarded after Resume", func() bool { return r.Snapshot().Forwarded > 1000 })
	r.Pause()
	waitUntil(t, "the paused rig to drain", r.Quiet)
	before := r.Snapshot()
	time.Sleep(30 * time.Millisecond)
	if after := r.Snapshot(); after.Offered != before.Offered || after.Forwarded != before.Forwarded {
		t.Fatalf("paused rig still moving: offered %d → %d, forwarded %d → %d", before.Offered, after.Offered, before.Forwarded, after.Forwarded)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestForwardResultPlus(t *testing.T) {
	a := ForwardResult{Elapsed: time.Second, CPU: time.Second / 2, Offered: 5, Refused: 1, Received: 4, Forwarded: 3, TxErrors: 1,
		RxDrops: 1, MapLoads: 2, BAReuses: 2, IOMMU: busdma.IOMMUStats{Maps: 1, Unmaps: 1, PagesMapped: 1, PagesUnmapped: 1, Faults: 1}}
	s := a.Plus(a)
	if s.sub(a) != a {
		t.Fatalf("(a+a)-a = %+v, want %+v", s.sub(a), a)
	}
	if s.Mpps() != a.Mpps() || s.CPUNsPerPkt() != a.CPUNsPerPkt() || s.Lost() != 2*a.Lost() {
		t.Fatalf("rates of the sum differ")
	}
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
	if res.Forwarded != uint64(n) {
		t.Fatalf("forwarded %d of %d", res.Forwarded, n)
	}
	for q := range 2 {
		rx, err := r.CtxA.RxQueueStats(q)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := r.CtxB.TxQueueStats(1 - q)
		if err != nil {
			t.Fatal(err)
		}
		if rx.IPackets == 0 || rx.IPackets == uint64(n) {
			t.Fatalf("A's rxq%d received %d of %d: want both queues used", q, rx.IPackets, n)
		}
		if tx.OPackets != rx.IPackets {
			t.Fatalf("B's txq%d sent %d, A's rxq%d received %d", 1-q, tx.OPackets, q, rx.IPackets)
		}
	}
}

// TestForwardStallsAndDrops: the generator's stalls are its refusals and
// the drops are iflib's; per packet and CPUs busy follow the counters.
func TestForwardStallsAndDrops(t *testing.T) {
	r := ForwardResult{Elapsed: 2 * time.Second, CPU: 3 * time.Second, Refused: 7, TxErrors: 2, RxDrops: 1, Forwarded: 100}
	if r.Stalls() != 7 || r.Drops() != 3 || r.Lost() != 10 {
		t.Fatalf("stalls %d, drops %d, lost %d", r.Stalls(), r.Drops(), r.Lost())
	}
	if r.PerPacket(r.Stalls()) != 0.07 || r.CPUsBusy() != 1.5 {
		t.Fatalf("stalls/pkt %v, CPUs busy %v", r.PerPacket(r.Stalls()), r.CPUsBusy())
	}
}
