package iflib_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/iflib"
)

// fakeNIC is a scriptable in-memory device for iflib's own regression
// tests: the test decides when TX descriptors complete (or never), what
// the driver reports for each received packet, and how credits are
// counted. Descriptors are Go values; packet data moves only through
// busdma's device-side access, so the checker sees every buffer access.
// (examples/simnic is the realistic device; this one is the precise one.)
type fakeNIC struct {
	t     testing.TB
	space busdma.Space
	bus   *busdma.Device
	chk   *busdma.Checker
	ctx   *iflib.Context
	ntxd  int
	nrxd  int
	segs  int
	width int // isc_dma_width

	// timerPeriods counts IFDI_TIMER calls for queue 0 (one per period).
	timerPeriods atomic.Uint64

	mu sync.Mutex
	// TX: descriptors the driver wrote, the doorbell, what the device
	// processed and what TxdCreditsUpdate has reported.
	txd       []fakeTxd
	txTail    int
	txHead    int
	txDone    int // descriptors processed, free-running
	txCredits int // descriptors reported by TxdCreditsUpdate, free-running
	hold      bool
	// packetCredits reports credits only up to the last completed
	// end-of-packet descriptor (em's tx_rsq style); otherwise credits are
	// descriptor-exact and may end inside a packet (ixl head write-back).
	packetCredits bool
	frames        [][]byte // frames the device sent (unless discard)
	nframes       int      // frames the device sent
	discard       bool     // count frames without keeping them (benchmarks)
	scratch       []byte
	cur           []byte
	encapHook     func(pi *iflib.PktInfo) error
	encapDone     func(pi *iflib.PktInfo) // after the descriptors are written: may lie about ipi_new_pidx

	// RX: posted buffers by ring position, completions, hooks.
	rxSlot    []uint16
	rxAddr    []busdma.BusAddr
	rxTail    int
	rxHead    int // next position the device fills
	rxDone    []fakeRxd
	rxBuf     int
	pktGet    func(ri *iflib.RxdInfo) error // runs after the description is filled
	rxPad     int
	noLink    bool
	noTxIntr  bool // the device completes TX but raises no interrupt
	noRxIntr  bool // the device receives but raises no interrupt
	initCalls int
	stopCalls int
	softc     func(*iflib.SoftcCtx) // applied at the end of AttachPre
}

type fakeTxd struct {
	addr busdma.BusAddr
	n    int
	eop  bool
}

type fakeRxd struct {
	n   int
	eop bool
}

type fakeOpts struct {
	ntxd, nrxd, segs int
	rxBuf            int
	space            busdma.Space // nil: a SimSpace of 64 MiB
	cfg              iflib.Config
	input            func(_ *iflib.Context, qid int, pkts []*iflib.Packet)
	filter           func(qid int, frame []byte) bool
	inputReady       func(qid int) bool
	etherPad         bool // IFLIB_NEED_ETHER_PAD with a 60-byte minimum
	noChecker        bool // benchmarks: no busdma checker
	dmaWidth         int  // isc_dma_width (0: 64 bits)
	name             string
	// wrap, when set, gives the Device to register in place of the fake
	// (a wrapper that delegates to it and adds IFDI methods).
	wrap func(f *fakeNIC) iflib.Device
	// shared and softc change the shared context before Register and the
	// softc context at the end of AttachPre.
	shared   func(*iflib.SharedCtx)
	softc    func(*iflib.SoftcCtx)
	selector func(*iflib.Packet) int // Attachment.TxQueueSelect
}

func newFake(t testing.TB, o fakeOpts) *fakeNIC {
	t.Helper()
	f, err := tryFake(t, o)
	require.NoError(t, err)
	return f
}

