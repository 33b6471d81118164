package iflib_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// The fuzzer's operations (see fuzz_model_test.go).

// param is one numeric parameter the Register operation may perturb.
type param struct {
	name string
	sane int
	set  func(r *regSpec, v int)
}

// regSpec is what one Register draws.
type regSpec struct {
	nic    simnic.Config
	cfg    iflib.Config
	shared []func(*iflib.SharedCtx)
	softc  []func(*iflib.SoftcCtx)
}

func dur(v int) time.Duration { return time.Duration(v) }

var params = []param{
	// simnic.Config
	{"nic.Queues", 1, func(r *regSpec, v int) { r.nic.Queues = v }},
	{"nic.NTxd", 128, func(r *regSpec, v int) { r.nic.NTxd = v }},
	{"nic.NRxd", 128, func(r *regSpec, v int) { r.nic.NRxd = v }},
	{"nic.RxBufSize", 2048, func(r *regSpec, v int) { r.nic.RxBufSize = v }},
	{"nic.MaxFrame", 1518, func(r *regSpec, v int) { r.nic.MaxFrame = v }},
	{"nic.FIFO", 64, func(r *regSpec, v int) { r.nic.FIFO = v }},
	{"nic.TxSegs", 8, func(r *regSpec, v int) { r.nic.TxSegs = v }},
	{"nic.TSOSegs", 16, func(r *regSpec, v int) { r.nic.TSOSegs = v }},
	{"nic.WBThresh", 4, func(r *regSpec, v int) { r.nic.WBThresh = v }},
	{"nic.WBDelay", int(200 * time.Microsecond), func(r *regSpec, v int) { r.nic.WBDelay = dur(v) }},
	{"nic.ITR", int(50 * time.Microsecond), func(r *regSpec, v int) { r.nic.ITR = dur(v) }},
	{"nic.DMALatency", int(time.Microsecond), func(r *regSpec, v int) { r.nic.DMALatency = dur(v) }},
	{"nic.LineRate", 1e9, func(r *regSpec, v int) { r.nic.LineRate = float64(v) }},
	{"nic.FrameRate", 1e6, func(r *regSpec, v int) { r.nic.FrameRate = float64(v) }},
	{"nic.TxCompletion", 1, func(r *regSpec, v int) { r.nic.TxCompletion = simnic.TxCompletion(v) }},
	{"nic.RxErrors", 1, func(r *regSpec, v int) { r.nic.RxErrors = simnic.RxErrorStyle(v) }},
	// iflib.Config
	{"TxMode", 1, func(r *regSpec, v int) { r.cfg.TxMode = iflib.TxMode(v) }},
	{"DRBRMaxProducers", 2, func(r *regSpec, v int) { r.cfg.DRBRMaxProducers = v }},
	{"DRBRDrainQuota", 8, func(r *regSpec, v int) { r.cfg.DRBRDrainQuota = v }},
	{"DRBRSize", 256, func(r *regSpec, v int) { r.cfg.DRBRSize = v }},
	{"TxReclaimThresh", 8, func(r *regSpec, v int) { r.cfg.TxReclaimThresh = v }},
	{"RxBudget", 16, func(r *regSpec, v int) { r.cfg.RxBudget = v }},
	{"OverrideNTxQs", 1, func(r *regSpec, v int) { r.cfg.OverrideNTxQs = v }},
	{"OverrideNRxQs", 1, func(r *regSpec, v int) { r.cfg.OverrideNRxQs = v }},
	{"OverrideNTxds[0]", 128, func(r *regSpec, v int) { r.cfg.OverrideNTxds[0] = v }},
	{"OverrideNRxds[0]", 128, func(r *regSpec, v int) { r.cfg.OverrideNRxds[0] = v }},
	{"CoreOffset", 1, func(r *regSpec, v int) { r.cfg.CoreOffset = v }},
	{"PollInterval", int(100 * time.Microsecond), func(r *regSpec, v int) { r.cfg.PollInterval = dur(v) }},
	{"TimerInterval", int(3 * time.Millisecond), func(r *regSpec, v int) { r.cfg.TimerInterval = dur(v) }},
	{"TxWatchdogPeriods", 4, func(r *regSpec, v int) { r.cfg.TxWatchdogPeriods = v }},
	{"StopTimeout", int(20 * time.Millisecond), func(r *regSpec, v int) { r.cfg.StopTimeout = dur(v) }},
	{"CopyThresh", 128, func(r *regSpec, v int) { r.cfg.CopyThresh = v }},
	{"RxZoneSize", 320, func(r *regSpec, v int) { r.cfg.RxZoneSize = v }},
	// SharedCtx (through AttachWith's hook)
	{"sh.QAlign", 128, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.QAlign = v }) }},
	{"sh.TxMaxSize", 9018, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.TxMaxSize = v }) }},
	{"sh.TxMaxSegSize", 4096, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.TxMaxSegSize = v }) }},
	{"sh.TSOMaxSize", 65535, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.TSOMaxSize = v }) }},
	{"sh.TSOMaxSegSize", 4096, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.TSOMaxSegSize = v }) }},
	{"sh.RxMaxSize", 2048, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.RxMaxSize = v }) }},
	{"sh.RxMaxSegSize", 2048, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.RxMaxSegSize = v }) }},
	{"sh.RxNSegments", 1, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.RxNSegments = v }) }},
	{"sh.NTxdMin[0]", 64, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.NTxdMin[0] = v }) }},
	{"sh.NTxdMax[0]", 4096, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.NTxdMax[0] = v }) }},
	{"sh.NTxdDefault[0]", 1024, func(r *regSpec, v int) {
		r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.NTxdDefault[0] = v })
	}},
	{"sh.NRxdMax[0]", 4096, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.NRxdMax[0] = v }) }},
	{"sh.NFL", 1, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.NFL = v }) }},
	{"sh.NTxQs", 1, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.NTxQs = v }) }},
	{"sh.NRxQs", 1, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.NRxQs = v }) }},
	{"sh.NRxdMin[0]", 64, func(r *regSpec, v int) { r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.NRxdMin[0] = v }) }},
	{"sh.NRxdDefault[0]", 1024, func(r *regSpec, v int) {
		r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.NRxdDefault[0] = v })
	}},
	{"sh.Flags", 0, func(r *regSpec, v int) {
		r.shared = append(r.shared, func(s *iflib.SharedCtx) { s.Flags = iflib.SharedFlags(uint32(v)) })
	}},
	// SoftcCtx (after simnic's AttachPre)
	{"sc.NTxQSets", 1, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.NTxQSets = v }) }},
	// N{Tx,Rx}QSetsMax: only the values iflib must refuse; a count above
	// the NIC's queues would be the wrapper lying to simnic (iflib's bounds
	// are unit-tested in TestConfigNonsenseIsConfigError).
	{"sc.NRxQSetsMax", 1, func(r *regSpec, v int) {
		if v <= 0 || v > iflib.MaxQueueSets {
			r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.NRxQSetsMax = v })
		}
	}},
	{"sc.TxdSize[0]", 16, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.TxdSize[0] = v }) }},
	{"sc.NRxQSets", 1, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.NRxQSets = v }) }},
	{"sc.NTxQSetsMax", 1, func(r *regSpec, v int) {
		if v <= 0 || v > iflib.MaxQueueSets {
			r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.NTxQSetsMax = v })
		}
	}},
	{"sc.RxdSize[0]", 16, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.RxdSize[0] = v }) }},
	{"sc.TxTSOSegSizeMax", 4096, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.TxTSOSegSizeMax = v }) }},
	{"sc.TxNSegments", 8, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.TxNSegments = v }) }},
	{"sc.TxTSOSegmentsMax", 16, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.TxTSOSegmentsMax = v }) }},
	{"sc.TxPad", 2, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.TxPad = v }) }},
	{"sc.RSSTableSize", 64, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.RSSTableSize = v }) }},
	{"sc.RxdBufSize[0]", 2048, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.RxdBufSize[0] = v }) }},
	{"sc.MaxFrameSize", 1518, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.MaxFrameSize = v }) }},
	{"sc.MinFrameSize", 60, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.MinFrameSize = v }) }},
	{"sc.DMAWidth", 64, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.DMAWidth = v }) }},
	{"sc.TxTSOSizeMax", 65535, func(r *regSpec, v int) { r.softc = append(r.softc, func(s *iflib.SoftcCtx) { s.TxTSOSizeMax = v }) }},
}

