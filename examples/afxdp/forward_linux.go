package afxdp

import (
	"context"
	"errors"
	"time"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/cputime"
)

// ForwardOptions configures RunForward. The zero value works.
type ForwardOptions struct {
	// Duration is the measuring window of each forwarder in each mode
	// (default 3s); a warm-up of a tenth of it comes first.
	Duration time.Duration
	// Modes are the XDP modes to measure (default native, then generic).
	Modes []XDPMode
	// FrameLen is the generated frame's length (default 64, the minimum
	// Ethernet frame with its FCS; veth carries no FCS).
	FrameLen int
	// NRxd and NTxd are the forwarders' ring sizes (default
	// ForwardNRxd, DefaultNTxd); both forwarders size their four rings
	// alike (see Driver).
	NRxd, NTxd int
	// Burst is the most frames either forwarder takes from the RX ring in
	// one pass: iflib's rx_budget (it overrides Iflib.RxBudget) and the
	// hand loop's burst, so that both move the same batches (default
	// DefaultBurst).
	Burst int
	// Rounds repeats the measurement (default 1): every round runs each
	// forwarder once in each mode, in an order rotated by one forwarder a
	// round, so that a ratio between two forwarders can be taken per round
	// (paired, in the same minute of machine load) and summarised over
	// rounds. Result.Round says which round a result is from.
	Rounds int
	// Interval is the period of the live rates (default 1s).
	Interval time.Duration
	// Progress, if set, receives a live rate every Interval.
	Progress func(Rate)
	// Iflib is the iflib configuration of both forwarding drivers (the
	// zero value is FreeBSD's defaults); Unit and RxZoneSize are set by
	// RunForward, RxBudget by Burst, and TxMode by FwdIflibSimple.
	Iflib iflib.Config
	// Forwarders are the forwarders to measure, in order (default
	// FwdIflib, FwdIflibSimple, FwdHand).
	Forwarders []string
}

// The forwarders RunForward measures.
const (
	// FwdIflib is two Drivers on one UMEM: the first receives on pair 0,
	// its input callback rewrites each frame's destination and passes the
	// batch to the second's TransmitBatch, which transmits on pair 1 (the
	// same UMEM frame: no copy between the drivers). The transmit mode is
	// ForwardOptions.Iflib.TxMode, FreeBSD's mp_ring unless set.
	FwdIflib = "iflib"
	// FwdIflibSimple is FwdIflib with simple_tx (iflib_simple_transmit):
	// the RX task is the output queue's only sender, so the queue lock is
	// never contended and a batch is encapsulated under one lock hold with
	// one doorbell.
	FwdIflibSimple = "iflib-simple"
	// FwdHand is the hand-written loop over the same rings (the baseline).
	FwdHand = "hand"
)

// Rate is one live window of a forwarding measurement.
type Rate struct {
	Forwarder string // FwdIflib, FwdIflibSimple or FwdHand
	Mode      XDPMode
	Elapsed   time.Duration // since the window started
	Mpps      float64       // forwarded frames per second in the last interval, millions
}

// Result is one forwarder's measurement.
type Result struct {
	Forwarder string // FwdIflib, FwdIflibSimple or FwdHand
	Mode      XDPMode
	Round     int           // 0 … ForwardOptions.Rounds−1
	Packets   uint64        // frames that came out of the output pair (its peer's rx_packets)
	Generated uint64        // frames the generator handed to the kernel meanwhile
	Elapsed   time.Duration // the measuring window
	Mpps      float64       // Packets / Elapsed, millions
	// CPUNsPerPkt is the process's CPU time (user + system, getrusage)
	// per forwarded frame, the generator's included (the same for both
	// forwarders).
	CPUNsPerPkt float64
	// FwdCPUNsPerPkt is the same without the generator's thread: what the
	// forwarder (its goroutines and the kernel work in its system calls)
	// costs per frame.
	FwdCPUNsPerPkt float64
	// Counts are the forwarder's system calls and wakeups in the window.
	Counts FwdCounts
}