func tryFake(t testing.TB, o fakeOpts) (*fakeNIC, error) {
	t.Helper()
	if o.ntxd == 0 {
		o.ntxd = 256
	}
	if o.nrxd == 0 {
		o.nrxd = 256
	}
	if o.segs == 0 {
		o.segs = 8
	}
	if o.rxBuf == 0 {
		o.rxBuf = iflib.MCLBytes
	}
	space := o.space
	if space == nil {
		s, err := busdma.NewSimSpace(busdma.SimConfig{Size: 16 << 20, ContigSize: 4 << 20})
		require.NoError(t, err)
		space = s
	}
	var chk *busdma.Checker
	if !o.noChecker {
		chk = busdmatest.NewChecker(t)
	}
	bus, err := busdma.NewDevice(space, busdma.DeviceConfig{Name: "fake0", Checker: chk})
	require.NoError(t, err)
	f := &fakeNIC{t: t, space: space, bus: bus, chk: chk, ntxd: o.ntxd, nrxd: o.nrxd, segs: o.segs, width: o.dmaWidth, rxBuf: o.rxBuf,
		txd: make([]fakeTxd, o.ntxd), rxSlot: make([]uint16, o.nrxd), rxAddr: make([]busdma.BusAddr, o.nrxd),
		rxDone: make([]fakeRxd, o.nrxd), softc: o.softc}
	if o.cfg.TimerInterval == 0 {
		o.cfg.TimerInterval = 5 * time.Millisecond
	}
	if o.name == "" {
		o.name = "fake"
	}
	sh := &iflib.SharedCtx{
		DriverName: o.name, TxMaxSize: 65535, TxMaxSegSize: 4096,
		RxMaxSize: o.rxBuf, RxMaxSegSize: o.rxBuf, RxNSegments: 1, NTxQs: 1, NRxQs: 1,
	}
	if o.etherPad {
		sh.Flags |= iflib.FlagNeedEtherPad
	}
	sh.NTxdMin[0], sh.NTxdMax[0], sh.NTxdDefault[0] = 64, 4096, o.ntxd
	sh.NRxdMin[0], sh.NRxdMax[0], sh.NRxdDefault[0] = 64, 4096, o.nrxd
	if o.shared != nil {
		o.shared(sh)
	}
	var dev iflib.Device = f
	if o.wrap != nil {
		dev = o.wrap(f)
	}
	ctx, err := iflib.Register(iflib.Attachment{Driver: dev, Shared: sh, Bus: bus, Config: o.cfg, Input: o.input, RxFilter: o.filter, InputReady: o.inputReady,
		TxQueueSelect: o.selector})
	if err != nil {
		require.NoError(t, bus.Close())
		return nil, err
	}
	f.ctx = ctx
	return f, nil
}

// zone returns a TX zone on the device's space.
func (f *fakeNIC) zone(size, n int) *iflib.Zone {
	f.t.Helper()
	z, err := iflib.NewZone(f.space, "tx", size, n)
	require.NoError(f.t, err)
	return z
}

// close detaches and checks everything came home.
func (f *fakeNIC) close(zones ...*iflib.Zone) {
	f.t.Helper()
	require.NoError(f.t, f.ctx.Detach())
	for _, z := range zones {
		require.Equal(f.t, z.Size(), z.Available(), "zone %s: packets not back", z.Name())
	}
	require.NoError(f.t, f.bus.Close())
}

// IFDI.