// registerErrs are the errors Register documents: a *ConfigError (iflib's
// or simnic's), ErrDetached (a hook called Detach), a busdma error when
// the space cannot provide the memory, cpumap's placement errors, and an
// *IFDIError (a driver's method failed; expect accepts it).
var registerErrs = []error{iflib.ErrConfig, simnic.ErrConfig, iflib.ErrDetached, simnic.ErrBusy,
	busdma.ErrNoMem, busdma.ErrInvalid, busdma.ErrTooBig, cpumap.ErrCoreOffset, cpumap.ErrQueueCount}

// txErrs are Transmit's documented errors (and the driver's encap errors,
// which simple and drbr modes return).
var txErrs = []error{iflib.ErrNotRunning, iflib.ErrLinkDown, iflib.ErrNoBufs, iflib.ErrNoMem, iflib.ErrTooBig,
	iflib.ErrBadLength, iflib.ErrWrongSpace, iflib.ErrEmptyPacket, iflib.ErrNilPacket, iflib.ErrForeignPacket,
	iflib.ErrUseAfterFree, iflib.ErrBadDriverIndex, iflib.ErrBadHeader, iflib.ErrOffloadDisabled, simnic.ErrFrameTooLong, simnic.ErrOffload}

func (m *model) register(i int) {
	if m.slots[i].Load() != nil {
		return
	}
	r := &regSpec{nic: simnic.Config{Unit: i, NTxd: 128, NRxd: 128, FIFO: 64, TxSegs: 8, Checker: m.env.Checker}}
	r.cfg = iflib.Config{TimerInterval: 3 * time.Millisecond, StopTimeout: 20 * time.Millisecond, RxZoneSize: 320}
	flags := m.in.u8()
	r.nic.Offload = flags&1 != 0
	r.cfg.TxMode = iflib.TxMode((flags >> 1) % 3)
	r.cfg.Poll = flags&8 != 0
	r.cfg.TxAbdicate = flags&16 != 0
	r.nic.TxCompletion = simnic.TxCompletion((flags >> 5) % 3)
	if flags&128 != 0 {
		r.nic.Schedule = simnic.NewSchedule(uint64(m.in.u16()), simnic.DefaultProfile())
	}
	var changed []string
	for k := int(m.in.u8() % 4); k > 0; k-- {
		p := params[int(m.in.u8())%len(params)]
		v := m.in.wide(p.sane)
		p.set(r, v)
		changed = append(changed, fmt.Sprintf("%s=%d", p.name, v))
	}
	s := &slot{idx: i, cfg: r.cfg}
	for h := range s.hooks.act {
		if m.in.u8()%4 == 0 {
			s.hooks.act[h] = m.in.u8()
		}
	}
	s.hooks.slow.Store(m.in.u8()%8 == 0)
	m.logf("register %d flags %#x %v hooks %v slow %v", i, flags, changed, s.hooks.describe(), s.hooks.slow.Load())
	m.nics++
	r.nic.Name = fmt.Sprintf("sim%d", m.nics)
	nic, err := m.env.NewNIC(r.nic)
	if err != nil {
		m.logf("  NewNIC = %v", err)
		m.expect("simnic.New", err, simnic.ErrConfig)
		return
	}
	s.nic = nic
	s.stopTimeout = max(r.cfg.StopTimeout, 0)
	if s.stopTimeout > time.Second {
		s.stopTimeout = time.Second
	}
	before := int64(m.env.Space.Allocated())
	a := iflib.Attachment{Config: r.cfg,
		Input:         func(_ *iflib.Context, qid int, pkts []*iflib.Packet) { m.input(s, qid, pkts) },
		RxFilter:      func(qid int, frame []byte) bool { return m.hook(s, hpFilter, nil) && len(frame)%7 == 0 },
		TxQueueSelect: func(p *iflib.Packet) int { m.hook(s, hpSelect, nil); return int(p.Hdr.FlowID) % 3 },
		InputReady:    func(qid int) bool { m.hook(s, hpInputReady, nil); return true },
	}
	var drv *simnic.Driver
	m.guard("Register", s.stopTimeout, func() {
		drv, err = m.env.AttachWith(nic, a, func(d *simnic.Driver, sh *iflib.SharedCtx) iflib.Device {
			for _, f := range r.shared {
				f(sh)
			}
			return &fuzzDev{Driver: d, m: m, s: s, softc: r.softc}
		})
	})
	if err != nil {
		m.logf("  = %v", err)
		m.expect("Register", err, registerErrs...)
		if a := int64(m.env.Space.Allocated()); a > before {
			m.fail("a failed Register left %d bytes allocated (before %d)", a, before)
		}
		return
	}
	s.drv, s.ctx = drv, drv.Context()
	s.before = before
	m.slots[i].Store(s)
	m.logf("  ok %s tx %d rx %d", s.ctx.Name(), s.ctx.NumTxQueues(), s.ctx.NumRxQueues())
}

