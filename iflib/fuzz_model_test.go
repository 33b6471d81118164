package iflib_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// The model-based fuzzer over iflib contexts (issue 20 §1).
//
// FuzzModel decodes its input into a sequence of operations on one or two
// simnic-backed contexts — Register with every numeric parameter drawn
// from the whole range, Init, Stop and Detach from outside and from every
// callback and IFDI method (Register's included), Transmit and
// TransmitBatch of packets and chains of every shape, frames from the
// wire, link flaps, injected device faults, zones opened, closed and
// waited on, counter and sysctl reads — and checks after every step:
//
//   - nothing panics, and every call returns within opGuard (a guard
//     goroutine prints the operation log and the replay command and
//     crashes the run otherwise);
//   - every error is one its method documents (errors.Is against the
//     method's set);
//   - busdma's checker reports nothing, and the device never touched
//     memory outside a mapping;
//   - the conservation ledger: every packet handed to a context is sent
//     (the driver put it on a ring: TxEncapped) or counted once as a drop
//     (oqdrops, oerrors), checked when the context's Detach has finished;
//   - after Detach the address space holds no more than before Register,
//     and at the end nothing at all (Allocated() == 0), no map is loaded,
//     every packet is back in its zone and no goroutine is left
//     (simnictest.Env.Close).
//
// A failing input prints its operation log and a replay command:
//
//	IFLIB_FUZZ_INPUT=<hex> go test -run '^TestFuzzModelReplay$' -v ./iflib/
//
// The committed corpus is in testdata/fuzz/FuzzModel; CI runs the target
// for 10 s (.ci/fuzz). A long run (README):
//
//	go test -run '^$' -fuzz '^FuzzModel$' -fuzztime 1h -parallel 2 ./iflib/

// opGuard bounds one operation, its waits included.
const opGuard = 20 * time.Second

// slowRun is how long a run may take before its log is printed (a slow
// input is not a failure, but it starves the fuzzer).
const slowRun = 3 * time.Second

// maxOps bounds the operations one input runs.
const maxOps = 48

func FuzzModel(f *testing.F) {
	for _, seed := range fuzzModelSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		runModel(t, in)
	})
}

// TestFuzzModelReplay replays one input given in hex by IFLIB_FUZZ_INPUT
// (what a failure prints); without it, it does nothing.
func TestFuzzModelReplay(t *testing.T) {
	h := os.Getenv("IFLIB_FUZZ_INPUT")
	if h == "" {
		t.Skip("IFLIB_FUZZ_INPUT not set")
	}
	in, err := hex.DecodeString(strings.TrimSpace(h))
	require.NoError(t, err)
	runModel(t, in)
}

// input reads the fuzzer's bytes; past the end every read is 0.
type input struct {
	b []byte
	n int
}

func (r *input) u8() byte {
	if r.n >= len(r.b) {
		r.n++
		return 0
	}
	v := r.b[r.n]
	r.n++
	return v
}

func (r *input) done() bool { return r.n >= len(r.b) }

func (r *input) u16() int { return int(r.u8())<<8 | int(r.u8()) }

// wide draws a number from the whole range: mostly sane, else one of the
// values every parameter must survive.
func (r *input) wide(sane int) int {
	switch k := r.u8(); k % 24 {
	case 0:
		return 0
	case 1:
		return -1
	case 2:
		return 1
	case 3:
		return 2*int(r.u8()%8) + 3 // a small odd value
	case 4:
		return 1 << (r.u8() % 63) // a power of two
	case 5:
		return math.MaxInt
	case 6:
		return 1 << 40
	case 7:
		return math.MinInt
	case 8:
		return 1<<32 + 1 // its products overflow
	case 9:
		return sane * 2
	case 10:
		return sane / 2
	case 11:
		return -sane
	case 12:
		return sane + 1
	default:
		return sane
	}
}

// model is one fuzz run: an Env, up to two slots (a NIC and its context),
// packet zones, and the books.
type model struct {
	t   *testing.T
	in  *input
	env *simnictest.Env
	// slots are read by the callbacks (forwarding), written by the run.
	slots   [2]atomic.Pointer[slot]
	zones   []*iflib.Zone // the run's open TX zones
	closed  []*iflib.Zone // zones closed since
	foreign *iflib.Zone   // a zone on another address space (ErrWrongSpace)
	held    []heldPkt     // packets the "stack" keeps
	stale   []*iflib.Packet
	// uaf says the last operation used a freed packet on purpose: the
	// checker's reports of it (KindClient) are expected.
	uaf  bool
	log  []string
	nics int
}

