package seedbench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
)

// ForwardFrameLen is the default frame of the forwarding measurement:
// 64 bytes (ETHER_MIN_LEN), the small-packet rate of seed 000.
const ForwardFrameLen = 64

// forwardMinFrame is the shortest frame that carries the sequence number
// (an Ethernet/IPv4/UDP header and 8 bytes of payload).
const forwardMinFrame = headerLen + 8

// ErrForwardOpts is returned for options the forwarding rig cannot use.
var ErrForwardOpts = errors.New("seedbench: bad forwarding options")

// ForwardOpts configures the forwarding rig: a generator on NIC A's wire,
// iflib RX on A, an input callback that transmits each packet on NIC B,
// iflib TX on B, B's wire ending in a sink. The zero value works.
type ForwardOpts struct {
	// FrameLen is the frame size in bytes; default ForwardFrameLen.
	FrameLen int
	// Flows is the number of distinct UDP flows (ports); default 1.
	Flows int
	// Config holds the iflib tunables of both contexts: the RX knobs act
	// on A, the TX ones on B. A zero RxZoneSize on A becomes 8192, enough
	// for A's ring, B's mp_ring and B's TX ring all full at once.
	Config iflib.Config
	// RxOnly makes A's input callback free each packet instead of
	// forwarding it: the RX-only measurement. B is still attached.
	RxOnly bool
	// IOMMU puts both NICs behind the IOMMU model with MapCost and
	// UnmapCost busy-work units per iommu_map and iommu_unmap; otherwise
	// they share a plain simulated physical space.
	IOMMU              bool
	MapCost, UnmapCost int
	// Checker turns on busdma's DMA checker on both devices.
	Checker *busdma.Checker
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
}