func (h *hookPlan) describe() string {
	s := ""
	for i, a := range h.act {
		if a != 0 {
			s += fmt.Sprintf("%s:%d ", hookNames[i], a%8)
		}
	}
	return s
}

// hook runs the action planned for point p of s, once; ctx is the context
// an IFDI method received (nil: s.ctx). It reports true (the callbacks use
// it as a neutral answer).
func (m *model) hook(s *slot, p int, ctx *iflib.Context) bool {
	a := s.hooks.act[p]
	if a == 0 || s.hooks.fired[p].Swap(true) {
		return true
	}
	if ctx == nil {
		ctx = s.ctx
	}
	if ctx == nil {
		return true
	}
	var err error
	switch a % 8 {
	case 1:
		err = ctx.Init()
		m.expect(hookNames[p]+": Init", err, iflib.ErrDetached, iflib.ErrRegistering, iflib.ErrBusy)
	case 2:
		err = ctx.Stop()
		m.expect(hookNames[p]+": Stop", err, iflib.ErrDetached, iflib.ErrDeferred)
	case 3:
		err = ctx.Detach()
		m.expect(hookNames[p]+": Detach", err, iflib.ErrDetached, iflib.ErrDeferred)
	case 4:
		m.reads(ctx)
	case 5:
		ctx.AdminIntr()
		ctx.ReportPauseFrames(1)
	case 6:
		ctx.LinkStateChange(iflib.LinkState(a>>3%3), 1e9)
	case 7:
		if p == hpSelect || p == hpEncap {
			time.Sleep(s.stopTimeout + 5*time.Millisecond)
		}
	}
	return true
}

