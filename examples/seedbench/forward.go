package seedbench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/cputime"
)

// ForwardFrameLen is the default frame of the forwarding measurement:
// 64 bytes (ETHER_MIN_LEN), the small-packet rate the forwarding
// reviews (D17901, D24094, D27755) measured.
const ForwardFrameLen = 64

// forwardMinFrame is the shortest frame that carries the sequence number
// (an Ethernet/IPv4/UDP header and 8 bytes of payload).
const forwardMinFrame = headerLen + 8

// ErrForwardOpts is returned for options the forwarding rig cannot use.
var ErrForwardOpts = errors.New("seedbench: bad forwarding options")

// ForwardOpts configures the forwarding rig: a generator on NIC A's wire,
// iflib RX on A, an input callback that transmits each batch on NIC B,
// iflib TX on B, B's wire ending in a sink. The zero value works.
type ForwardOpts struct {
	// FrameLen is the frame size in bytes; default ForwardFrameLen.
	FrameLen int
	// Flows is the number of distinct UDP flows (ports); default 1.
	Flows int
	// Queues is the queue sets of both NICs (default 1): NIC A spreads
	// the flows over its RX queues by its RSS hash, and each of A's RX
	// queues has its own task.
	Queues int
	// TxQueue, if set, is B's TX queue for the packets A received on RX
	// queue rxq (B's TxQueueSelect on PktHdr.RxQueue); otherwise B picks
	// by the flow hash, as iflib does. Answers outside 0..Queues-1 mean
	// queue 0.
	TxQueue func(rxq int) int
	// CPUs, if set, is the placement registry of both contexts
	// (Attachment.CPUs): with PinTasks and CoreOffset it decides which
	// CPUs the queue tasks are pinned to.
	CPUs *cpumap.Allocator
	// Config holds the iflib tunables of both contexts: the RX knobs act
	// on A, the TX ones on B. A zero RxZoneSize on A becomes 8192, enough
	// for A's ring, B's mp_ring and B's TX ring all full at once.
	Config iflib.Config
	// ConfigB, if set, is B's configuration instead of Config (for
	// placing B's queues elsewhere than A's).
	ConfigB *iflib.Config
	// RxOnly makes A's input callback free each packet instead of
	// forwarding it: the RX-only measurement. B is still attached.
	RxOnly bool
	// Raw forwards with simnic's hand-written loop (simnic.RawForwarder,
	// RawBatch descriptors per pass, default 32) over the same rings
	// instead of iflib: the baseline. Config and RxOnly do not apply.
	Raw      bool
	RawBatch int
	// IOMMU puts both NICs behind busdma's IOMMU model, with MapTime and
	// UnmapTime of CPU time per iommu_map and iommu_unmap (see
	// busdma.IOMMUConfig and busdma.StrictUnmapTime); otherwise they share
	// a plain simulated physical space.
	IOMMU              bool
	MapTime, UnmapTime time.Duration
	// Checker turns on busdma's DMA checker on both devices (Close then
	// reports every misuse it saw).
	Checker bool
	// Count stops the generator after Count frames (0: it runs until
	// Close).
	Count uint64
	// Lossless makes the generator wait for room in A's receive FIFO
	// instead of having the frame refused (rx_missed).
	Lossless bool
	// Duration is Forward's measuring window (default 1s), after Warmup
	// (default 100ms). Interval is the progress period (default 1s).
	Duration, Warmup, Interval time.Duration
	// Inspect, if set, sees each frame arriving at B's sink (on B's
	// device goroutine; the slice is valid during the call only).
	Inspect func(frame []byte)
	// Paused builds the rig with its generator paused (see
	// ForwardRig.Resume).
	Paused bool
}