func (f *fakeNIC) AttachPre(ctx *iflib.Context, sc *iflib.SoftcCtx) error {
	sc.NTxQSetsMax, sc.NRxQSetsMax = 1, 1
	sc.TxdSize[0], sc.RxdSize[0] = 16, 16
	sc.TxNSegments = f.segs
	sc.RxdBufSize[0] = f.rxBuf
	sc.MinFrameSize = 60
	sc.DMAWidth = f.width
	sc.TxRx = f
	if f.softc != nil {
		f.softc(sc)
	}
	return nil
}
func (f *fakeNIC) TxQueuesAlloc([]iflib.RingMem, int, int) error { return nil }
func (f *fakeNIC) RxQueuesAlloc([]iflib.RingMem, int, int) error { return nil }
func (f *fakeNIC) Init(ctx *iflib.Context) error {
	f.mu.Lock()
	f.initCalls++
	f.txTail, f.txHead, f.txDone, f.txCredits, f.cur = 0, 0, 0, 0, nil
	f.rxTail, f.rxHead = 0, 0
	clear(f.rxDone)
	f.mu.Unlock()
	if !f.noLink {
		ctx.LinkStateChange(iflib.LinkStateUp, 1e9)
	}
	return nil
}
func (f *fakeNIC) Stop(ctx *iflib.Context) {
	f.mu.Lock()
	f.stopCalls++
	f.mu.Unlock()
	ctx.LinkStateChange(iflib.LinkStateDown, 0)
}
func (f *fakeNIC) IntrEnable(*iflib.Context)   {}
func (f *fakeNIC) IntrDisable(*iflib.Context)  {}
func (f *fakeNIC) Detach(*iflib.Context) error { return nil }

// TX.

func (f *fakeNIC) TxdEncap(pi *iflib.PktInfo) error {
	f.mu.Lock()
	hook := f.encapHook
	f.mu.Unlock()
	if hook != nil {
		if err := hook(pi); err != nil {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	idx := pi.PIdx
	for i := 0; i < pi.NSegs; i++ {
		f.txd[idx] = fakeTxd{addr: pi.Segs[i].Addr, n: pi.Segs[i].Len, eop: i == pi.NSegs-1}
		idx = (idx + 1) % f.ntxd
	}
	pi.NewPIdx = idx
	if f.encapDone != nil {
		f.encapDone(pi)
	}
	return nil
}

// Timer is IFDI_TIMER: it counts the timer's periods.
func (f *fakeNIC) Timer(_ *iflib.Context, qid int) {
	if qid == 0 {
		f.timerPeriods.Add(1)
	}
}

func (f *fakeNIC) TxdFlush(qid, pidx int) {
	f.mu.Lock()
	f.txTail = pidx
	hold := f.hold
	f.mu.Unlock()
	if !hold {
		f.complete(-1)
	}
}

// complete lets the device process up to n descriptors (-1: all posted),
// reading each buffer through busdma, and raises a TX interrupt.
func (f *fakeNIC) complete(n int) int {
	f.mu.Lock()
	done := 0
	for f.txHead != f.txTail && n != 0 {
		d := f.txd[f.txHead]
		if cap(f.scratch) < d.n {
			f.scratch = make([]byte, d.n)
		}
		b := f.scratch[:d.n]
		assert.NoError(f.t, f.bus.Read(d.addr, b), "device read of a TX buffer")
		if !f.discard {
			f.cur = append(f.cur, b...)
		}
		if d.eop {
			f.nframes++
			if !f.discard {
				f.frames = append(f.frames, f.cur)
				f.cur = nil
			}
		}
		f.txHead = (f.txHead + 1) % f.ntxd
		f.txDone++
		done++
		n--
	}
	intr := done > 0 && !f.noTxIntr
	f.mu.Unlock()
	if intr {
		f.ctx.TxIntr(0)
	}
	return done
}

func (f *fakeNIC) TxdCreditsUpdate(qid int, clear bool) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	upto := f.txDone
	if f.packetCredits {
		// Back off to the last end of packet among the processed ones.
		for upto > f.txCredits && !f.txd[(upto-1)%f.ntxd].eop {
			upto--
		}
	}
	n := upto - f.txCredits
	if clear {
		f.txCredits = upto
	}
	return n
}

func (f *fakeNIC) sent() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.frames...)
}

// RX.

func (f *fakeNIC) RxdRefill(iru *iflib.RxdUpdate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rxBuf = iru.BufSize // the cluster size iflib resolved
	for i := 0; i < iru.Count; i++ {
		pos := (iru.PIdx + i) % f.nrxd
		f.rxSlot[pos], f.rxAddr[pos] = iru.Idxs[i], iru.PAddrs[i]
	}
}