// reads reads everything a context offers to read.
func (m *model) reads(ctx *iflib.Context) {
	_ = ctx.SysctlLines()
	_, _ = ctx.SysctlValue("dev.sim1.0.iflib.txq0.opackets")
	_ = ctx.Sysctl()
	for c := iflib.IfCounter(-1); c <= iflib.IfCounterOQDrops+1; c++ {
		_ = ctx.Counter(c)
	}
	for q := -1; q <= 2; q++ {
		_, err := ctx.TxQueueStats(q)
		m.expect("TxQueueStats", err, iflib.ErrNoQueue)
		_, err = ctx.RxQueueStats(q)
		m.expect("RxQueueStats", err, iflib.ErrNoQueue)
		_ = ctx.TxBacklog(q)
		_ = ctx.RxBufSize(q)
	}
	_ = ctx.Placement()
	_ = ctx.LinkState()
	_ = ctx.Resets() + ctx.WatchdogEvents()
}

// input is the stack: it frees what it receives, or forwards it to the
// other slot (TransmitBatch), and runs the Input hook.
func (m *model) input(s *slot, qid int, pkts []*iflib.Packet) {
	m.hook(s, hpInput, nil)
	if other := m.slots[1-s.idx].Load(); other != nil && len(pkts) > 0 && pkts[0].Hdr.Len%3 == 0 {
		other.fwd.RLock()
		defer other.fwd.RUnlock()
		other.handed.Add(int64(len(pkts)))
		_, err := other.ctx.TransmitBatch(pkts)
		assert.False(m.t, err != nil && !isOneOf(err, txErrs...), "forwarding TransmitBatch: undocumented error %T: %v", err, err)
		return
	}
	for _, p := range pkts {
		p.Free()
	}
}

// fuzzDev wraps simnic's driver: every IFDI method runs its hook after
// delegating; AttachPre also perturbs the SoftcCtx and wraps the TxRx.
type fuzzDev struct {
	*simnic.Driver
	m     *model
	s     *slot
	softc []func(*iflib.SoftcCtx)
}

func (d *fuzzDev) AttachPre(ctx *iflib.Context, sc *iflib.SoftcCtx) error {
	if err := d.Driver.AttachPre(ctx, sc); err != nil {
		return err
	}
	for _, f := range d.softc {
		f(sc)
	}
	sc.TxRx = &fuzzTxRx{Driver: d.Driver, m: d.m, s: d.s}
	d.m.hook(d.s, hpAttachPre, ctx)
	return nil
}
func (d *fuzzDev) TxqSetup(ctx *iflib.Context, qid int) error {
	d.m.hook(d.s, hpTxqSetup, ctx)
	return nil
}
func (d *fuzzDev) RxqSetup(ctx *iflib.Context, qid int) error {
	d.m.hook(d.s, hpRxqSetup, ctx)
	return nil
}
func (d *fuzzDev) AttachPost(ctx *iflib.Context) error { d.m.hook(d.s, hpAttachPost, ctx); return nil }
func (d *fuzzDev) Init(ctx *iflib.Context) error {
	err := d.Driver.Init(ctx)
	d.m.hook(d.s, hpInit, ctx)
	return err
}
func (d *fuzzDev) Stop(ctx *iflib.Context) {
	d.Driver.Stop(ctx)
	d.m.hook(d.s, hpStop, ctx)
}
func (d *fuzzDev) UpdateAdminStatus(ctx *iflib.Context) {
	d.Driver.UpdateAdminStatus(ctx)
	d.m.hook(d.s, hpUpdateAdmin, ctx)
}
func (d *fuzzDev) Timer(ctx *iflib.Context, qid int) {
	d.Driver.Timer(ctx, qid)
	d.m.hook(d.s, hpTimer, ctx)
}
func (d *fuzzDev) WatchdogReset(ctx *iflib.Context) {
	d.Driver.WatchdogReset(ctx)
	d.m.hook(d.s, hpWatchdogReset, ctx)
}