func (o *ForwardOpts) defaults() error {
	if o.FrameLen == 0 {
		o.FrameLen = ForwardFrameLen
	}
	if o.Flows == 0 {
		o.Flows = 1
	}
	if o.Queues == 0 {
		o.Queues = 1
	}
	if o.RawBatch == 0 {
		o.RawBatch = 32
	}
	if o.Duration == 0 {
		o.Duration = time.Second
	}
	if o.Warmup == 0 {
		o.Warmup = 100 * time.Millisecond
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	switch {
	case o.FrameLen < forwardMinFrame || o.FrameLen > 9000:
		return fmt.Errorf("%w: FrameLen %d not in %d..9000", ErrForwardOpts, o.FrameLen, forwardMinFrame)
	case o.Flows < 1 || o.Flows > 1<<16:
		return fmt.Errorf("%w: Flows %d not in 1..65536", ErrForwardOpts, o.Flows)
	case o.Queues < 1 || o.Queues > simnic.MaxQueues:
		return fmt.Errorf("%w: Queues %d not in 1..%d", ErrForwardOpts, o.Queues, simnic.MaxQueues)
	case o.Raw && o.Queues > 1:
		return fmt.Errorf("%w: the raw loop serves one queue (Queues %d with Raw)", ErrForwardOpts, o.Queues)
	case o.Duration < 0 || o.Warmup < 0 || o.Interval < 0:
		return fmt.Errorf("%w: negative duration", ErrForwardOpts)
	case o.MapTime < 0 || o.UnmapTime < 0:
		return fmt.Errorf("%w: negative IOMMU cost", ErrForwardOpts)
	case o.Raw && o.RxOnly:
		return fmt.Errorf("%w: the raw loop only forwards (RxOnly with Raw)", ErrForwardOpts)
	case o.RawBatch < 0:
		return fmt.Errorf("%w: RawBatch %d", ErrForwardOpts, o.RawBatch)
	}
	return nil
}

// ForwardFrame writes frame seq of the forwarding generator into buf and
// returns its length: an Ethernet/IPv4/UDP header for flow seq % flows,
// the sequence number, and payload bytes that are a function of seq, so
// a receiver can check each frame byte for byte.
// Preconditions: forwardMinFrame ≤ size ≤ len(buf), flows ≥ 1.
func ForwardFrame(buf []byte, size, flows int, seq uint64) int {
	b := buf[:size]
	putHeader(b, size, 0x0a010001, uint32(seq%uint64(flows)))
	binary.BigEndian.PutUint64(b[42:50], seq)
	for i := 50; i < size; i++ {
		b[i] = byte(seq) ^ byte(i*13)
	}
	return size
}

// ForwardSeq returns the sequence number of a generator frame.
func ForwardSeq(frame []byte) (uint64, bool) {
	if len(frame) < forwardMinFrame {
		return 0, false
	}
	return binary.BigEndian.Uint64(frame[42:50]), true
}

// ForwardSample is one progress report: the rates over the last interval.
type ForwardSample struct {
	Elapsed  time.Duration // since the measuring window began
	RxMpps   float64       // packets received on A
	FwdMpps  float64       // frames that reached B's sink
	LostMpps float64       // offered but not forwarded (see ForwardResult.Lost)
}

func (s ForwardSample) String() string {
	return fmt.Sprintf("%6.1fs  rx %6.3f Mpps  fwd %6.3f Mpps  lost %6.3f Mpps",
		s.Elapsed.Seconds(), s.RxMpps, s.FwdMpps, s.LostMpps)
}

// ForwardResult is what a measuring window counted.
type ForwardResult struct {
	Elapsed time.Duration
	CPU     time.Duration // process CPU time (user+system) over the window
	// InvolSwitches is the process's involuntary context switches over
	// the window (ru_nivcsw, from the getrusage call that reads CPU): how
	// often the OS took a CPU from it, a load indicator.
	InvolSwitches uint64
	RxOnly        bool   // the rig freed what it received (Packets is Received)
	Offered       uint64 // frames the generator put on A's wire
	Refused       uint64 // of those, refused by A's full receive FIFO (rx_missed)
	Received      uint64 // packets taken from A's RX ring (iflib's ipackets, or the raw loop's)
	Forwarded     uint64 // frames that reached B's sink
	TxErrors      uint64 // packets B's transmit refused (dropped and counted)
	RxDrops       uint64 // A's iqdrops + ierrors (the raw loop: bad frames)
	MapLoads      uint64 // A's free-list map loads
	BAReuses      uint64 // A's free-list reposts by ifsd_ba
	IOMMU         busdma.IOMMUStats
}

func rate(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e6
}

// Packets is what the measurement counts: frames forwarded to B's sink,
// or packets received for an RX-only rig.
func (r ForwardResult) Packets() uint64 {
	if r.RxOnly {
		return r.Received
	}
	return r.Forwarded
}

// Mpps is Packets per second, in millions.
func (r ForwardResult) Mpps() float64 { return rate(r.Packets(), r.Elapsed) }

// CPUNsPerPkt is the process's CPU time per counted packet, in ns: the
// generator's, the two simulated devices' and the forwarder's together.
func (r ForwardResult) CPUNsPerPkt() float64 {
	return float64(r.CPU.Nanoseconds()) / float64(max(r.Packets(), 1))
}

// RxMpps is the receive rate on A.
func (r ForwardResult) RxMpps() float64 { return rate(r.Received, r.Elapsed) }

// FwdMpps is the rate of frames reaching B's sink.
func (r ForwardResult) FwdMpps() float64 { return rate(r.Forwarded, r.Elapsed) }

// Lost is frames offered but not forwarded: refused by A's full receive
// FIFO (the host did not empty A's ring in time), dropped by A's RX, or
// refused by B's transmit.
func (r ForwardResult) Lost() uint64 { return r.Refused + r.TxErrors + r.RxDrops }

// Stalls is how often the generator found A's receive FIFO full. The
// generator is not a wire: each time, it drops the frame it holds (counted
// in Refused), parks until the FIFO has room and goes on with the next
// frame, so Stalls equals Refused and counts parks, not the frames a paced
// line-rate source would have lost. Each costs a park and a wake-up, which
// CPU counts.
func (r ForwardResult) Stalls() uint64 { return r.Refused }

// Drops is packets iflib dropped on the way: A's iqdrops and ierrors, and
// B's transmit refusals.
func (r ForwardResult) Drops() uint64 { return r.TxErrors + r.RxDrops }

// PerPacket is n per counted packet.
func (r ForwardResult) PerPacket(n uint64) float64 { return float64(n) / float64(max(r.Packets(), 1)) }

// CPUsBusy is CPU time over elapsed time: how many CPUs the process kept
// busy on average during the window (Mpps × cpu-ns/pkt / 1000).
func (r ForwardResult) CPUsBusy() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return r.CPU.Seconds() / r.Elapsed.Seconds()
}