func (f *fakeNIC) RxdFlush(qid, flid, pidx int) {
	f.mu.Lock()
	f.rxTail = pidx
	f.mu.Unlock()
}

// rx has the device receive a frame into the posted buffers (several if
// it is longer than one), after f.rxPad bytes of pad in the first. It
// reports false when not enough buffers are posted.
func (f *fakeNIC) rx(frame []byte) bool {
	f.mu.Lock()
	posted := (f.rxTail - f.rxHead + f.nrxd) % f.nrxd
	need := max(1, (f.rxPad+len(frame)+f.rxBuf-1)/f.rxBuf)
	if need > posted {
		f.mu.Unlock()
		return false
	}
	b := append(make([]byte, f.rxPad), frame...)
	for k := 0; k < need; k++ {
		chunk := b[:min(len(b), f.rxBuf)]
		b = b[len(chunk):]
		assert.NoError(f.t, f.bus.Write(f.rxAddr[f.rxHead], chunk), "device write of an RX buffer")
		f.rxDone[f.rxHead] = fakeRxd{n: len(chunk), eop: k == need-1}
		f.rxHead = (f.rxHead + 1) % f.nrxd
	}
	intr := !f.noRxIntr
	f.mu.Unlock()
	if intr {
		f.ctx.RxIntr(0)
	}
	return true
}

func (f *fakeNIC) RxdAvailable(qid, cidx, budget int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for i := cidx; i != f.rxHead && n < budget; i = (i + 1) % f.nrxd {
		if f.rxDone[i].eop {
			n++
		}
	}
	return n
}

func (f *fakeNIC) RxdPktGet(ri *iflib.RxdInfo) error {
	f.mu.Lock()
	i, n := ri.CIdx, 0
	for {
		d := f.rxDone[i]
		if d.n == 0 || n == len(ri.Frags) {
			f.mu.Unlock()
			return errFakeNotDone // EBADMSG: iflib read a descriptor the device did not write
		}
		l := d.n
		if n == 0 {
			l -= f.rxPad // irf_len excludes the pad
		}
		ri.Frags[n] = iflib.RxdFrag{Idx: f.rxSlot[i], Len: uint16(l)}
		ri.Len += d.n
		f.rxDone[i] = fakeRxd{}
		n++
		i = (i + 1) % f.nrxd
		if d.eop {
			break
		}
	}
	ri.NFrags, ri.Pad = n, f.rxPad
	hook := f.pktGet
	f.mu.Unlock()
	if hook != nil {
		return hook(ri)
	}
	return nil
}

var errFakeNotDone = errors.New("fake: RX descriptor not done (EBADMSG)")

var (
	_ iflib.Device = (*fakeNIC)(nil)
	_ iflib.TxRx   = (*fakeNIC)(nil)
)

// pkt returns a packet of n bytes whose payload encodes tag.
func pkt(t testing.TB, z *iflib.Zone, n int, tag byte) *iflib.Packet {
	t.Helper()
	p, err := z.Get()
	require.NoError(t, err)
	p.SetLen(n)
	b := p.Bytes()
	for i := range b {
		b[i] = tag + byte(i)
	}
	p.Hdr.Len = n
	return p
}

// takeClientReports returns the checker's reports of misuse found by iflib
// (KindClient) and clears the checker, so that a test that commits the
// misuse on purpose can assert the report and still end clean.
func (f *fakeNIC) takeClientReports() []busdma.Report {
	var out []busdma.Report
	for _, r := range f.chk.Reports() {
		if r.Kind == busdma.KindClient {
			out = append(out, r)
		} else {
			assert.Fail(f.t, fmt.Sprintf("unexpected report: %s", r))
		}
	}
	f.chk.Reset()
	return out
}