func (o *ForwardOpts) defaults() error {
	if o.FrameLen == 0 {
		o.FrameLen = ForwardFrameLen
	}
	if o.Flows == 0 {
		o.Flows = 1
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
	case o.Duration < 0 || o.Warmup < 0 || o.Interval < 0:
		return fmt.Errorf("%w: negative duration", ErrForwardOpts)
	case o.MapCost < 0 || o.UnmapCost < 0:
		return fmt.Errorf("%w: negative IOMMU cost", ErrForwardOpts)
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
	flow := uint32(seq % uint64(flows))
	copy(b[0:6], []byte{2, 0, 0, 0, 0, 0xb})
	copy(b[6:12], []byte{2, 0, 0, 0, 0, 0xa})
	binary.BigEndian.PutUint16(b[12:14], 0x0800)
	b[14], b[15] = 0x45, 0
	binary.BigEndian.PutUint16(b[16:18], uint16(size-14))
	binary.BigEndian.PutUint32(b[18:22], 0)
	b[22], b[23] = 64, 17
	binary.BigEndian.PutUint16(b[24:26], 0)
	binary.BigEndian.PutUint32(b[26:30], 0x0a000001)
	binary.BigEndian.PutUint32(b[30:34], 0x0a010001)
	binary.BigEndian.PutUint16(b[34:36], uint16(1024+flow))
	binary.BigEndian.PutUint16(b[36:38], 9)
	binary.BigEndian.PutUint16(b[38:40], uint16(size-34))
	binary.BigEndian.PutUint16(b[40:42], 0)
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
	RxMpps   float64       // packets iflib received on A
	FwdMpps  float64       // frames that reached B's sink
	LostMpps float64       // refused by A's FIFO, or dropped by iflib
}

func (s ForwardSample) String() string {
	return fmt.Sprintf("%6.1fs  rx %6.3f Mpps  fwd %6.3f Mpps  lost %6.3f Mpps",
		s.Elapsed.Seconds(), s.RxMpps, s.FwdMpps, s.LostMpps)
}

// ForwardResult is what a measuring window counted.
type ForwardResult struct {
	Elapsed   time.Duration
	Offered   uint64 // frames the generator put on A's wire
	Refused   uint64 // of those, refused by A's full FIFO (rx_missed)
	Received  uint64 // packets iflib received on A (ipackets)
	Forwarded uint64 // frames that reached B's sink
	TxErrors  uint64 // ctxB.Transmit errors (the packet was dropped)
	RxDrops   uint64 // A's iqdrops + ierrors
	MapLoads  uint64 // A's free-list map loads
	BAReuses  uint64 // A's free-list reposts by ifsd_ba
	IOMMU     busdma.IOMMUStats
}

func rate(n uint64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e6
}

// RxMpps is the receive rate on A.
func (r ForwardResult) RxMpps() float64 { return rate(r.Received, r.Elapsed) }

// FwdMpps is the rate of frames reaching B's sink.
func (r ForwardResult) FwdMpps() float64 { return rate(r.Forwarded, r.Elapsed) }

// Lost is frames refused by A's FIFO or dropped by iflib.
func (r ForwardResult) Lost() uint64 { return r.Refused + r.TxErrors + r.RxDrops }

// LostMpps is the loss rate.
func (r ForwardResult) LostMpps() float64 { return rate(r.Lost(), r.Elapsed) }

// MapLoadsPerPacket is A's RX map loads per received packet.
func (r ForwardResult) MapLoadsPerPacket() float64 {
	return float64(r.MapLoads) / float64(max(r.Received, 1))
}

func (r ForwardResult) String() string {
	return fmt.Sprintf("%.2fs: offered %d, refused %d, received %d (%.3f Mpps), forwarded %d (%.3f Mpps), tx errors %d, rx drops %d, lost %.3f Mpps, map loads/pkt %.3f",
		r.Elapsed.Seconds(), r.Offered, r.Refused, r.Received, r.RxMpps(), r.Forwarded, r.FwdMpps(),
		r.TxErrors, r.RxDrops, r.LostMpps(), r.MapLoadsPerPacket())
}

func (r ForwardResult) sub(o ForwardResult) ForwardResult {
	return ForwardResult{
		Elapsed: r.Elapsed - o.Elapsed, Offered: r.Offered - o.Offered, Refused: r.Refused - o.Refused,
		Received: r.Received - o.Received, Forwarded: r.Forwarded - o.Forwarded, TxErrors: r.TxErrors - o.TxErrors,
		RxDrops: r.RxDrops - o.RxDrops, MapLoads: r.MapLoads - o.MapLoads, BAReuses: r.BAReuses - o.BAReuses,
		IOMMU: busdma.IOMMUStats{
			Maps: r.IOMMU.Maps - o.IOMMU.Maps, Unmaps: r.IOMMU.Unmaps - o.IOMMU.Unmaps,
			PagesMapped: r.IOMMU.PagesMapped - o.IOMMU.PagesMapped, PagesUnmapped: r.IOMMU.PagesUnmapped - o.IOMMU.PagesUnmapped,
			Faults: r.IOMMU.Faults - o.IOMMU.Faults,
		},
	}
}

// ForwardRig is the running forwarding set-up. Everything is started by
// NewForwardRig and torn down by Close.
type ForwardRig struct {
	Space      busdma.Space
	IOMMU      *busdma.IOMMUSpace // nil without the IOMMU model
	NICA, NICB *simnic.NIC
	CtxA, CtxB *iflib.Context
	Sink       *simnic.Sink
	Gen        *simnic.Generator

	drvA, drvB *simnic.Driver

	opts    ForwardOpts
	start   time.Time
	txErrs  atomic.Uint64 // written by A's RX task (the input callback)
	closing atomic.Bool   // set by Close: a lossless generator gives up
	closed  bool
}

// feeder is the generator's endpoint: A's wire. A refused frame yields
// the processor (the generator would otherwise spin on a full FIFO and
// starve the goroutines it measures); a lossless feeder retries until the
// frame is taken or the rig closes.
type feeder struct {
	nic      *simnic.NIC
	lossless bool
	closing  *atomic.Bool
}

func (f *feeder) Receive(frame []byte) bool {
	for {
		if f.nic.Receive(frame) {
			return true
		}
		runtime.Gosched()
		if !f.lossless || f.closing.Load() {
			return false
		}
	}
}

// NewForwardRig builds and starts the rig: two NICs on one address space,
// B attached and running first, then A with the forwarding callback, then
// the generator.
func NewForwardRig(o ForwardOpts) (*ForwardRig, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	r := &ForwardRig{opts: o, Sink: &simnic.Sink{Inspect: o.Inspect}}
	cfgA, cfgB := o.Config, o.Config
	if cfgA.RxZoneSize == 0 {
		cfgA.RxZoneSize = 8192
	}
	cfgB.RxZoneSize = 1100 // B receives nothing
	sim := busdma.SimConfig{Size: (cfgA.RxZoneSize+cfgB.RxZoneSize)*iflib.MCLBytes + 8<<20, ContigSize: 2 << 20}
	var err error
	if o.IOMMU {
		r.IOMMU, err = busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: sim, MapCost: o.MapCost, UnmapCost: o.UnmapCost})
		r.Space = r.IOMMU
	} else {
		r.Space, err = busdma.NewSimSpace(sim)
	}
	if err != nil {
		return nil, err
	}
	if r.NICA, err = simnic.New(r.Space, simnic.Config{Unit: 0, Checker: o.Checker}); err != nil {
		return nil, err
	}
	if r.NICB, err = simnic.New(r.Space, simnic.Config{Unit: 1, Checker: o.Checker}); err != nil {
		return nil, err
	}
	r.NICB.SetPeer(r.Sink)
	var err2 error
	if r.drvB, err2 = r.NICB.Attach(iflib.Attachment{Config: cfgB}); err2 != nil {
		return nil, err2
	}
	r.CtxB = r.drvB.Context()
	if err := r.CtxB.Init(); err != nil {
		_ = r.CtxB.Detach()
		return nil, err
	}
	input := r.forward
	if o.RxOnly {
		input = freeAll
	}
	if r.drvA, err2 = r.NICA.Attach(iflib.Attachment{Config: cfgA, Input: input}); err2 != nil {
		_ = r.CtxB.Detach()
		return nil, err2
	}
	r.CtxA = r.drvA.Context()
	if err := r.CtxA.Init(); err != nil {
		_ = r.CtxA.Detach()
		_ = r.CtxB.Detach()
		return nil, err
	}
	size, flows := o.FrameLen, o.Flows
	r.Gen = &simnic.Generator{
		Count: o.Count,
		Next:  func(seq uint64, buf []byte) int { return ForwardFrame(buf, size, flows, seq) },
	}
	r.start = time.Now()
	r.Gen.Start(&feeder{nic: r.NICA, lossless: o.Lossless, closing: &r.closing})
	return r, nil
}