func (o *ForwardOptions) resolve() error {
	if o.Duration <= 0 {
		o.Duration = 3 * time.Second
	}
	if len(o.Modes) == 0 {
		o.Modes = []XDPMode{XDPNative, XDPGeneric}
	}
	if o.FrameLen < 60 {
		o.FrameLen = 64
	}
	if o.NRxd == 0 {
		o.NRxd = ForwardNRxd
	}
	if o.NTxd == 0 {
		o.NTxd = DefaultNTxd
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 1
	}
	if o.Burst <= 0 {
		o.Burst = DefaultBurst
	}
	if len(o.Forwarders) == 0 {
		o.Forwarders = []string{FwdIflib, FwdIflibSimple, FwdHand}
	}
	for _, fw := range o.Forwarders {
		if fw != FwdIflib && fw != FwdIflibSimple && fw != FwdHand {
			return cfgErr(ErrConfig, "Forwarders", fw, "want %s, %s or %s", FwdIflib, FwdIflibSimple, FwdHand)
		}
	}
	return nil
}

// DefaultBurst is ForwardOptions.Burst's default: 64, NAPI_POLL_WEIGHT, the
// kernel's own batch on both sides of the forwarders (a veth NAPI poll
// redirects up to 64 frames to the socket).
const DefaultBurst = 64

// ForwardNRxd is RunForward's default RX ring size: 1024, the size its
// published figures were measured with (a generator of fixed frames, not
// TCP, needs no deeper ring; DefaultNRxd is 4096).
const ForwardNRxd = 1024

// RunForward measures forwarding on this machine: in a private network
// namespace, a generator sends frames into veth pair 0; a forwarder
// receives them on pair 0 with AF_XDP and transmits them on pair 1, whose
// peer counts them. It runs the forwarders (iflib in each transmit mode,
// and the hand-written loop over the same rings) one after the other in
// each mode, for opts.Rounds rounds, and returns their results. Where
// AF_XDP cannot run it returns an error wrapping ErrUnavailable (see
// RigAvailable); an unknown forwarder is ErrConfig, before anything runs.
// It stops early, with what it has, when ctx is done.
func RunForward(ctx context.Context, opts ForwardOptions) ([]Result, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	if err := RigAvailable(); err != nil {
		return nil, err
	}
	fx, err := newFwdFixture(opts.FrameLen)
	if err != nil {
		return nil, err
	}
	defer fx.close()
	var res []Result
	n := len(opts.Forwarders)
	for round := 0; round < opts.Rounds; round++ {
		for _, mode := range opts.Modes {
			for i := range n {
				fw := opts.Forwarders[(i+round)%n]
				if ctx.Err() != nil {
					return res, nil
				}
				r, err := fx.run(ctx, fw, mode, opts)
				if err != nil {
					return res, err
				}
				r.Round = round
				res = append(res, r)
			}
		}
	}
	return res, nil
}

// fwdFixture is the forwarding setup: two veth pairs and a generator.
type fwdFixture struct {
	rig *Rig
	gen *generator
}

func newFwdFixture(frameLen int) (*fwdFixture, error) {
	rig, err := NewRig(RigConfig{Pairs: 2})
	if err != nil {
		return nil, err
	}
	p0 := rig.Pairs[0]
	frame := TestFrame(make([]byte, frameLen), frameLen, p0.AMAC, p0.BMAC, 0)
	gen, err := startGenerator(rig.ns, p0.BIndex, frame)
	if err != nil {
		_ = rig.Close()
		return nil, err
	}
	return &fwdFixture{rig: rig, gen: gen}, nil
}

func (f *fwdFixture) close() {
	f.gen.close()
	_ = f.rig.Close()
}

// sinkCount is the frames received by the output pair's peer.
func (f *fwdFixture) sinkCount() (uint64, error) {
	st, err := f.rig.LinkStats(f.rig.Pairs[1].B)
	return st.RxPackets, err
}

// forwarder is one running forwarding path.
type forwarder interface {
	// counts returns the forwarder's system calls and wakeups so far.
	counts() FwdCounts
	close() error
}