var (
	_ iflib.QueueSetupper      = (*fuzzDev)(nil)
	_ iflib.AttachPoster       = (*fuzzDev)(nil)
	_ iflib.QueueIntrEnabler   = (*fuzzDev)(nil)
	_ iflib.AdminStatusUpdater = (*fuzzDev)(nil)
	_ iflib.TimerHandler       = (*fuzzDev)(nil)
	_ iflib.WatchdogResetter   = (*fuzzDev)(nil)
)

// fuzzTxRx is simnic's if_txrx with a hook in TxdEncap (which may sleep
// past StopTimeout once).
type fuzzTxRx struct {
	*simnic.Driver
	m *model
	s *slot
}

func (t *fuzzTxRx) TxdEncap(pi *iflib.PktInfo) error {
	if t.s.hooks.slow.Load() && t.s.hooks.slow.Swap(false) {
		time.Sleep(t.s.stopTimeout + 5*time.Millisecond)
	}
	t.m.hook(t.s, hpEncap, nil)
	return t.Driver.TxdEncap(pi)
}

func (m *model) detach(s *slot) {
	m.logf("detach %d", s.idx)
	var err error
	m.guard("Detach", s.stopTimeout, func() { err = s.ctx.Detach() })
	m.logf("  = %v", err)
	// ErrLeak: packets of its RX zones were forwarded to the other context
	// and are still queued there.
	m.expect("Detach", err, iflib.ErrDetached, iflib.ErrDeferred, iflib.ErrLeak)
}

// shapes of packets Transmit gets.
const numShapes = 16

// packet builds a packet of the given shape for s (nil when the zone has
// none); owned reports whether iflib takes ownership (not for a nil,
// foreign or freed packet).
func (m *model) packet(s *slot, shape byte) (p *iflib.Packet, kind string) {
	z := m.txZone()
	maxf := s.nic.Config().MaxFrame
	build := func(n, nseg int) *iflib.Packet {
		data := simnictest.FrameSpec{Seq: uint32(n), Len: n, Proto: simnictest.ProtoTCP}.Build(nil)
		if n == 0 {
			data = nil
		}
		return m.chain(z, data, nseg)
	}
	switch shape % numShapes {
	case 0:
		return nil, "nil"
	case 1:
		return &iflib.Packet{}, "foreign"
	case 2:
		if len(m.stale) > 0 {
			p := m.stale[len(m.stale)-1]
			m.stale = m.stale[:len(m.stale)-1]
			return p, "stale"
		}
		return nil, "nil"
	case 3:
		return build(0, 1), "empty"
	case 4:
		return build(1, 1), "one byte"
	case 5:
		return build(maxf, 1+int(m.in.u8()%12)), "MaxFrame"
	case 6:
		p := build(maxf, 1)
		if p != nil {
			p.Hdr.Flags |= iflib.MVLANTag
			p.Hdr.VLANTag = 7
		}
		return p, "MaxFrame + VLAN tag"
	case 7:
		data := simnictest.FrameSpec{Len: maxf, VLAN: 5}.Build(nil) // MaxFrame+4, tagged in the data
		return m.chain(z, data, 2), "MaxFrame+4 tagged"
	case 8:
		return build(maxf+1+int(m.in.u8()), 1), "over MaxFrame"
	case 9, 10:
		n := 54 + m.in.u16()
		p := build(n, 1+int(m.in.u8()%40))
		if p != nil {
			p.Hdr.CsumFlags = iflib.CsumIPTSO
			p.Hdr.TSOSegSize = uint16(m.in.u16())
		}
		return p, fmt.Sprintf("TSO %d", n)
	case 11:
		p := build(60+int(m.in.u8())*4, 1)
		if p != nil {
			p.Hdr.Len += int(int8(m.in.u8())) | 1 // disagrees with the chain
		}
		return p, "bad length"
	case 12:
		fp, err := m.foreign.Get()
		if err != nil {
			return nil, "nil"
		}
		fp.SetLen(100)
		return fp, "other space"
	case 13:
		p := build(60+int(m.in.u8()), 1)
		if p != nil {
			p.Hdr.CsumFlags = iflib.CsumFlags(uint32(m.in.u8()) << (m.in.u8() % 24))
			p.Hdr.HashType = iflib.HashRSSTCPv4
			p.Hdr.FlowID = uint32(m.in.u16())
		}
		return p, "offload flags"
	default:
		n := 60 + m.in.u16()%1500
		return build(n, 1+int(m.in.u8()%8)), fmt.Sprintf("%d bytes", n)
	}
}