// heldPkt is a packet the run holds and the zone it came from.
type heldPkt struct {
	p *iflib.Packet
	z *iflib.Zone
}

// slot is one context and its books since Register.
type slot struct {
	idx    int
	nic    *simnic.NIC
	drv    *simnic.Driver
	ctx    *iflib.Context
	cfg    iflib.Config
	before int64 // space.Allocated() before Register
	// handed counts packets whose ownership passed to the context;
	// foreign counts ErrForeignPacket refusals (counted in oerrors, kept).
	handed, foreign atomic.Int64
	// fwd is held (read) by a forwarding Input while it books and hands
	// packets to this context, and taken by the ledger check.
	fwd         sync.RWMutex
	checked     bool
	hooks       hookPlan
	stopTimeout time.Duration
}

// hookPlan says what each callback and IFDI method does, once each.
type hookPlan struct {
	act   [hookPoints]byte
	fired [hookPoints]atomic.Bool
	slow  atomic.Bool // TxdEncap and the queue selector sleep once past StopTimeout
}

const (
	hpAttachPre = iota
	hpTxqSetup
	hpRxqSetup
	hpAttachPost
	hpInit
	hpStop
	hpUpdateAdmin
	hpTimer
	hpWatchdogReset
	hpInput
	hpFilter
	hpSelect
	hpInputReady
	hpEncap
	hookPoints
)

var hookNames = [hookPoints]string{"AttachPre", "TxqSetup", "RxqSetup", "AttachPost", "Init", "Stop",
	"UpdateAdminStatus", "Timer", "WatchdogReset", "Input", "RxFilter", "TxQueueSelect", "InputReady", "TxdEncap"}

func runModel(t *testing.T, in []byte) {
	m := &model{t: t, in: &input{b: in}}
	start := time.Now()
	defer func() {
		if d := time.Since(start); d > slowRun {
			// The fuzzing engine keeps a worker's stderr; IFLIB_FUZZ_SLOWLOG
			// names a file that collects slow inputs during a long run.
			msg := fmt.Sprintf("FuzzModel: a slow input (%v):\n%s\n", d, m.report())
			fmt.Fprint(os.Stderr, msg)
			if name := os.Getenv("IFLIB_FUZZ_SLOWLOG"); name != "" {
				if f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
					fmt.Fprint(f, msg)
					f.Close()
				}
			}
		}
	}()
	opts := simnictest.EnvOptions{Sim: busdma.SimConfig{Size: 24 << 20, ContigSize: 2 << 20}, GoroutineGrace: 10 * time.Second}
	if m.in.u8()%4 == 0 {
		opts.IOMMU = true
	}
	env, err := simnictest.Open(opts)
	require.NoError(t, err)
	m.env = env
	defer func() {
		if r := recover(); r != nil {
			m.fail("panic: %v", r)
		}
	}()
	fs, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	m.foreign, err = iflib.NewZone(fs, "foreign", iflib.MCLBytes, 8)
	require.NoError(t, err)
	for ops := 0; ops < maxOps && !m.in.done(); ops++ {
		m.guard("an operation", opGuard, m.step)
		m.guard("the checks", 0, m.check)
	}
	m.finish()
	if testing.Verbose() && os.Getenv("IFLIB_FUZZ_VERBOSE") != "" {
		t.Log(m.report())
	}
}

// guard runs fn and crashes the run with the log if it does not return
// within opGuard (plus d).
func (m *model) guard(what string, d time.Duration, fn func()) {
	done := make(chan struct{})
	timer := time.AfterFunc(opGuard+d, func() {
		select {
		case <-done:
			return
		default:
		}
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "FuzzModel: %s did not return within %v\n%s\n%s\n", what, opGuard+d, m.report(), buf)
		panic("FuzzModel: " + what + " hung")
	})
	defer timer.Stop()
	fn()
	close(done)
}

func (m *model) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
	if trace {
		fmt.Fprintln(os.Stderr, m.log[len(m.log)-1]) // a crash loses the log: print as it goes
	}
}

// trace prints each operation as it runs (IFLIB_FUZZ_TRACE=1), for a
// failure that kills the process before the log is printed.
var trace = os.Getenv("IFLIB_FUZZ_TRACE") != ""