// FwdCounts are what a forwarder paid for besides moving frames: its
// system calls and the wakeups of its goroutines. Divided by the frames
// forwarded they explain most of a difference in CPU per frame.
type FwdCounts struct {
	TxKicks uint64 // sendto(2) on the output socket (the copy-mode transmit)
	Polls   uint64 // poll(2) sleeps waiting for frames
	// Wakeups are hand-offs between goroutines: RX and TX task runs that
	// an interrupt (the poller, a deferred kick) started. The hand loop
	// has none.
	Wakeups uint64
	// RxRingFull are frames the kernel dropped because the forwarder's RX
	// ring was full (XDP_STATISTICS rx_ring_full). Only the hand loop can
	// show it: iflib posts at most nrxd−1 frames to the fill ring and the
	// RX ring has nrxd slots, so an iflib forwarder's overload appears as
	// FillRingEmpty.
	RxRingFull uint64
	// FillRingEmpty are the times the kernel found no frame to receive
	// into (rx_fill_ring_empty_descs): frames not given back in time, the
	// forwarder (not the generator) being the bottleneck; each is a frame
	// dropped (counted in RxDropped too).
	FillRingEmpty uint64
}

// start starts a forwarder.
func (f *fwdFixture) start(fw string, mode XDPMode, opts ForwardOptions) (forwarder, error) {
	p0, p1 := f.rig.Pairs[0], f.rig.Pairs[1]
	switch fw {
	case FwdHand:
		return startHand(f.rig.ns, p0.AIndex, p1.AIndex, mode, opts.NRxd, opts.NTxd, opts.Burst, p1.BMAC)
	case FwdIflib:
		return startIflibForwarder(f.rig, mode, opts)
	case FwdIflibSimple:
		opts.Iflib.TxMode = iflib.TxModeSimple
		return startIflibForwarder(f.rig, mode, opts)
	}
	return nil, cfgErr(ErrConfig, "Forwarders", fw, "want %s, %s or %s", FwdIflib, FwdIflibSimple, FwdHand)
}

// iflibForwarder is FwdIflib: two drivers on one UMEM, a receiving on pair
// 0 and b transmitting on pair 1.
type iflibForwarder struct {
	u    *UMEM
	a, b *Driver
}

// startIflibForwarder attaches a driver to each A end on one UMEM and
// forwards from pair 0 to pair 1 in the input callback.
func startIflibForwarder(rig *Rig, mode XDPMode, opts ForwardOptions) (*iflibForwarder, error) {
	p0, p1 := rig.Pairs[0], rig.Pairs[1]
	nrxd, ntxd := opts.NRxd, opts.NTxd
	const outRx = 64
	zoneA, zoneB := iflib.DefaultRxZoneSize(nrxd), 2*outRx
	u, err := NewUMEM(UMEMConfig{Frames: zoneA + zoneB + 64})
	if err != nil {
		return nil, err
	}
	cfg := opts.Iflib
	cfg.RxBudget = opts.Burst
	f := &iflibForwarder{u: u}
	f.b, err = Attach(Config{Interface: p1.A, NetNS: rig.NetNSPath(), UMEM: u, XDPMode: mode, NRxd: outRx, NTxd: ntxd},
		iflib.Attachment{Config: withUnit(cfg, 1, zoneB)})
	if err != nil {
		_ = u.Close()
		return nil, err
	}
	ctxB := f.b.Context()
	var dst [6]byte
	copy(dst[:], p1.BMAC)
	// The generator's frames are not IP, and the hand loop completes no
	// checksums: KeepPartialChecksums keeps the comparison like for like.
	f.a, err = Attach(Config{Interface: p0.A, NetNS: rig.NetNSPath(), UMEM: u, XDPMode: mode, NRxd: nrxd, NTxd: 64, KeepPartialChecksums: true},
		iflib.Attachment{Config: withUnit(cfg, 0, zoneA), Input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
			for _, m := range pkts {
				copy(m.Bytes()[0:6], dst[:])
			}
			// One enqueue, one drain and one doorbell decision for the
			// batch; refused packets are freed and counted by iflib.
			_, _ = ctxB.TransmitBatch(pkts)
		}})
	if err != nil {
		_ = ctxB.Detach()
		_ = u.Close()
		return nil, err
	}
	if err := errors.Join(ctxB.Init(), f.a.Context().Init()); err != nil {
		_ = f.close()
		return nil, err
	}
	return f, nil
}