// txZone is the run's TX zone (made on first use).
func (m *model) txZone() *iflib.Zone {
	for _, z := range m.zones {
		if z.ClusterSize() >= 64 {
			return z
		}
	}
	z, err := m.env.NewZone("tx", iflib.MCLBytes, 512)
	if err != nil {
		m.fail("tx zone: %v", err)
	}
	m.zones = append(m.zones, z)
	return z
}

// chain builds data over nseg buffers of z (nil if the zone is empty).
func (m *model) chain(z *iflib.Zone, data []byte, nseg int) *iflib.Packet {
	p, err := z.GetChain(data, simnictest.PartLen(len(data), nseg))
	if err != nil {
		return nil
	}
	return p
}

// account books a Transmit result for s.
func (s *slot) account(err error) {
	switch {
	case err == nil:
		s.handed.Add(1)
	case isOneOf(err, iflib.ErrForeignPacket):
		s.foreign.Add(1)
	case isOneOf(err, iflib.ErrNilPacket, iflib.ErrUseAfterFree):
	default:
		s.handed.Add(1)
	}
}

func (m *model) transmit(s *slot) {
	p, kind := m.packet(s, m.in.u8())
	m.logf("transmit %d %s", s.idx, kind)
	var err error
	m.guard("Transmit", s.stopTimeout, func() { err = s.ctx.Transmit(p) })
	m.logf("  = %v", err)
	m.expect("Transmit", err, txErrs...)
	s.account(err)
	m.uaf = kind == "stale"
}

func (m *model) transmitBatch(s *slot) {
	n := int(m.in.u8() % 40)
	batch := make([]*iflib.Packet, 0, n)
	var kinds []string
	for i := 0; i < n; i++ {
		p, kind := m.packet(s, m.in.u8())
		batch = append(batch, p)
		kinds = append(kinds, kind)
	}
	m.logf("transmit batch %d %v", s.idx, kinds)
	pk := append([]*iflib.Packet(nil), batch...)
	var sent int
	var err error
	m.guard("TransmitBatch", s.stopTimeout, func() { sent, err = s.ctx.TransmitBatch(batch) })
	m.logf("  = %d, %v", sent, err)
	m.expect("TransmitBatch", err, txErrs...)
	for i, p := range pk {
		switch {
		case p == nil:
		case kinds[i] == "foreign":
			s.foreign.Add(1)
		case kinds[i] == "stale":
			m.uaf = true
		default:
			s.handed.Add(1)
		}
	}
	for i := range batch {
		if batch[i] != nil {
			m.fail("TransmitBatch left entry %d of the slice set", i)
		}
	}
}

// receive puts frames on s's wire.
func (m *model) receive(s *slot) {
	n := int(m.in.u8()%32) + 1
	size := m.in.u16()
	vlan := uint16(0)
	if size&1 != 0 {
		vlan = uint16(m.in.u8())
	}
	maxf := s.nic.Config().MaxFrame
	switch size % 5 {
	case 0:
		size = maxf
	case 1:
		size = maxf + 4
	case 2:
		size = 60 + size%200
	}
	m.logf("receive %d ×%d of %d vlan %d", s.idx, n, size, vlan)
	for i := 0; i < n; i++ {
		f := simnictest.FrameSpec{Flow: 1, Seq: uint32(i), Len: size, VLAN: vlan}.Build(nil)
		if len(f) >= 34 && i%2 == 1 {
			binary.BigEndian.PutUint32(f[26:30], uint32(i)) // spread over the RSS queues
		}
		s.nic.Receive(f)
	}
}