// LostMpps is the loss rate.
func (r ForwardResult) LostMpps() float64 { return rate(r.Lost(), r.Elapsed) }

// MapLoadsPerPacket is A's RX map loads per received packet.
func (r ForwardResult) MapLoadsPerPacket() float64 {
	return float64(r.MapLoads) / float64(max(r.Received, 1))
}

func (r ForwardResult) String() string {
	return fmt.Sprintf("%.2fs: offered %d, refused %d, received %d (%.3f Mpps), forwarded %d (%.3f Mpps), tx errors %d, rx drops %d, lost %.3f Mpps, map loads/pkt %.3f, %.0f cpu-ns/pkt",
		r.Elapsed.Seconds(), r.Offered, r.Refused, r.Received, r.RxMpps(), r.Forwarded, r.FwdMpps(),
		r.TxErrors, r.RxDrops, r.LostMpps(), r.MapLoadsPerPacket(), r.CPUNsPerPkt())
}

// Plus adds two windows' counts: a measurement made of several slices.
func (r ForwardResult) Plus(o ForwardResult) ForwardResult { return r.add(o, 1) }

// sub is the window from snapshot o to snapshot r.
func (r ForwardResult) sub(o ForwardResult) ForwardResult { return r.add(o, -1) }

// add returns r + sign×o, counter by counter (uint64 arithmetic wraps, so
// a sign of -1 subtracts).
func (r ForwardResult) add(o ForwardResult, sign int64) ForwardResult {
	u := func(a, b uint64) uint64 { return a + uint64(sign)*b }
	d := func(a, b time.Duration) time.Duration { return a + time.Duration(sign)*b }
	return ForwardResult{
		Elapsed: d(r.Elapsed, o.Elapsed), CPU: d(r.CPU, o.CPU), InvolSwitches: u(r.InvolSwitches, o.InvolSwitches), RxOnly: r.RxOnly || o.RxOnly,
		Offered: u(r.Offered, o.Offered), Refused: u(r.Refused, o.Refused),
		Received: u(r.Received, o.Received), Forwarded: u(r.Forwarded, o.Forwarded), TxErrors: u(r.TxErrors, o.TxErrors),
		RxDrops: u(r.RxDrops, o.RxDrops), MapLoads: u(r.MapLoads, o.MapLoads), BAReuses: u(r.BAReuses, o.BAReuses),
		IOMMU: busdma.IOMMUStats{
			Maps: u(r.IOMMU.Maps, o.IOMMU.Maps), Unmaps: u(r.IOMMU.Unmaps, o.IOMMU.Unmaps),
			PagesMapped: u(r.IOMMU.PagesMapped, o.IOMMU.PagesMapped), PagesUnmapped: u(r.IOMMU.PagesUnmapped, o.IOMMU.PagesUnmapped),
			Faults: u(r.IOMMU.Faults, o.IOMMU.Faults),
		},
	}
}