func (m *model) report() string {
	return fmt.Sprintf("operations:\n  %s\nreplay: IFLIB_FUZZ_INPUT=%s go test -run '^TestFuzzModelReplay$' -v ./iflib/",
		strings.Join(m.log, "\n  "), hex.EncodeToString(m.in.b))
}

func (m *model) fail(format string, args ...any) {
	m.t.Helper()
	require.FailNow(m.t, fmt.Sprintf("%s\n%s", fmt.Sprintf(format, args...), m.report()))
}

// isOneOf reports whether err matches one of the documented errors.
func isOneOf(err error, set ...error) bool {
	for _, e := range set {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// expect fails the run unless err is nil, one of set, or a driver's IFDI
// method's error (an *iflib.IFDIError: documented by the driver).
func (m *model) expect(what string, err error, set ...error) {
	m.t.Helper()
	var ifdi *iflib.IFDIError
	if err != nil && !isOneOf(err, set...) && !errors.As(err, &ifdi) {
		m.fail("%s: undocumented error %T: %v", what, err, err)
	}
}

func (m *model) step() {
	m.uaf = false
	op := m.in.u8() % 19
	sel := m.in.u8()
	s := m.slots[sel%2].Load()
	idx := 0
	if s != nil {
		idx = s.idx
	}
	switch op {
	case 0, 1:
		m.register(int(m.in.u8() % 2))
	case 2:
		if s != nil {
			m.logf("init %d", idx)
			var err error
			m.guard("Init", s.stopTimeout, func() { err = s.ctx.Init() })
			m.logf("  = %v", err)
			m.expect("Init", err, iflib.ErrDetached, iflib.ErrBusy, simnic.ErrBusy)
		}
	case 3:
		if s != nil {
			m.logf("stop %d", idx)
			var err error
			m.guard("Stop", s.stopTimeout, func() { err = s.ctx.Stop() })
			m.logf("  = %v", err)
			m.expect("Stop", err, iflib.ErrDetached)
		}
	case 4:
		if s != nil {
			m.detach(s)
		}
	case 5, 6, 7:
		if s != nil {
			m.transmit(s)
		}
	case 8:
		if s != nil {
			m.transmitBatch(s)
		}
	case 9, 10:
		if s != nil {
			m.receive(s)
		}
	case 11:
		if s != nil {
			up := m.in.u8()%2 == 0
			m.logf("link %d %v", idx, up)
			s.nic.SetLink(up)
		}
	case 12:
		if s != nil {
			m.logf("fault %d", idx)
			if m.in.u8()%2 == 0 {
				s.nic.InjectRxBadSlot()
			} else {
				s.nic.InjectRxBadLength()
			}
		}
	case 13:
		m.zoneOp()
	case 14:
		if s != nil {
			m.reads(s.ctx)
			m.ctl(s, int(sel>>1)) // a control call (SIOCSIF*) from the selector's high bits
		}
	case 15:
		d := time.Duration(m.in.u8()%16) * time.Millisecond
		m.logf("sleep %v", d)
		time.Sleep(d)
	case 16:
		m.holdOp()
	case 18:
		if s != nil {
			m.concurrent(s)
		}
	case 17:
		if s != nil {
			m.logf("intr %d", idx)
			q := int(int8(m.in.u8()))
			s.ctx.TxIntr(q)
			s.ctx.RxIntr(q)
			s.ctx.AdminIntr()
			s.ctx.ReportPauseFrames(uint64(m.in.u8()))
		}
	}
}

// check is run after every operation.
func (m *model) check() {
	m.t.Helper()
	if chk := m.env.Checker; chk != nil {
		if rs := chk.Reports(); len(rs) > 0 {
			for _, r := range rs {
				if !m.uaf || r.Kind != busdma.KindClient {
					m.fail("busdma checker: %v", rs)
				}
			}
			chk.Reset() // the use after free this operation committed, reported
		}
	}
	if m.env.IOMMU != nil {
		if f := m.env.IOMMU.Stats().Faults; f != 0 {
			m.fail("%d IOMMU faults: %v", f, m.env.IOMMU.Faults())
		}
	}
	for i := range m.slots {
		s := m.slots[i].Load()
		if s == nil {
			continue
		}
		select {
		case <-s.ctx.Detached():
			m.slots[i].Store(nil)
			m.detached(s)
		default:
		}
	}
}

// detached checks a context whose Detach has finished: the ledger and the
// memory it gave back.
func (m *model) detached(s *slot) {
	m.t.Helper()
	if s.checked {
		return
	}
	s.checked = true
	s.fwd.Lock() // no forwarding Input is booking a packet for s
	defer s.fwd.Unlock()
	ctx := s.ctx
	encapped := int64(s.drv.Stats().TxEncapped)
	drops := int64(ctx.Counter(iflib.IfCounterOQDrops) + ctx.Counter(iflib.IfCounterOErrors))
	handed, foreign := s.handed.Load(), s.foreign.Load()
	m.logf("  ledger %d: handed %d + foreign %d, encapped %d + dropped %d", s.idx, handed, foreign, encapped, drops)
	if handed+foreign != encapped+drops {
		m.fail("ledger of context %d: %d packets handed and %d foreign refused, but %d put on a ring and %d counted as dropped",
			s.idx, handed, foreign, encapped, drops)
	}
	if l := s.nic.Bus().LoadedMaps(); l != 0 {
		m.fail("context %d: %d maps loaded after Detach", s.idx, l)
	}
}

func (m *model) finish() {
	m.t.Helper()
	for i := range m.slots {
		if s := m.slots[i].Load(); s != nil {
			m.logf("final detach %d", s.idx)
			m.detach(s)
			m.guard("the deferred Detach", s.stopTimeout, func() { <-s.ctx.Detached() })
			m.slots[i].Store(nil)
			m.detached(s)
		}
	}
	m.check()
	for _, h := range m.held {
		h.p.Free()
	}
	m.held = nil
	for _, z := range m.zones {
		if err := z.Close(); err != nil {
			m.fail("closing zone %s: %v", z.Name(), err)
		}
	}
	var err error
	m.guard("Env.Close", 0, func() { err = m.env.Close() })
	if err != nil {
		m.fail("teardown: %v", err)
	}
	if a := m.env.Space.Allocated(); a != 0 {
		m.fail("the address space holds %d bytes after every Detach and Close", a)
	}
}

// fuzzModelSeeds are the corpus's starting points: the ordinary life of a
// context in each TX mode, two contexts forwarding, and every lifecycle
// call from every callback and IFDI method.
func fuzzModelSeeds() [][]byte {
	// register: op 0, a slot selector, the slot, flags, the number of
	// parameters to perturb (0), one byte per hook point (1: none; 0 then
	// the action), the slow byte (1: not slow).
	reg := func(i, flags byte, hook, act int) []byte {
		b := []byte{0, 0, i, flags, 0}
		for h := 0; h < hookPoints; h++ {
			if h == hook {
				b = append(b, 0, byte(act))
			} else {
				b = append(b, 1)
			}
		}
		return append(b, 1)
	}
	life := func(i byte) []byte {
		return []byte{
			2, i, // init
			5, i, 15, 0x01, 0x00, 2, // transmit 316 bytes in 3 buffers
			8, i, 3, 4, 3, 4, // a batch: one byte, empty, one byte
			9, i, 8, 0x01, 0x02, // receive 9 frames of 258 bytes
			15, 0, 4, // sleep 4 ms
			14, i, // reads
			3, i, // stop
			2, i, // init
			5, i, 15, 0x05, 0xdc, 1, // transmit 60+1500%1500
			4, i, // detach
		}
	}
	var seeds [][]byte
	for mode := byte(0); mode < 3; mode++ {
		s := append([]byte{1}, reg(0, mode<<1, -1, 0)...)
		seeds = append(seeds, append(s, life(0)...))
	}
	two := append([]byte{1}, reg(0, 0, -1, 0)...)
	two = append(two, reg(1, 2, -1, 0)...)
	two = append(two, 2, 0, 2, 1, 9, 0, 30, 0x05, 0xdc, 15, 0, 10) // receive 31 frames of MaxFrame: forwarded
	seeds = append(seeds, append(two, life(1)...))
	for call := byte(0); call < 4; call++ {
		s := append([]byte{1}, reg(0, (call%3)<<1, -1, 0)...)
		s = append(s, 2, 0, 18, 0, 3, 20, call, 18, 0, 2, 9, 3)
		seeds = append(seeds, append(s, life(0)...))
	}
	for h := 0; h < hookPoints; h++ {
		acts := []int{2, 3} // Stop, Detach
		if h <= hpAttachPost {
			acts = append(acts, 1, 4) // and Init, the reads, during Register
		}
		for _, act := range acts {
			s := append([]byte{1}, reg(0, byte(h%3)<<1, h, act)...)
			seeds = append(seeds, append(s, life(0)...))
		}
	}
	return seeds
}