// zoneOp opens a zone of any cluster size and count, closes one, or waits
// on one with a deadline.
func (m *model) zoneOp() {
	switch m.in.u8() % 3 {
	case 0:
		size, count := m.in.wide(256), m.in.wide(16)
		m.logf("zone new %d×%d", count, size)
		if size > 1<<20 || count > 1<<14 {
			return // valid but more than the run's address space holds
		}
		z, err := m.env.NewZone(fmt.Sprintf("z%d", len(m.zones)), size, count)
		m.logf("  = %v", err)
		m.expect("NewZone", err, iflib.ErrConfig, busdma.ErrNoMem, busdma.ErrInvalid)
		if err == nil {
			m.zones = append(m.zones, z)
		}
	case 1:
		if len(m.zones) == 0 {
			return
		}
		i := int(m.in.u8()) % len(m.zones)
		z := m.zones[i]
		m.logf("zone close %s", z.Name())
		var kept []heldPkt
		var freed []*iflib.Packet
		for _, h := range m.held {
			if h.z == z {
				h.p.Free()
				freed = append(freed, h.p)
			} else {
				kept = append(kept, h)
			}
		}
		m.held = kept
		err := z.Close()
		m.logf("  = %v", err)
		m.expect("Zone.Close", err, iflib.ErrLeak)
		if err == nil {
			m.zones = append(m.zones[:i], m.zones[i+1:]...)
			_, err := z.Get()
			m.expect("Get after Close", err, iflib.ErrZoneClosed)
			if err == nil {
				m.fail("Get on a closed zone handed out a packet")
			}
			m.closed = append(m.closed, z)
			// Pointers to its packets are stale for good: the zone never
			// hands them out again.
			m.stale = append(m.stale, freed...)
		}
	case 2:
		z := m.txZone()
		if len(m.closed) > 0 && m.in.u8()%2 == 0 {
			z = m.closed[0]
		}
		d := time.Duration(m.in.u8()%8) * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), d)
		m.logf("getwait %s %v", z.Name(), d)
		var p *iflib.Packet
		var err error
		m.guard("GetWait", d, func() { p, err = z.GetWait(ctx) })
		cancel()
		m.logf("  = %v", err)
		m.expect("GetWait", err, context.DeadlineExceeded, iflib.ErrZoneClosed)
		if p != nil {
			m.held = append(m.held, heldPkt{p, z})
		}
	}
}

// holdOp takes packets from the TX zone and keeps them (a stack holding
// buffers: the zone runs short), or gives them all back.
func (m *model) holdOp() {
	if m.in.u8()%2 == 0 {
		m.logf("release %d", len(m.held))
		for _, h := range m.held {
			h.p.Free()
		}
		m.held = m.held[:0]
		return
	}
	z := m.txZone()
	n := int(m.in.u8())
	m.logf("hold %d", n)
	for i := 0; i < n; i++ {
		p, err := z.Get()
		if err != nil {
			break
		}
		m.held = append(m.held, heldPkt{p, z})
	}
}

// concurrent runs senders on other goroutines while this one calls a
// lifecycle method: Stop, Detach or Init racing Transmit and
// TransmitBatch.
func (m *model) concurrent(s *slot) {
	senders, each := 1+int(m.in.u8()%4), 1+int(m.in.u8()%32)
	cb := m.in.u8()
	call := cb % 4
	z := m.txZone()
	m.logf("concurrent %d: %d senders × %d, call %d, control %d", s.idx, senders, each, call, cb>>2)
	var wg sync.WaitGroup
	var ctlWhat string
	var ctlErr error
	if cb>>2 != 0 {
		// A control call (the selector's high bits) racing the senders and
		// the lifecycle call.
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctlWhat, ctlErr = m.ctlCall(s, int(cb>>2))
		}()
	}
	for g := 0; g < senders; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p, err := z.Get()
				if err != nil {
					return
				}
				p.SetLen(60 + (g*31+i)%1400)
				if g%2 == 0 {
					err = s.ctx.Transmit(p)
					assert.False(m.t, err != nil && !isOneOf(err, txErrs...), "concurrent Transmit: undocumented error %T: %v", err, err)
					s.account(err)
				} else {
					b := []*iflib.Packet{p}
					_, err = s.ctx.TransmitBatch(b)
					assert.False(m.t, err != nil && !isOneOf(err, txErrs...), "concurrent TransmitBatch: undocumented error %T: %v", err, err)
					s.handed.Add(1)
				}
			}
		}(g)
	}
	var err error
	m.guard("a lifecycle call racing senders", s.stopTimeout, func() {
		switch call {
		case 0:
			err = s.ctx.Stop()
		case 1:
			err = s.ctx.Detach()
		case 2:
			err = s.ctx.Init()
		case 3:
			if err = s.ctx.Stop(); err == nil {
				err = s.ctx.Init()
			}
		}
	})
	m.logf("  = %v", err)
	m.expect("a lifecycle call racing senders", err, iflib.ErrDetached, iflib.ErrDeferred, iflib.ErrBusy, iflib.ErrLeak)
	m.guard("the racing senders", 3*s.stopTimeout, wg.Wait)
	if cb>>2 != 0 {
		m.logf("  ctl %d %s = %v", s.idx, ctlWhat, ctlErr)
		m.expect("racing "+ctlWhat, ctlErr, ctlErrs...)
	}
}