// forward is A's if_input: transmit the batch on B (one mp_ring enqueue
// per batch). The packets are B's from TransmitBatch on, whatever the
// result; those not accepted were dropped and counted.
func (r *ForwardRig) forward(_ int, pkts []*iflib.Packet) {
	n := len(pkts)
	sent, _ := r.CtxB.TransmitBatch(pkts)
	if sent < n {
		r.txErrs.Add(uint64(n - sent))
	}
}

func freeAll(_ int, pkts []*iflib.Packet) {
	for _, m := range pkts {
		m.Free()
	}
}

// Snapshot returns the counters since the rig started.
func (r *ForwardRig) Snapshot() ForwardResult {
	st, _ := r.CtxA.RxQueueStats(0) // queue 0 exists
	res := ForwardResult{
		Elapsed: time.Since(r.start),
		Refused: r.Gen.Refused(), Received: st.IPackets, Forwarded: r.Sink.Frames(),
		TxErrors: r.txErrs.Load(), RxDrops: st.IQDrops + st.IErrors,
		MapLoads: st.MapLoads, BAReuses: st.BAReuses,
	}
	res.Offered = r.Gen.Sent() + res.Refused
	if r.IOMMU != nil {
		res.IOMMU = r.IOMMU.Stats()
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

// Close stops the generator and detaches A, then B. It reports a leak:
// a map still loaded or a packet not back in its zone.
func (r *ForwardRig) Close() error {
	if r.closed {
		return fmt.Errorf("%w: closed twice", ErrForwardOpts)
	}
	r.closed = true
	r.closing.Store(true)
	r.Gen.Stop()
	// A's received packets sit on B's TX ring: stop A's RX first, then
	// detach B (returning them to A's zone), then A, whose Detach checks
	// that every one of its packets came home.
	if err := errors.Join(r.CtxA.Stop(), r.CtxB.Detach(), r.CtxA.Detach()); err != nil {
		return err
	}
	return errors.Join(r.drvA.CheckTeardown(), r.drvB.CheckTeardown())
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