// ForwardRig is the running forwarding set-up, built on a simnictest.Env
// whose Close checks every leak. Everything is started by NewForwardRig and
// torn down by Close.
type ForwardRig struct {
	Env        *simnictest.Env
	NICA, NICB *simnic.NIC
	CtxA, CtxB *iflib.Context       // nil with Raw
	Raw        *simnic.RawForwarder // nil without Raw
	Sink       *simnic.Sink
	Gen        *simnic.Generator

	opts    ForwardOpts
	start   time.Time
	txErrs  atomic.Uint64 // written by A's RX task (the input callback)
	closing atomic.Bool   // set by Close: a lossless feeder gives up
	closed  bool

	// The generator's gate: while paused is set, the generator waits in
	// Next for a token on resume (or for closed to be closed).
	paused  atomic.Bool
	resume  chan struct{}
	closeCh chan struct{}
}

// lossless is the generator's endpoint when no frame may be refused: it
// retries a refused frame, yielding between attempts, until the FIFO
// takes it or the rig closes.
type lossless struct {
	nic     *simnic.NIC
	closing *atomic.Bool
}

func (f *lossless) Receive(frame []byte) bool {
	for !f.nic.Receive(frame) {
		if f.closing.Load() {
			return false
		}
		runtime.Gosched()
	}
	return true
}