// close stops both drivers before detaching either: b's TX ring holds
// packets of a's zone until b stops.
func (f *iflibForwarder) close() error {
	ca, cb := f.a.Context(), f.b.Context()
	return errors.Join(ca.Stop(), cb.Stop(), ca.Detach(), cb.Detach(), f.u.Close())
}

func (f *iflibForwarder) counts() FwdCounts {
	sa, sb := f.a.Stats(), f.b.Stats()
	c := FwdCounts{TxKicks: sa.TxKicks + sb.TxKicks, Polls: sa.Polls + sb.Polls, RxRingFull: sa.RxRingFull, FillRingEmpty: sa.RxFillRingEmpty}
	ts, _ := f.b.Context().TxQueueStats(0)
	c.Wakeups = sa.RxIntrs + ts.TaskRuns
	return c
}

func withUnit(c iflib.Config, unit, zone int) iflib.Config {
	c.Unit, c.RxZoneSize = unit, zone
	return c
}

// fwdMark is a reading of the costs a measurement divides by the frames.
type fwdMark struct {
	cpu, genCPU time.Duration // the process's CPU time, the generator thread's
	counts      FwdCounts
}

func (f *fwdFixture) mark(fw forwarder) fwdMark {
	return fwdMark{cpu: cputime.Process(), genCPU: f.gen.cpuTime(), counts: fw.counts()}
}

func (m fwdMark) sub(o fwdMark) fwdMark {
	return fwdMark{cpu: m.cpu - o.cpu, genCPU: m.genCPU - o.genCPU, counts: FwdCounts{
		TxKicks: m.counts.TxKicks - o.counts.TxKicks,
		Polls:   m.counts.Polls - o.counts.Polls,
		Wakeups: m.counts.Wakeups - o.counts.Wakeups,

		RxRingFull:    m.counts.RxRingFull - o.counts.RxRingFull,
		FillRingEmpty: m.counts.FillRingEmpty - o.counts.FillRingEmpty,
	}}
}

// run measures one forwarder for opts.Duration after a warm-up.
func (f *fwdFixture) run(ctx context.Context, fw string, mode XDPMode, opts ForwardOptions) (Result, error) {
	fwd, err := f.start(fw, mode, opts)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = fwd.close() }()
	select {
	case <-ctx.Done():
	case <-time.After(opts.Duration / 10):
	}
	c0, err := f.sinkCount()
	if err != nil {
		return Result{}, err
	}
	m0 := f.mark(fwd)
	g0, t0 := f.gen.sent.Load(), time.Now()
	last, lastT := c0, t0
	tick := time.NewTicker(opts.Interval)
	defer tick.Stop()
	end := time.After(opts.Duration)
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end:
			break loop
		case now := <-tick.C:
			c, err := f.sinkCount()
			if err != nil {
				return Result{}, err
			}
			if opts.Progress != nil {
				opts.Progress(Rate{Forwarder: fw, Mode: mode, Elapsed: now.Sub(t0),
					Mpps: float64(c-last) / now.Sub(lastT).Seconds() / 1e6})
			}
			last, lastT = c, now
		}
	}
	c1, err := f.sinkCount()
	if err != nil {
		return Result{}, err
	}
	el := time.Since(t0)
	r := Result{Forwarder: fw, Mode: mode, Packets: c1 - c0, Generated: f.gen.sent.Load() - g0, Elapsed: el}
	r.Mpps = float64(r.Packets) / el.Seconds() / 1e6
	d := f.mark(fwd).sub(m0)
	r.Counts = d.counts
	if r.Packets > 0 {
		r.CPUNsPerPkt = float64(d.cpu) / float64(r.Packets)
		r.FwdCPUNsPerPkt = float64(d.cpu-d.genCPU) / float64(r.Packets)
	}
	return r, nil
}
