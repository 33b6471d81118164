package afxdp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/iflib"
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
	// NRxd and NTxd are the forwarders' ring sizes (default 1024).
	NRxd, NTxd int
	// Interval is the period of the live rates (default 1s).
	Interval time.Duration
	// Progress, if set, receives a live rate every Interval.
	Progress func(Rate)
	// Iflib is the iflib configuration of both forwarding drivers (the
	// zero value is FreeBSD's defaults); Unit and RxZoneSize are set by
	// RunForward.
	Iflib iflib.Config
}

// Rate is one live window of a forwarding measurement.
type Rate struct {
	Forwarder string // "iflib" or "hand"
	Mode      XDPMode
	Elapsed   time.Duration // since the window started
	Mpps      float64       // forwarded frames per second in the last interval, millions
}

// Result is one forwarder's measurement.
type Result struct {
	Forwarder string // "iflib" (two iflib drivers on one UMEM) or "hand" (the loop without iflib)
	Mode      XDPMode
	Packets   uint64        // frames that came out of the output pair (its peer's rx_packets)
	Generated uint64        // frames the generator handed to the kernel meanwhile
	Elapsed   time.Duration // the measuring window
	Mpps      float64       // Packets / Elapsed, millions
	// CPUNsPerPkt is the process's CPU time (user + system, getrusage)
	// per forwarded frame, the generator's included (the same for both
	// forwarders).
	CPUNsPerPkt float64
}

func (o *ForwardOptions) resolve() {
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
		o.NRxd = DefaultNRxd
	}
	if o.NTxd == 0 {
		o.NTxd = DefaultNTxd
	}
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
}

// RunForward measures forwarding on this machine: in a private network
// namespace, a generator sends frames into veth pair 0; a forwarder
// receives them on pair 0 with AF_XDP and transmits them on pair 1, whose
// peer counts them. It runs the iflib forwarder (two Drivers on one UMEM,
// the input callback transmitting each packet) and the hand-written loop
// over the same rings, alternately, in each mode, and returns their
// results. Where AF_XDP cannot run it returns an error wrapping
// ErrUnavailable (see Available). It stops early, with what it has, when
// ctx is done.
func RunForward(ctx context.Context, opts ForwardOptions) ([]Result, error) {
	opts.resolve()
	if err := Available(); err != nil {
		return nil, err
	}
	fx, err := newFwdFixture(opts.FrameLen)
	if err != nil {
		return nil, err
	}
	defer fx.close()
	var res []Result
	for _, mode := range opts.Modes {
		for _, fw := range []string{"iflib", "hand"} {
			if ctx.Err() != nil {
				return res, nil
			}
			r, err := fx.run(ctx, fw, mode, opts)
			if err != nil {
				return res, err
			}
			res = append(res, r)
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

// start starts a forwarder; stop removes it.
func (f *fwdFixture) start(fw string, mode XDPMode, nrxd, ntxd int, cfg iflib.Config) (stop func() error, err error) {
	p0, p1 := f.rig.Pairs[0], f.rig.Pairs[1]
	switch fw {
	case "hand":
		u, err := NewUMEM(UMEMConfig{Frames: 2 * nrxd})
		if err != nil {
			return nil, err
		}
		h, err := startHand(f.rig.ns, u, p0.AIndex, p1.AIndex, mode, nrxd, ntxd, p1.BMAC)
		if err != nil {
			_ = u.Close()
			return nil, err
		}
		return func() error { return errors.Join(h.close(), u.Close()) }, nil
	case "iflib":
		return startIflibForwarder(f.rig, mode, nrxd, ntxd, cfg)
	}
	return nil, fmt.Errorf("%w: forwarder %q", ErrConfig, fw)
}

// startIflibForwarder attaches a driver to each A end on one UMEM and
// forwards from pair 0 to pair 1 in the input callback.
func startIflibForwarder(rig *Rig, mode XDPMode, nrxd, ntxd int, cfg iflib.Config) (func() error, error) {
	p0, p1 := rig.Pairs[0], rig.Pairs[1]
	const outRx = 64
	zoneA, zoneB := 2*nrxd+1024, 2*outRx
	u, err := NewUMEM(UMEMConfig{Frames: zoneA + zoneB + 64})
	if err != nil {
		return nil, err
	}
	b, err := Attach(Config{Interface: p1.A, NetNS: rig.NetNSPath(), UMEM: u, XDPMode: mode, NRxd: outRx, NTxd: ntxd},
		iflib.Attachment{Config: withUnit(cfg, 1, zoneB)})
	if err != nil {
		_ = u.Close()
		return nil, err
	}
	ctxB := b.Context()
	var dst [6]byte
	copy(dst[:], p1.BMAC)
	a, err := Attach(Config{Interface: p0.A, NetNS: rig.NetNSPath(), UMEM: u, XDPMode: mode, NRxd: nrxd, NTxd: 64},
		iflib.Attachment{Config: withUnit(cfg, 0, zoneA), Input: func(_ int, pkts []*iflib.Packet) {
			for _, m := range pkts {
				copy(m.Bytes()[0:6], dst[:])
				_ = ctxB.Transmit(m) // a refused packet is freed and counted by iflib
			}
		}})
	if err != nil {
		_ = ctxB.Detach()
		_ = u.Close()
		return nil, err
	}
	ctxA := a.Context()
	stop := func() error {
		return errors.Join(ctxA.Stop(), ctxB.Stop(), ctxA.Detach(), ctxB.Detach(), u.Close())
	}
	if err := errors.Join(ctxB.Init(), ctxA.Init()); err != nil {
		_ = stop()
		return nil, err
	}
	return stop, nil
}

func withUnit(c iflib.Config, unit, zone int) iflib.Config {
	c.Unit, c.RxZoneSize = unit, zone
	return c
}

// cpuTime is the process's user + system time.
func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// run measures one forwarder for opts.Duration after a warm-up.
func (f *fwdFixture) run(ctx context.Context, fw string, mode XDPMode, opts ForwardOptions) (Result, error) {
	stop, err := f.start(fw, mode, opts.NRxd, opts.NTxd, opts.Iflib)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = stop() }()
	select {
	case <-ctx.Done():
	case <-time.After(opts.Duration / 10):
	}
	c0, err := f.sinkCount()
	if err != nil {
		return Result{}, err
	}
	g0, cpu0, t0 := f.gen.sent.Load(), cpuTime(), time.Now()
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
	el, cpu := time.Since(t0), cpuTime()-cpu0
	r := Result{Forwarder: fw, Mode: mode, Packets: c1 - c0, Generated: f.gen.sent.Load() - g0, Elapsed: el}
	r.Mpps = float64(r.Packets) / el.Seconds() / 1e6
	if r.Packets > 0 {
		r.CPUNsPerPkt = float64(cpu.Nanoseconds()) / float64(r.Packets)
	}
	return r, nil
}