// ctlErrs are the control calls' documented errors.
var ctlErrs = []error{iflib.ErrConfig, iflib.ErrNotSupported, iflib.ErrDetached, iflib.ErrReentrant, iflib.ErrBusy,
	iflib.ErrLeak, simnic.ErrConfig, simnic.ErrBusy}

// ctl makes one control call on s chosen by k (the high bits of a byte
// the operation already drew, so that adding the calls did not change how
// older corpus entries are read), logs it and checks its error. k = 0
// makes none.
func (m *model) ctl(s *slot, k int) {
	if s == nil || k == 0 {
		return
	}
	what, err := m.ctlCall(s, k)
	m.logf("  ctl %d %s = %v", s.idx, what, err)
	m.expect(what, err, ctlErrs...)
}

// ctlCall is ctl's call, safe beside other operations: it neither logs
// nor checks.
func (m *model) ctlCall(s *slot, k int) (what string, err error) {
	ctx := s.ctx
	switch k % 8 {
	case 1:
		mtu := []int{1500, 9000, 576, 0, 1 << 20, 4000, 68, 16000}[k/8%8]
		what = fmt.Sprintf("SetMTU(%d)", mtu)
		m.guard(what, 2*s.stopTimeout, func() { err = ctx.SetMTU(mtu) })
	case 2:
		f := iflib.IfFlags(k / 8 % 4 * 0x100)
		if k&64 != 0 {
			f |= 1 // not modelled: a *ConfigError
		}
		what = fmt.Sprintf("SetFlags(%v)", f)
		err = ctx.SetFlags(f)
	case 3:
		a := iflib.EtherAddr{1, 0, 0x5e, 0, 0, byte(k / 16)}
		if k&8 != 0 {
			a[0] = 2 // unicast: a *ConfigError
		}
		what = fmt.Sprintf("Add/DelMulti(%v)", a)
		if err = ctx.AddMulti(a); err == nil && k&32 != 0 {
			err = ctx.DelMulti(a)
		}
	case 4:
		tag := uint16([]int{1, 100, 4095, 0, 4096, 7}[k/8%6])
		what = fmt.Sprintf("Register/UnregisterVLAN(%d)", tag)
		m.guard(what, 2*s.stopTimeout, func() {
			if err = ctx.RegisterVLAN(tag); err == nil && k&64 != 0 {
				err = ctx.UnregisterVLAN(tag)
			}
		})
	case 5:
		caps := ctx.Capabilities()
		if k&8 != 0 {
			caps &^= iflib.CapTxCsum | iflib.CapTSO4 | iflib.CapTSO6
		}
		if k&16 != 0 {
			caps |= iflib.CapLRO | 1<<31 // perhaps not offered
		}
		what = fmt.Sprintf("SetCapEnable(%v)", caps)
		m.guard(what, 2*s.stopTimeout, func() { err = ctx.SetCapEnable(caps) })
	case 6:
		what = "MediaStatus/SetMedia"
		list := ctx.MediaList()
		if _, err = ctx.MediaStatus(); err != nil {
			break
		}
		med := iflib.Media1000T
		if len(list) > 0 {
			med = list[k/8%len(list)]
		}
		err = ctx.SetMedia(med)
	case 7:
		what = "SetRSS/RequestReset"
		r := ctx.RSS()
		if k&8 != 0 && len(r.Table) > 0 {
			r.Table[0] = uint16(k) // perhaps no such queue
		}
		ctx.RequestReset()
		m.guard(what, 2*s.stopTimeout, func() { err = ctx.SetRSS(r) })
	}
	_, _, _, _ = ctx.MAC(), ctx.MTU(), ctx.Flags(), ctx.Multicast()
	_, _, _ = ctx.VLANs(), ctx.CapEnabled(), ctx.Media()
	return what, err
}