// NewForwardRig builds and starts the rig: two NICs on one address space,
// B attached and running first, then A with the forwarding callback (or
// the raw loop over both), then the generator.
func NewForwardRig(o ForwardOpts) (r *ForwardRig, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	cfgA, cfgB := o.Config, o.Config
	if o.ConfigB != nil {
		cfgB = *o.ConfigB
	}
	if cfgA.RxZoneSize == 0 {
		cfgA.RxZoneSize = 8192
	}
	cfgB.RxZoneSize = 1100 // B receives nothing
	env, err := simnictest.Open(simnictest.EnvOptions{
		Sim:   busdma.SimConfig{Size: o.Queues*(cfgA.RxZoneSize+cfgB.RxZoneSize)*iflib.MCLBytes + o.Queues*(16<<20), ContigSize: 2 << 20},
		IOMMU: o.IOMMU, MapTime: o.MapTime, UnmapTime: o.UnmapTime,
		NoChecker: !o.Checker,
	})
	if err != nil {
		return nil, err
	}
	r = &ForwardRig{Env: env, opts: o, Sink: &simnic.Sink{Inspect: o.Inspect},
		resume: make(chan struct{}, 1), closeCh: make(chan struct{})}
	r.paused.Store(o.Paused)
	defer func() {
		if err != nil {
			err = errors.Join(err, env.Close())
			r = nil
		}
	}()
	// A's address is the generator's destination (putHeader): simnic's
	// receive filter passes only frames to the station.
	if r.NICA, err = env.NewNIC(simnic.Config{Unit: 0, Queues: o.Queues, MAC: [6]byte{2, 0, 0, 0, 0, 0xb}}); err != nil {
		return r, err
	}
	if r.NICB, err = env.NewNIC(simnic.Config{Unit: 1, Queues: o.Queues}); err != nil {
		return r, err
	}
	r.NICB.SetPeer(r.Sink)
	if o.Raw {
		if r.Raw, err = env.NewRawForwarder(r.NICA, r.NICB, simnic.RawConfig{Batch: o.RawBatch}); err != nil {
			return r, err
		}
		if err = r.Raw.Start(); err != nil {
			return r, err
		}
	} else {
		attB := iflib.Attachment{Config: cfgB, CPUs: o.CPUs}
		if f := o.TxQueue; f != nil {
			attB.TxQueueSelect = func(m *iflib.Packet) int { return f(int(m.Hdr.RxQueue)) }
		}
		drvB, err := env.Attach(r.NICB, attB)
		if err != nil {
			return r, err
		}
		r.CtxB = drvB.Context()
		if err := r.CtxB.Init(); err != nil {
			return r, err
		}
		input := r.forward
		if f := o.TxQueue; f != nil && cfgB.TxMode != iflib.TxModeMPRing {
			// simple and drbr modes pick the queue as
			// iflib_simple_select_queue does, from the packet's hash (QIDX),
			// without asking TxQueueSelect: steer by the hash.
			input = func(ic *iflib.Context, rxq int, pkts []*iflib.Packet) {
				for _, m := range pkts {
					m.Hdr.HashType, m.Hdr.FlowID = iflib.HashOpaque, uint32(f(rxq))
				}
				r.forward(ic, rxq, pkts)
			}
		}
		var ready func(int) bool
		if o.RxOnly {
			input = freeAll
		} else {
			// Back-pressure: A receives only while B's TX queue has room
			// for another RX batch, so that frames B could not send stay
			// in A's ring (and are dropped by A's device, counted as
			// missed) instead of being received, copied and then dropped.
			// Holding back, A also schedules B's TX task (as B's TX
			// interrupt would): a B ring that stalled for descriptors,
			// with no new packet from A to restart it, restarts there
			// instead of waiting for B's timer.
			ctxB, limit := r.CtxB, forwardBacklogLimit
			txq := func(int) int { return 0 }
			if o.Queues > 1 {
				// With several queues the RX queue's packets may go to any
				// TX queue: hold back while any of them is full.
				txq = nil
			}
			if f := o.TxQueue; f != nil {
				txq = func(rxq int) int {
					if q := f(rxq); q >= 0 && q < o.Queues {
						return q
					}
					return 0
				}
			}
			ready = func(rxq int) bool {
				if txq == nil {
					for q := range o.Queues {
						if ctxB.TxBacklog(q) >= limit {
							ctxB.TxIntr(q)
							return false
						}
					}
					return true
				}
				q := txq(rxq)
				if ctxB.TxBacklog(q) < limit {
					return true
				}
				ctxB.TxIntr(q)
				return false
			}
		}
		drvA, err := env.Attach(r.NICA, iflib.Attachment{Config: cfgA, Input: input, InputReady: ready, CPUs: o.CPUs})
		if err != nil {
			return r, err
		}
		r.CtxA = drvA.Context()
		if err := r.CtxA.Init(); err != nil {
			return r, err
		}
	}
	size, flows := o.FrameLen, o.Flows
	r.Gen = &simnic.Generator{
		Count: o.Count,
		Next: func(seq uint64, buf []byte) int {
			for r.paused.Load() {
				select {
				case <-r.resume:
				case <-r.closeCh:
					return 0 // the generator ends
				}
			}
			return ForwardFrame(buf, size, flows, seq)
		},
	}
	r.start = time.Now()
	var dst simnic.Endpoint = r.NICA
	if o.Lossless {
		dst = &lossless{nic: r.NICA, closing: &r.closing}
	}
	return r, env.Start(r.Gen, dst)
}

// Pause stops the generator offering frames (it waits before its next
// frame); what is in flight drains and the rig goes idle. Several rigs
// can then be kept built and measured in turn.
func (r *ForwardRig) Pause() { r.paused.Store(true) }

// Resume lets a paused generator go on.
func (r *ForwardRig) Resume() {
	r.paused.Store(false)
	select {
	case r.resume <- struct{}{}:
	default:
	}
}

// Quiet reports whether every frame offered so far is accounted for:
// forwarded (or, RX-only, received) or lost. A paused rig becomes quiet
// once what was in flight has drained.
func (r *ForwardRig) Quiet() bool {
	s := r.Snapshot()
	done := s.Forwarded + s.Lost()
	if r.opts.RxOnly {
		done = s.Received + s.Refused + s.RxDrops
	}
	return done >= s.Offered
}

// WaitQuiet waits up to limit for Quiet, polling every 100 µs, and
// reports whether the rig became quiet.
func (r *ForwardRig) WaitQuiet(limit time.Duration) bool {
	for deadline := time.Now().Add(limit); !r.Quiet(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// forward is A's if_input: transmit the batch on B (one mp_ring enqueue
// per batch). The packets are B's from TransmitBatch on, whatever the
// result; those not accepted were dropped and counted.
func (r *ForwardRig) forward(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
	n := len(pkts)
	sent, _ := r.CtxB.TransmitBatch(pkts)
	if sent < n {
		r.txErrs.Add(uint64(n - sent))
	}
}

// forwardBacklogLimit is the backlog of B's TX queue (packets queued plus
// descriptors in use) above which A holds its receive back: a quarter of
// B's mp_ring.
const forwardBacklogLimit = iflib.MPRingSize / 4

func freeAll(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
	for _, m := range pkts {
		m.Free()
	}
}

// Snapshot returns the counters since the rig started.
func (r *ForwardRig) Snapshot() ForwardResult {
	u := cputime.Read()
	res := ForwardResult{
		Elapsed: time.Since(r.start), CPU: u.CPU, InvolSwitches: u.InvolSwitches, RxOnly: r.opts.RxOnly,
		Refused: r.Gen.Refused(), Forwarded: r.Sink.Frames(), TxErrors: r.txErrs.Load(),
	}
	if r.Raw != nil {
		st := r.Raw.Stats()
		res.Received, res.RxDrops = st.Received, st.Errors
	} else {
		for q := range r.opts.Queues {
			st, _ := r.CtxA.RxQueueStats(q) // queues 0..Queues-1 exist
			res.Received += st.IPackets
			res.RxDrops += st.IQDrops + st.IErrors
			res.MapLoads += st.MapLoads
			res.BAReuses += st.BAReuses
		}
	}
	res.Offered = r.Gen.Sent() + res.Refused
	if r.Env.IOMMU != nil {
		res.IOMMU = r.Env.IOMMU.Stats()
	}
	return res
}

// Run measures a window of d, calling progress (if not nil) every
// interval with the rates of that interval.
func (r *ForwardRig) Run(d, interval time.Duration, progress func(ForwardSample)) ForwardResult {
	if interval <= 0 {
		interval = time.Second
	}
	first := r.Snapshot()
	prev := first
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			break
		}
		time.Sleep(min(left, interval))
		cur := r.Snapshot()
		if progress != nil {
			w := cur.sub(prev)
			progress(ForwardSample{Elapsed: cur.Elapsed - first.Elapsed, RxMpps: w.RxMpps(), FwdMpps: w.FwdMpps(), LostMpps: w.LostMpps()})
		}
		prev = cur
	}
	return prev.sub(first)
}

// RunPackets measures the window in which n more packets are counted
// (forwarded, or received for an RX-only rig), polling every
// millisecond: go test -bench's b.N as a packet count. It gives up after
// limit and returns what the shorter window counted.
func (r *ForwardRig) RunPackets(n uint64, limit time.Duration) ForwardResult {
	first := r.Snapshot()
	cur := first
	deadline := time.Now().Add(limit)
	for cur.Packets()-first.Packets() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		cur = r.Snapshot()
	}
	return cur.sub(first)
}

// Close stops the generator and the forwarder and tears the rig down
// (simnictest.Env.Close): it reports a map still loaded, a packet not
// back in its zone, a busdma checker report, an IOMMU fault or a
// goroutine left running.
func (r *ForwardRig) Close() error {
	if r.closed {
		return fmt.Errorf("%w: closed twice", ErrForwardOpts)
	}
	r.closed = true
	r.closing.Store(true)
	close(r.closeCh)
	var stopErr error
	if err := r.Gen.Stop(); err != nil && !errors.Is(err, simnic.ErrGenNotStarted) {
		stopErr = err
	}
	if r.CtxA != nil {
		// A's received packets sit on B's TX ring: stop A's RX first, so
		// that nothing more crosses while B detaches.
		stopErr = errors.Join(stopErr, r.CtxA.Stop())
	}
	return errors.Join(stopErr, r.Env.Close())
}

// Forward runs the forwarding measurement: build the rig, warm up, measure
// opts.Duration with progress every opts.Interval, tear down.
func Forward(opts ForwardOpts, progress func(ForwardSample)) (ForwardResult, error) {
	r, err := NewForwardRig(opts)
	if err != nil {
		return ForwardResult{}, err
	}
	time.Sleep(r.opts.Warmup)
	res := r.Run(r.opts.Duration, r.opts.Interval, progress)
	return res, r.Close()
}
