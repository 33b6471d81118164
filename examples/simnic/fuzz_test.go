package simnic_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
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

// FuzzNIC is the model-based fuzzer over the simulated NIC's own API
// (issue 20 §1). Its input is decoded into a sequence of operations on up
// to three NICs built with New from every Config field drawn over its whole
// range (0, negative, 1, small odd values, powers of two, MaxInt, 2^40,
// 2^63, values whose products overflow) and a fault Profile likewise; raw
// forwarders between them (New, Start, Stop, Close at any time);
// generators (lossless or not, any rate and count, frames of every
// length); wires (SetPeer through counting endpoints, and Connect); link flaps;
// one-shot device faults; the control registers (receive filter, VLAN
// table and mode, max frame, RSS, PHY, link partner) written with any
// value, and PAUSE frames; an iflib driver attached, initialised, stopped,
// transmitting and detached at any time; stats reads; and Env.Close at the
// end (or earlier). After every step it checks:
//
//   - no panic, and every call returns within a bound (a guard fails the
//     run with the operation log and every goroutine's stack);
//   - every error is the documented typed error, and exactly the one the
//     model predicts where the API promises one (ErrBusy, ErrRawBusy,
//     ErrRawClosed, ErrGenStarted, ErrGenNotStarted, *ConfigError naming
//     the field);
//   - the device counters never go back, the busdma checker has nothing to
//     report and the IOMMU no fault;
//
// and at the end, with everything stopped: every frame offered to a NIC
// was taken or counted as refused at the wire, every frame taken was
// written, dropped and counted, or still waits in the FIFO, every TX packet
// the device processed was sent or counted, every frame a NIC put on its
// wire reached exactly one endpoint (not counted across a Connect wire),
// each generator's Sent is what the NIC took from it, each raw forwarder's Received is Forwarded + Errors; and
// Env.Close finds no leak, no checker report and no goroutine left.
//
// A failing input prints its operation log and the hex of the input (the
// "seed"); go test saves it under testdata/fuzz/FuzzNIC and replays it with
//
//	go test -run '^FuzzNIC$/<name>' ./examples/simnic/
//
// or, from the printed hex, SIMNIC_FUZZ_INPUT=<hex> go test -run '^TestFuzzNICInput$' ./examples/simnic/.
// A long run (README): go test -run '^$' -fuzz '^FuzzNIC$' -fuzztime 1h -parallel 1 ./examples/simnic/
func FuzzNIC(f *testing.F) {
	for _, s := range fuzzNICSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) { runNICModel(t, in) })
}

// TestFuzzNICInput replays one input given in hex by SIMNIC_FUZZ_INPUT
// (what a failing run prints), with its operation log.
func TestFuzzNICInput(t *testing.T) {
	h := os.Getenv("SIMNIC_FUZZ_INPUT")
	if h == "" {
		t.Skip("SIMNIC_FUZZ_INPUT not set")
	}
	in, err := hex.DecodeString(strings.TrimSpace(h))
	require.NoError(t, err)
	runNICModel(t, in)
	t.Log(fmt.Sprint("replayed ", len(in), " bytes"))
}

// fuzzNICSeeds are the seed corpus: a few hand-built programs that reach
// each operation (the committed corpus under testdata adds what fuzzing
// found). dflt is a NIC Config of defaults (17 zero bytes); each program
// runs without and with the IOMMU (the first byte).
func fuzzNICSeeds() [][]byte {
	dflt := make([]byte, 17)
	small := []byte{1, 0, 0, 7, 7, 0, 3, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0}      // NTxd, NRxd 128, MaxFrame 1514, FIFO 32
	slow := []byte{0, 0, 0, 7, 7, 0, 3, 5, 0, 0, 163, 164, 0, 0, 0, 206, 0} // LineRate 1, FrameRate 1e-300, DMALatency 1ms
	faulty := append(append([]byte(nil), small[:16]...), 0xc2, 208, 209, 1, 150, 209, 208, 120, 120, 110, 209, 105, 210, 1, 1, 1, 1, 1, 1, 1, 1)
	progs := [][]byte{
		// two NICs, a raw forwarder, generators, stop, restart, close.
		cat(opNewNIC, small, opNewNIC, small, opNewRaw, 0, 1, 0, 0, opRawStart, 0, opGenStart, 0, 0, 3, 0, 9,
			opGenStart, 0, 2, 0, 1, 130, opSleep, 2, opRawStop, 0, opGenStop, 0, opRawStart, 0, opSleep, 1, opRawClose, 0, opRawStart, 0),
		// link flaps under a lossless generator, then Close with it running.
		cat(opNewNIC, dflt, opSetLink, 0, 0, opGenStart, 0, 0, 1, 1, 0, opSleep, 1, opSetLink, 0, 1, opSetLink, 0, 0,
			opReceive, 0, 4, 9, opWaitRoom, 0, 0),
		// an iflib driver: transmits of every kind, link flap, stop, detach.
		cat(opNewNIC, small, opAttach, 0, 1, opInit, 0, opTransmit, 0, 0, 0, opTransmit, 0, 3, 0x12, opTransmit, 0, 6, 0x24,
			opTransmit, 0, 7, 0x3c, opSleep, 2, opSetLink, 0, 0, opTransmit, 0, 2, 0, opSetLink, 0, 1, opStop, 0,
			opTransmit, 0, 1, 1, opInit, 0, opStats, 0, 0, opDetach, 0),
		// a slow wire and slow DMA: Stop and Close do not wait for them.
		cat(opNewNIC, slow, opNewNIC, small, opNewRaw, 1, 0, 0, 0, opSetPeer, 0, 1, opRawStart, 0, opReceive, 1, 0, 20, opSleep, 1,
			opRawStop, 0, opAttach, 0, 0, opInit, 0, opTransmit, 0, 2, 0, opClose),
		// a fault schedule with the extreme means, one-shot faults, wires between NICs.
		cat(opNewNIC, faulty, opNewNIC, small, opNewNIC, small, opSetPeer, 1, 0, opSetPeer, 2, 3, opNewRaw, 1, 2, 0, 0,
			opRawStart, 0, opInject, 1, 0, opInject, 1, 1, opGenStart, 1, 0, 3, 0, 1, opAttach, 0, 2, opInit, 0,
			opTransmit, 0, 3, 0, opSleep, 3, opStats, 2, 0),
		// two NICs joined by Connect, one forwarding to the other.
		cat(opNewNIC, small, opNewNIC, small, opNewNIC, small, opConnect, 1, 2, opNewRaw, 0, 1, 0, 0, opRawStart, 0,
			opGenStart, 0, 0, 3, 1, 4, opSleep, 2, opSetLink, 2, 0, opSleep, 1, opRawStop, 0),
		// the control registers under traffic: a closed filter, a group
		// address in the MTA, the VLAN filter, a small max frame, RSS, a
		// forced 10 Mb/s mode with PAUSE, an XOFF and an XON.
		cat(opNewNIC, small, opAttach, 0, 1, opInit, 0,
			opRegs, 0, 0, u64b(0), u64b(0), // RCTL 0
			opRegs, 0, 2, u64b(0x01005e000001), u64b(0),
			opRegs, 0, 3, u64b(0x1_0000_0003), u64b(0x2_0000_0003),
			opRegs, 0, 4, u64b(600), u64b(0),
			opRegs, 0, 5, u64b(0x00f3_0000_6d5a_56da), u64b(0x0102_0001_0203),
			opRegs, 0, 6, u64b(0), u64b(uint64(simnic.Ability10FD|simnic.AbilityPause)),
			opRegs, 0, 8, u64b(0xffff), u64b(0), opGenStart, 0, 0, 3, 0, 9, opReceive, 0, 4, 9, opTransmit, 0, 3, 0,
			opRegs, 0, 8, u64b(0), u64b(0), opRegs, 0, 1, u64b(0x0203040506), u64b(0x301), opRegs, 0, 9, u64b(0), u64b(0),
			opRegs, 0, 7, u64b(0), u64b(0), opSleep, 1, opTransmit, 0, 3, 0, opStop, 0),
	}
	out := [][]byte{{}}
	for _, p := range progs {
		out = append(out, cat(0, p), cat(1, p))
	}
	return out
}

// u64b is v as the decoder's u64 reads it (big endian).
func u64b(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// cat flattens bytes, ints (as one byte each) and byte slices.
func cat(parts ...any) []byte {
	var b []byte
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			b = append(b, byte(v))
		case []byte:
			b = append(b, v...)
		}
	}
	return b
}

// The operations.
const (
	opNewNIC = iota
	opNewRaw
	opRawStart
	opRawStop
	opRawClose
	opGenStart
	opGenStop
	opSetLink
	opSetPeer
	opReceive
	opWaitRoom
	opInject
	opStats
	opSleep
	opAttach
	opInit
	opStop
	opDetach
	opTransmit
	opClose
	opConnect
	opRegs
	numOps
)

var opNames = [numOps]string{"new-nic", "new-raw", "raw-start", "raw-stop", "raw-close", "gen-start", "gen-stop", "set-link",
	"set-peer", "receive", "wait-room", "inject", "stats", "sleep", "attach", "init", "stop", "detach", "transmit", "close", "connect", "regs"}

// decoder reads the input; past its end every read is 0.
type decoder struct {
	b []byte
	i int
}

func (d *decoder) more() bool { return d.i < len(d.b) }

func (d *decoder) u8() uint8 {
	if d.i >= len(d.b) {
		return 0
	}
	d.i++
	return d.b[d.i-1]
}

func (d *decoder) u64() uint64 {
	var v uint64
	for k := 0; k < 8; k++ {
		v = v<<8 | uint64(d.u8())
	}
	return v
}

// intEdges are the values every numeric field is drawn from, besides
// small ones: the edges of the ranges simnic documents and the edges of
// int itself.
var intEdges = []int{0, -1, 1, 2, 3, 7, 31, 32, 33, 59, 60, 61, 64, 127, 128, 129, 255, 256, 1023, 1024, 2047, 2048, 4096, 9018,
	16383, 16384, 16385, 1 << 16, 1<<16 + 1, 1 << 20, 1 << 21, 1 << 30, 1 << 31, 1 << 40, 1 << 62, math.MaxInt32, math.MaxInt, math.MinInt, -1 << 40}

// intIn draws an int: mostly in [0, small), sometimes an edge, sometimes
// 8 raw bytes.
func (d *decoder) intIn(small int) int {
	switch b := d.u8(); {
	case b < 160:
		return int(b) % small
	case b < 250:
		return intEdges[int(b-160)%len(intEdges)]
	default:
		return int(d.u64())
	}
}

// pow2 draws 0 (the default) or a power of two up to 2^max, sometimes an
// edge.
func (d *decoder) pow2(max int) int {
	switch b := d.u8(); {
	case b == 0:
		return 0
	case b < 200:
		return 1 << (int(b) % (max + 1))
	default:
		return intEdges[int(b-200)%len(intEdges)]
	}
}

var durEdges = []time.Duration{0, -1, 1, time.Microsecond, 50 * time.Microsecond, 200 * time.Microsecond, time.Millisecond,
	time.Millisecond + 1, time.Second, time.Second + 1, time.Hour, math.MaxInt64, math.MinInt64}

func (d *decoder) dur() time.Duration {
	switch b := d.u8(); {
	case b < 128:
		return 0
	case b < 200:
		return time.Duration(b-128) * time.Microsecond
	default:
		return durEdges[int(b-200)%len(durEdges)]
	}
}

var rateEdges = []float64{0, -1, 1, 1e-300, math.SmallestNonzeroFloat64, 1e3, 1e6, 1e9, 1e12, 1e300, math.MaxFloat64,
	math.Inf(1), math.Inf(-1), math.NaN()}

func (d *decoder) rate() float64 {
	switch b := d.u8(); {
	case b < 160:
		return 0
	default:
		return rateEdges[int(b-160)%len(rateEdges)]
	}
}

var u64Edges = []uint64{0, 1, 2, 3, 100, 1 << 20, 1 << 62, 1<<62 + 1, 1 << 63, math.MaxUint64}

func (d *decoder) mean() uint64 {
	switch b := d.u8(); {
	case b < 100:
		return 0
	case b < 200:
		return uint64(b-99) * 7
	default:
		return u64Edges[int(b-200)%len(u64Edges)]
	}
}

// nicConfig draws a Config (17 bytes, and 20 more with a fault Profile).
// A valid one whose receive FIFO would take more than 1 MiB gets a smaller
// FIFO instead: New allocates it, and a fuzzer allocating up to 256 MiB per
// input would spend its time in the allocator (the FIFO's upper bound is
// still drawn: beyond MaxFIFOBytes it is refused before any allocation).
func (d *decoder) nicConfig() simnic.Config {
	c := simnic.Config{
		Name:       [...]string{"", "fz", "a-rather-long-name-for-a-bus-device-0123456789", "x"}[d.u8()%4],
		Unit:       d.intIn(4),
		Queues:     d.intIn(3),
		NTxd:       d.pow2(12),
		NRxd:       d.pow2(12),
		RxBufSize:  d.pow2(15),
		MaxFrame:   [...]int{0, 60, 64, 1514, 1518, 2048, 9018, 16384}[d.u8()%8],
		FIFO:       d.pow2(6),
		TxSegs:     d.intIn(40),
		TSOSegs:    d.intIn(40),
		LineRate:   d.rate(),
		FrameRate:  d.rate(),
		ITR:        d.dur(),
		WBThresh:   d.intIn(8),
		WBDelay:    d.dur(),
		DMALatency: d.dur(),
	}
	if c.Name == "x" {
		// A station address and PHY abilities from fields already drawn
		// (no more input bytes: the seeds keep their meaning): an odd
		// unit is a group address, and some TxSegs no speed ability.
		c.MAC = [6]byte{byte(c.Unit), 2, 3, 4, 5, 6}
		c.Abilities = simnic.Ability(c.TxSegs) << 4
	}
	b := d.u8()
	c.TxCompletion = simnic.TxCompletion(b % 4)
	c.RxErrors = simnic.RxErrorStyle(b >> 2 % 3)
	c.Offload = b&0x40 != 0
	if b&0x80 != 0 {
		p := simnic.Profile{Every: map[simnic.FaultKind]uint64{}, LinkDownFor: d.mean()}
		for _, k := range simnic.FaultKinds() {
			if m := d.mean(); m != 0 {
				p.Every[k] = m
			}
		}
		c.Schedule = simnic.NewSchedule(d.u64(), p)
	}
	mf := c.MaxFrame
	if mf == 0 {
		mf = 9018
	}
	fifo := c.FIFO
	if fifo == 0 {
		fifo = 1024
	}
	for fifo > 0 && fifo <= simnic.MaxFIFOBytes && fifo*(mf+4) <= simnic.MaxFIFOBytes && fifo*(mf+4) > 1<<20 {
		fifo /= 2
		c.FIFO = fifo
	}
	return c
}

// configFields are the Config fields a *ConfigError may name.
var configFields = map[string]bool{"Unit": true, "Queues": true, "NTxd": true, "NRxd": true, "RxBufSize": true, "MaxFrame": true, "MAC": true, "Abilities": true,
	"FIFO": true, "TxSegs": true, "TSOSegs": true, "LineRate": true, "FrameRate": true, "ITR": true, "TxCompletion": true,
	"RxErrors": true, "WBThresh": true, "WBDelay": true, "DMALatency": true}

// counter is a wire endpoint that counts what it is offered and what its
// destination takes; it passes WaitRoom on to a NIC.
type counter struct {
	dst               simnic.Endpoint
	offered, accepted atomic.Uint64
}

func (c *counter) Receive(f []byte) bool {
	c.offered.Add(1)
	if c.dst.Receive(f) {
		c.accepted.Add(1)
		return true
	}
	return false
}

func (c *counter) WaitRoom(f []byte, cancel <-chan struct{}) bool {
	if w, ok := c.dst.(simnic.RoomWaiter); ok {
		return w.WaitRoom(f, cancel)
	}
	return true
}

// The model's state.
type (
	mNIC struct {
		nic     *simnic.NIC
		cfg     simnic.Config
		owner   int      // -1 none, rawOwner+k raw forwarder k, iflibOwner iflib
		inbound *counter // frames offered to the NIC by the fuzzer's direct Receive calls
		pauses  uint64   // PAUSE frames it took from inbound (consumed by the MAC, not the FIFO)
		links   []*counter
		sink    *simnic.Sink
		noWire  bool // its peer was nil or a NIC directly at some point: frames it sent went uncounted
		direct  bool // Connect made it another NIC's peer: frames offered to it went uncounted
		last    simnic.Stats
		drv     *simnic.Driver
		zone    *iflib.Zone
		inited  bool
	}
	mRaw struct {
		fwd      *simnic.RawForwarder
		rx, tx   int
		running  bool
		closed   bool
		lastStat simnic.RawStats
	}
	mGen struct {
		g       *simnic.Generator
		dst     int
		c       *counter
		stopped bool
	}
)

const (
	rawOwner   = 100
	iflibOwner = 1
)

type nicModel struct {
	t    *testing.T
	in   []byte
	env  *simnictest.Env
	nics []*mNIC
	raws []*mRaw
	gens []*mGen
	log  []string
	// closed: Env.Close ran.
	closed bool
}

func (m *nicModel) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

// fail reports a broken invariant with the operation log and the input.
func (m *nicModel) fail(format string, args ...any) {
	m.t.Helper()
	require.FailNowf(m.t, fmt.Sprintf(format, args...), "operations:\n  %s\ninput (SIMNIC_FUZZ_INPUT): %s",
		strings.Join(m.log, "\n  "), hex.EncodeToString(m.in))
}

// opBound is how long one operation may take: far above what any needs
// (the slowest, a stop under the largest DMA latency, takes milliseconds).
const opBound = 20 * time.Second

// guard runs f and fails the run if it does not return within opBound.
// A hang panics (the fuzzing engine reports the input) after printing the
// operation log and every goroutine's stack: the test's cleanup would hang
// too.
func (m *nicModel) guard(what string, f func()) {
	m.t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case p := <-done:
		if p != nil {
			m.fail("%s panicked: %v", what, p)
		}
	case <-time.After(opBound):
		buf := make([]byte, 4<<20)
		msg := fmt.Sprintf("%s did not return within %v\noperations:\n  %s\ninput (SIMNIC_FUZZ_INPUT): %s\n%s", what, opBound,
			strings.Join(m.log, "\n  "), hex.EncodeToString(m.in), buf[:runtime.Stack(buf, true)])
		fmt.Fprintln(os.Stderr, msg)
		panic(msg)
	}
}

func runNICModel(t *testing.T, in []byte) {
	m := &nicModel{t: t, in: in}
	iommu := len(in) > 0 && in[0]&1 != 0
	space := fuzzSpace(t, iommu)
	var env *simnictest.Env
	m.guard("Open", func() {
		var err error
		env, err = simnictest.Open(simnictest.EnvOptions{Space: space, GoroutineGrace: 10 * time.Second})
		if err != nil {
			m.fail("Open: %v", err)
		}
	})
	m.env = env
	defer func() {
		if !m.closed {
			m.closeEnv()
		}
		if !t.Failed() && space.Allocated() == 0 {
			fuzzSpaces.put(iommu, space) // clean: the next input may reuse it
		}
	}()
	d := &decoder{b: in}
	if len(in) > 0 {
		d.i = 1
	}
	for steps := 0; d.more() && steps < 64; steps++ {
		op := int(d.u8()) % numOps
		m.step(op, d)
		if m.closed {
			break
		}
		m.check()
	}
	if m.closed {
		return
	}
	m.closeEnv()
	if os.Getenv("SIMNIC_FUZZ_LOG") != "" {
		t.Logf("operations:\n  %s", strings.Join(m.log, "\n  "))
	}
}

// fuzzSpaces keeps one clean address space of each kind between inputs:
// allocating 16 MiB of simulated memory per input would cost more than the
// input's operations.
var fuzzSpaces spaceCache

type spaceCache struct {
	mu   sync.Mutex
	free [2]busdma.Space
}

func (c *spaceCache) put(iommu bool, s busdma.Space) {
	c.mu.Lock()
	c.free[b2i(iommu)] = s
	c.mu.Unlock()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fuzzSpace returns a clean space of the kind asked for: a kept one, or a
// new one (12 MiB of memory and 4 MiB of contiguous memory for rings).
func fuzzSpace(t *testing.T, iommu bool) busdma.Space {
	fuzzSpaces.mu.Lock()
	s := fuzzSpaces.free[b2i(iommu)]
	fuzzSpaces.free[b2i(iommu)] = nil
	fuzzSpaces.mu.Unlock()
	if s != nil {
		return s
	}
	sim := busdma.SimConfig{Size: 12 << 20, ContigSize: 4 << 20}
	var err error
	if iommu {
		s, err = busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: sim})
	} else {
		s, err = busdma.NewSimSpace(sim)
	}
	require.NoError(t, err)
	return s
}

// nic picks one of the NICs made so far (nil if none).
func (m *nicModel) nic(d *decoder) (int, *mNIC) {
	b := int(d.u8())
	if len(m.nics) == 0 {
		return -1, nil
	}
	i := b % len(m.nics)
	return i, m.nics[i]
}

func (m *nicModel) step(op int, d *decoder) {
	m.t.Helper()
	switch op {
	case opNewNIC:
		cfg := d.nicConfig()
		if len(m.nics) == 3 {
			return
		}
		m.logf("%s %+v", opNames[op], cfg)
		var n *simnic.NIC
		var err error
		m.guard("New", func() { n, err = m.env.NewNIC(cfg) })
		if err != nil {
			var ce *simnic.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, simnic.ErrConfig) || !configFields[strings.TrimPrefix(ce.Field, "Config.")] {
				m.fail("New: %v: not a *ConfigError naming a Config field", err)
			}
			m.logf("  → %v", err)
			return
		}
		mn := &mNIC{nic: n, cfg: n.Config(), owner: -1, sink: &simnic.Sink{}}
		mn.inbound = &counter{dst: n}
		// Its wire ends in a counted sink until set-peer changes it.
		c := &counter{dst: mn.sink}
		mn.links = append(mn.links, c)
		n.SetPeer(c)
		m.nics = append(m.nics, mn)
	case opNewRaw:
		i, a := m.nic(d)
		j, b := m.nic(d)
		cfg := simnic.RawConfig{Batch: d.intIn(40), Buffers: d.intIn(300)}
		if a == nil || len(m.raws) == 3 {
			return
		}
		m.logf("%s %d→%d %+v", opNames[op], i, j, cfg)
		var f *simnic.RawForwarder
		var err error
		m.guard("NewRawForwarder", func() { f, err = m.env.NewRawForwarder(a.nic, b.nic, cfg) })
		busy := a.owner != -1 || b.owner != -1
		valid := rawValid(i, j, a.cfg, b.cfg, cfg)
		if err != nil {
			m.logf("  → %v", err)
			switch {
			case !valid && errors.Is(err, simnic.ErrRawConfig):
			case valid && busy && errors.Is(err, simnic.ErrRawBusy) && errors.Is(err, simnic.ErrBusy):
			case valid && !busy && (errors.Is(err, busdma.ErrNoMem) || errors.Is(err, busdma.ErrInvalid)):
				// Not enough simulated memory for its rings and clusters.
			default:
				m.fail("NewRawForwarder: %v: not the documented error (valid %v, busy %v)", err, valid, busy)
			}
			return
		}
		if !valid || busy {
			m.fail("NewRawForwarder %d→%d %+v succeeded (valid %v, owners %d, %d)", i, j, cfg, valid, a.owner, b.owner)
		}
		k := len(m.raws)
		m.raws = append(m.raws, &mRaw{fwd: f, rx: i, tx: j})
		a.owner, b.owner = rawOwner+k, rawOwner+k
	case opRawStart, opRawStop, opRawClose:
		b := int(d.u8())
		if len(m.raws) == 0 {
			return
		}
		k := b % len(m.raws)
		r := m.raws[k]
		m.logf("%s %d", opNames[op], k)
		switch op {
		case opRawStart:
			var err error
			m.guard("RawForwarder.Start", func() { err = r.fwd.Start() })
			want := error(nil)
			switch {
			case r.closed:
				want = simnic.ErrRawClosed
			case r.running:
				want = simnic.ErrRawBusy
			}
			if !errors.Is(err, want) || (want == nil) != (err == nil) {
				m.fail("Start: %v, want %v", err, want)
			}
			r.running = r.running || err == nil
		case opRawStop:
			m.guard("RawForwarder.Stop", r.fwd.Stop)
			r.running = false
			m.checkRaw(r)
		case opRawClose:
			var err error
			m.guard("RawForwarder.Close", func() { err = r.fwd.Close() })
			if r.closed && !errors.Is(err, simnic.ErrRawClosed) || !r.closed && err != nil {
				m.fail("Close: %v (closed before: %v)", err, r.closed)
			}
			if !r.closed {
				m.nics[r.rx].owner, m.nics[r.tx].owner = -1, -1
			}
			r.closed, r.running = true, false
			m.checkRaw(r)
		}
	case opGenStart:
		i, n := m.nic(d)
		rate := [...]float64{0, 0, 1e5, 1e3, 1e-300, -1, math.NaN()}[d.u8()%7]
		count := [...]uint64{0, 1, 5, 50, 1000}[d.u8()%5]
		lossless := d.u8()&1 != 0
		lens := d.u8()
		if n == nil || len(m.gens) == 3 {
			return
		}
		m.logf("%s nic %d rate %g count %d lossless %v lens %d", opNames[op], i, rate, count, lossless, lens)
		g := &simnic.Generator{Rate: rate, Count: count, Lossless: lossless,
			Next: func(seq uint64, buf []byte) int { return frameLen(n.cfg, lens, seq, buf) }}
		c := &counter{dst: n.nic}
		var err error
		m.guard("Generator.Start", func() { err = m.env.Start(g, c) })
		bad := rate < 0 || math.IsNaN(rate)
		if bad != errors.Is(err, simnic.ErrGenConfig) || !bad && err != nil {
			m.fail("Generator.Start: %v (bad rate %v)", err, bad)
		}
		if err == nil {
			m.gens = append(m.gens, &mGen{g: g, dst: i, c: c})
			if err := g.Start(c); !errors.Is(err, simnic.ErrGenStarted) {
				m.fail("second Generator.Start: %v, want ErrGenStarted", err)
			}
		}
	case opGenStop:
		b := int(d.u8())
		if len(m.gens) == 0 {
			return
		}
		k := b % len(m.gens)
		m.logf("%s %d", opNames[op], k)
		g := m.gens[k]
		var err error
		m.guard("Generator.Stop", func() { err = g.g.Stop() })
		if err != nil {
			m.fail("Generator.Stop: %v", err)
		}
		m.guard("Generator.Wait after Stop", func() { err = g.g.Wait() })
		if err != nil {
			m.fail("Generator.Wait: %v", err)
		}
		g.stopped = true
	case opSetLink:
		i, n := m.nic(d)
		up := d.u8()&1 != 0
		if n == nil {
			return
		}
		m.logf("%s %d %v", opNames[op], i, up)
		m.guard("SetLink", func() { n.nic.SetLink(up) })
	case opSetPeer:
		i, n := m.nic(d)
		to := int(d.u8())
		if n == nil {
			return
		}
		m.logf("%s %d → %d", opNames[op], i, to%(len(m.nics)+2))
		var dst simnic.Endpoint
		switch k := to % (len(m.nics) + 2); {
		case k == len(m.nics):
			dst = n.sink
		case k == len(m.nics)+1:
			n.noWire = true
			m.guard("SetPeer(nil)", func() { n.nic.SetPeer(nil) })
			return
		default:
			dst = m.nics[k].nic
		}
		c := &counter{dst: dst}
		n.links = append(n.links, c)
		m.guard("SetPeer", func() { n.nic.SetPeer(c) })
	case opReceive:
		i, n := m.nic(d)
		lens, cnt := d.u8(), int(d.u8()%64)
		if n == nil {
			return
		}
		m.logf("%s %d ×%d lens %d", opNames[op], i, cnt, lens)
		buf := make([]byte, 16384+64)
		m.guard("Receive", func() {
			for s := 0; s < cnt; s++ {
				n.inbound.Receive(buf[:frameLen(n.cfg, lens, uint64(s), buf)])
			}
		})
	case opWaitRoom:
		i, n := m.nic(d)
		lens := d.u8()
		if n == nil {
			return
		}
		m.logf("%s %d lens %d", opNames[op], i, lens)
		buf := make([]byte, 16384+64)
		f := buf[:frameLen(n.cfg, lens, 0, buf)]
		cancel := make(chan struct{})
		time.AfterFunc(time.Millisecond, func() { close(cancel) })
		m.guard("WaitRoom", func() { n.nic.WaitRoom(f, cancel) })
	case opInject:
		i, n := m.nic(d)
		which := d.u8()
		if n == nil {
			return
		}
		m.logf("%s %d %d", opNames[op], i, which&1)
		if which&1 == 0 {
			n.nic.InjectRxBadLength()
		} else {
			n.nic.InjectRxBadSlot()
		}
	case opStats:
		i, n := m.nic(d)
		q := d.intIn(70)
		if n == nil {
			return
		}
		m.logf("%s %d q %d", opNames[op], i, q)
		if _, err := n.nic.QueueStats(q); (err != nil) != (q < 0 || q >= n.cfg.Queues) || err != nil && !errors.Is(err, simnic.ErrConfig) {
			m.fail("QueueStats(%d) with %d queues: %v", q, n.cfg.Queues, err)
		}
		if n.drv != nil {
			if _, err := n.drv.QueueStats(q); err != nil && !errors.Is(err, simnic.ErrConfig) {
				m.fail("Driver.QueueStats(%d): %v", q, err)
			}
			_ = n.drv.Stats()
		}
	case opSleep:
		ms := d.u8() % 4
		m.logf("%s %dms", opNames[op], ms)
		time.Sleep(time.Duration(ms) * time.Millisecond)
	case opAttach:
		i, n := m.nic(d)
		mode := iflib.TxMode(d.u8() % 3)
		if n == nil {
			return
		}
		m.logf("%s %d mode %v", opNames[op], i, mode)
		if n.zone == nil {
			var err error
			if n.zone, err = m.env.NewZone(fmt.Sprint("tx", i), iflib.MJumPageSize, 64); err != nil {
				m.logf("  → zone: %v", err)
				return
			}
		}
		var drv *simnic.Driver
		var err error
		m.guard("Attach", func() {
			drv, err = m.env.Attach(n.nic, iflib.Attachment{Config: iflib.Config{TxMode: mode, RxZoneSize: 2*min(n.cfg.NRxd, 4096) + 64}})
		})
		if err != nil {
			m.logf("  → %v", err)
			switch {
			case errors.Is(err, simnic.ErrBusy) && n.owner != -1:
			case errors.Is(err, iflib.ErrConfig), errors.Is(err, busdma.ErrNoMem), errors.Is(err, iflib.ErrNoMem):
			default:
				m.fail("Attach: %v (owner %d)", err, n.owner)
			}
			return
		}
		if n.owner != -1 {
			m.fail("Attach succeeded on a NIC owned by %d", n.owner)
		}
		n.owner, n.drv, n.inited = iflibOwner, drv, false
	case opInit, opStop, opDetach:
		i, n := m.nic(d)
		if n == nil || n.drv == nil {
			return
		}
		m.logf("%s %d", opNames[op], i)
		ic := n.drv.Context()
		var err error
		switch op {
		case opInit:
			m.guard("Init", func() { err = ic.Init() })
			n.inited = n.inited || err == nil
		case opStop:
			m.guard("Stop", func() { err = ic.Stop() })
			n.inited = false
		case opDetach:
			m.guard("Detach", func() { err = ic.Detach() })
			n.owner, n.drv, n.inited = -1, nil, false
		}
		if err != nil {
			m.logf("  → %v", err)
		}
	case opTransmit:
		i, n := m.nic(d)
		lens, kind := d.u8(), d.u8()
		if n == nil || n.drv == nil {
			return
		}
		m.logf("%s %d lens %d kind %d", opNames[op], i, lens, kind)
		m.transmit(n, lens, kind)
	case opClose:
		m.logf("%s", opNames[op])
		m.closeEnv()
	case opRegs:
		i, n := m.nic(d)
		which, a, b := d.u8(), d.u64(), d.u64()
		if n == nil {
			return
		}
		m.logf("%s %d %d %#x %#x", opNames[op], i, which%10, a, b)
		m.regs(n, which%10, a, b)
	case opConnect:
		i, a := m.nic(d)
		j, b := m.nic(d)
		if a == nil {
			return
		}
		m.logf("%s %d %d", opNames[op], i, j)
		// The wire joins the NICs directly: what crosses it is not counted
		// (the books of both NICs' wires are checked no more).
		a.noWire, b.noWire, a.direct, b.direct = true, true, true, true
		m.guard("Connect", func() { simnic.Connect(a.nic, b.nic) })
	}
}

// rawValid is NewRawForwarder's configuration rule: two distinct NICs of
// one queue each with power-of-two rings, Batch ≥ 1 and 2..2^20 buffers
// after the defaults.
func rawValid(i, j int, a, b simnic.Config, c simnic.RawConfig) bool {
	if c.Batch == 0 {
		c.Batch = 32
	}
	if c.Buffers == 0 {
		c.Buffers = a.NRxd + b.NTxd
	}
	pow2 := func(n int) bool { return n >= 2 && n&(n-1) == 0 }
	return i != j && a.Queues == 1 && b.Queues == 1 && c.Batch >= 1 && c.Buffers >= 2 && c.Buffers <= 1<<20 &&
		pow2(a.NRxd) && pow2(a.NTxd) && pow2(b.NRxd) && pow2(b.NTxd)
}

// regs writes one of the NIC's control registers with values drawn from
// a and b (the filter, VLAN, max frame, RSS, PHY, link partner), or sends
// it a PAUSE frame; each error must be the *ConfigError the register's
// range predicts.
func (m *nicModel) regs(n *mNIC, which uint8, a, b uint64) {
	var err error
	var wantErr bool
	addr := [6]byte{byte(a), byte(a >> 8), byte(a >> 16), byte(a >> 24), byte(a >> 32), byte(a >> 40)}
	switch which {
	case 0:
		c := simnic.RxControl(uint32(a)&uint32(simnic.RctlUPE|simnic.RctlMPE|simnic.RctlBAM|simnic.RctlVFE) | uint32(b&1)<<30)
		wantErr = b&1 != 0
		m.guard("SetRxControl", func() { err = n.nic.SetRxControl(c) })
	case 1:
		idx := int(int8(b))
		wantErr = idx < 0 || idx >= simnic.NumRAR
		if b&0x100 != 0 {
			addr = simnic.DefaultMAC
		}
		m.guard("SetRAR", func() { err = n.nic.SetRAR(idx, addr, b&0x200 != 0) })
	case 2:
		t := simnic.MTATable([][6]byte{addr, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}})
		if b&1 != 0 {
			t[a%simnic.MTASize] = uint32(b >> 32)
		}
		m.guard("SetMTA", func() { n.nic.SetMTA(&t) })
	case 3:
		var t [simnic.VFTASize]uint32
		t[a%simnic.VFTASize], t[b%simnic.VFTASize] = uint32(a>>32), uint32(b>>32)
		m.guard("SetVFTA", func() { n.nic.SetVFTA(&t); n.nic.SetVLANMode(a&1 != 0) })
	case 4:
		size := int(int16(a))
		wantErr = size < 64 || size > n.cfg.MaxFrame
		m.guard("SetMaxFrame", func() { err = n.nic.SetMaxFrame(size) })
	case 5:
		var key [simnic.RSSKeySize]byte
		for j := range key {
			key[j] = byte(a >> (j % 8 * 8))
		}
		var reta [simnic.RETASize]uint8
		for j := range reta {
			reta[j] = uint8(b>>(j%8*8)) % uint8(n.cfg.Queues+int(b>>63))
		}
		fields := simnic.RSSField(uint32(a>>32) & 0x00f30000)
		if b&0x4000 != 0 {
			fields |= 1
		}
		wantErr = b>>63 != 0 && slices.ContainsFunc(reta[:], func(q uint8) bool { return int(q) >= n.cfg.Queues }) || fields&1 != 0
		m.guard("SetRSS", func() { err = n.nic.SetRSS(key, reta, fields) })
	case 6:
		ctl := simnic.PHYControl{Autoneg: a&1 != 0, Advertise: simnic.Ability(b) & (simnic.AbilitiesAll | 1<<20)}
		sp := ctl.Advertise & simnic.AbilitySpeeds
		wantErr = ctl.Advertise&(1<<20) != 0 || sp == 0 || !ctl.Autoneg && sp&(sp-1) != 0 || sp&^n.cfg.Abilities != 0
		m.guard("SetPHY", func() { err = n.nic.SetPHY(ctl) })
	case 7:
		m.guard("SetLinkPartner", func() { n.nic.SetLinkPartner(simnic.Ability(b)) })
	case 8:
		f := make([]byte, 60)
		copy(f, []byte{0x01, 0x80, 0xc2, 0, 0, 1, 2, 0, 0, 0, 0, 1, 0x88, 0x08, 0, 1, byte(a >> 8), byte(a)})
		m.guard("Receive(PAUSE)", func() {
			if n.inbound.Receive(f) {
				n.pauses++
			}
		})
	default:
		m.guard("read registers", func() {
			_, _ = n.nic.RAR(int(int8(a)))
			_, _, _ = n.nic.RSS()
			_ = n.nic.PHYStatus()
			_, _, _ = n.nic.MTA(), n.nic.VFTA(), n.nic.RxControl()
		})
	}
	if (err != nil) != wantErr {
		m.fail("register %d: error %v, want one: %v", which, err, wantErr)
	}
	var ce *simnic.ConfigError
	if err != nil && (!errors.As(err, &ce) || !errors.Is(err, simnic.ErrConfig)) {
		m.fail("register %d: %v is not a *ConfigError", which, err)
	}
}

// frameLen writes frame seq of a NIC's traffic into buf and returns its
// length: lens picks the length rule (the edges of MaxFrame, a VLAN tag,
// the runt sizes, the largest buffer, and 0, which ends a generator).
func frameLen(cfg simnic.Config, lens uint8, seq uint64, buf []byte) int {
	sizes := [...]int{64, 60, 1, 14, cfg.MaxFrame, cfg.MaxFrame + 1, cfg.MaxFrame + 4, cfg.MaxFrame + 5, 16384, 128 + int(seq%1400), 0, 13}
	n := sizes[int(lens)%len(sizes)]
	if lens >= 128 {
		n = sizes[int(seq+uint64(lens))%len(sizes)]
	}
	s := simnictest.FrameSpec{Flow: uint32(seq % 5), Seq: uint32(seq), Len: n}
	if n == cfg.MaxFrame+4 || lens%3 == 0 {
		s.Len, s.VLAN = n-4, 42
	}
	f := s.Build(buf[:0])
	if len(f) > len(buf) {
		return 0
	}
	return len(f)
}

// transmit hands the NIC's iflib context one packet: kind picks its length
// and offload (none, checksums, TSO with some MSS), and how many buffers.
func (m *nicModel) transmit(n *mNIC, lens, kind uint8) {
	size := [...]int{60, 1, 200, 1514, n.cfg.MaxFrame, n.cfg.MaxFrame + 1, 20000, 65535}[lens%8]
	s := simnictest.FrameSpec{Proto: simnictest.ProtoTCP, Len: size, Seed: kind&1 != 0, Seq: uint32(lens)}
	data := s.Build(nil)
	// nseg buffers (more when a part does not fit a cluster).
	pkt, err := n.zone.GetChain(data, simnictest.PartLen(len(data), 1+int(kind>>4)))
	if err != nil {
		return
	}
	switch kind >> 1 & 3 {
	case 1:
		pkt.Hdr.CsumFlags = iflib.CsumIP | iflib.CsumIPTCP
	case 2:
		pkt.Hdr.CsumFlags = iflib.CsumIPTSO
		pkt.Hdr.TSOSegSize = [...]uint16{0, 1, 536, 1448, 9000, 65535}[int(kind>>3)%6]
	}
	ic := n.drv.Context()
	m.guard("Transmit", func() { _ = ic.Transmit(pkt) })
}

// check runs after every step: counters never go back, the checker and
// the IOMMU have nothing to report.
func (m *nicModel) check() {
	m.t.Helper()
	for i, n := range m.nics {
		st := n.nic.Stats()
		if bad := regressed(n.last, st); bad != "" {
			m.fail("nic %d: %s went back: %+v → %+v", i, bad, n.last, st)
		}
		n.last = st
	}
	for _, r := range m.raws {
		st := r.fwd.Stats()
		if st.Received < r.lastStat.Received || st.Forwarded < r.lastStat.Forwarded || st.Completed < r.lastStat.Completed {
			m.fail("raw forwarder counters went back: %+v → %+v", r.lastStat, st)
		}
		r.lastStat = st
	}
	if c := m.env.Checker; c != nil {
		if rs := c.Reports(); len(rs) != 0 {
			m.fail("busdma checker: %v", rs)
		}
	}
	if m.env.IOMMU != nil {
		if f := m.env.IOMMU.Stats().Faults; f != 0 {
			m.fail("%d IOMMU faults", f)
		}
	}
}

// regressed names a counter of b below its value in a ("" if none).
func regressed(a, b simnic.Stats) string {
	av, bv := statsFields(a), statsFields(b)
	for name, v := range av {
		if bv[name] < v {
			return name
		}
	}
	return ""
}

func statsFields(s simnic.Stats) map[string]uint64 {
	return map[string]uint64{
		"TxProcessed": s.TxProcessed, "TxPackets": s.TxPackets, "TxFrames": s.TxFrames, "TxBytes": s.TxBytes, "TxTooLong": s.TxTooLong,
		"TxDMAFaults": s.TxDMAFaults, "TxBadContext": s.TxBadContext, "TxTSO": s.TxTSO, "TxWriteBacks": s.TxWriteBacks,
		"RxFrames": s.RxFrames, "RxBytes": s.RxBytes, "RxErrors": s.RxErrors, "RxDMAFaults": s.RxDMAFaults, "RxCsumErrors": s.RxCsumErrors,
		"RxNoRoom": s.RxNoRoom, "RxFlushed": s.RxFlushed, "RxWriteBacks": s.RxWriteBacks, "RxMissed": s.RxMissed, "RxTooLong": s.RxTooLong,
		"RxLinkDown": s.RxLinkDown, "DMAErrors": s.DMAErrors, "TxIntrs": s.TxIntrs, "RxIntrs": s.RxIntrs, "LinkIntrs": s.LinkIntrs,
		"LostIntrs": s.LostIntrs, "SpuriousIntrs": s.SpuriousIntrs, "TxHangs": s.TxHangs, "LostWriteBacks": s.LostWriteBacks,
		"LinkChanges": s.LinkChanges, "StatusReads": s.StatusReads, "Parks": s.Parks,
		"RxFilteredAddr": s.RxFilteredAddr, "RxFilteredVLAN": s.RxFilteredVLAN, "RxXoff": s.RxXoff, "RxXon": s.RxXon, "TxPauses": s.TxPauses,
	}
}

// checkRaw checks a stopped raw forwarder's books.
func (m *nicModel) checkRaw(r *mRaw) {
	m.t.Helper()
	if st := r.fwd.Stats(); st.Received != st.Forwarded+st.Errors {
		m.fail("raw forwarder: received %d ≠ forwarded %d + errors %d", st.Received, st.Forwarded, st.Errors)
	}
}

// closeEnv closes the Env (generators, forwarders, contexts, then the
// books: leaks, checker reports, goroutines) and checks the conservation
// of frames with everything stopped.
func (m *nicModel) closeEnv() {
	m.t.Helper()
	m.closed = true
	var err error
	m.guard("Env.Close", func() { err = m.env.Close() })
	if err != nil {
		m.fail("Env.Close: %v", err)
	}
	for _, r := range m.raws {
		m.checkRaw(r)
	}
	for _, g := range m.gens {
		sent, refused, off, acc := g.g.Sent(), g.g.Refused(), g.c.offered.Load(), g.c.accepted.Load()
		if acc != sent || off < sent+refused || !g.g.Lossless && off != sent+refused {
			m.fail("generator into nic %d: sent %d refused %d, the NIC was offered %d and took %d", g.dst, sent, refused, off, acc)
		}
	}
	offered := make([]uint64, len(m.nics))
	accepted := make([]uint64, len(m.nics))
	add := func(c *counter, i int) {
		offered[i] += c.offered.Load()
		accepted[i] += c.accepted.Load()
	}
	for i, n := range m.nics {
		add(n.inbound, i)
	}
	for _, g := range m.gens {
		add(g.c, g.dst)
	}
	for _, n := range m.nics {
		for _, c := range n.links {
			for j, o := range m.nics {
				if c.dst == o.nic {
					add(c, j)
				}
			}
		}
	}
	for i, n := range m.nics {
		st := n.nic.Stats()
		accepted[i] -= n.pauses // the MAC consumed them: not in the FIFO
		if got := st.RxFrames + st.RxErrors + st.RxDMAFaults + st.RxNoRoom + st.RxFlushed + st.RxWaiting; got != accepted[i] && !n.direct {
			m.fail("nic %d: the FIFO took %d frames; written %d + bad %d + DMA faults %d + no room %d + flushed %d + waiting %d = %d",
				i, accepted[i], st.RxFrames, st.RxErrors, st.RxDMAFaults, st.RxNoRoom, st.RxFlushed, st.RxWaiting, got)
		}
		if n.direct {
			if got := st.RxFrames + st.RxErrors + st.RxDMAFaults + st.RxNoRoom + st.RxFlushed + st.RxWaiting; got < accepted[i] {
				m.fail("nic %d: the FIFO took at least %d frames; written, dropped and waiting: %d", i, accepted[i], got)
			}
		} else if got := accepted[i] + n.pauses + st.RxLinkDown + st.RxFilteredAddr + st.RxFilteredVLAN + (st.RxTooLong - st.RxNoRoom) + (st.RxMissed - st.RxFlushed); got != offered[i] {
			m.fail("nic %d: offered %d frames at the wire; taken %d + PAUSE %d + link down %d + filtered %d+%d + too long %d + FIFO full %d = %d",
				i, offered[i], accepted[i], n.pauses, st.RxLinkDown, st.RxFilteredAddr, st.RxFilteredVLAN, st.RxTooLong-st.RxNoRoom, st.RxMissed-st.RxFlushed, got)
		}
		if st.TxProcessed != st.TxPackets+st.TxTooLong+st.TxDMAFaults+st.TxBadContext {
			m.fail("nic %d: TX processed %d ≠ sent %d + too long %d + DMA faults %d + bad context %d", i, st.TxProcessed,
				st.TxPackets, st.TxTooLong, st.TxDMAFaults, st.TxBadContext)
		}
		var wire uint64
		for _, c := range n.links {
			wire += c.offered.Load()
		}
		if !n.noWire && wire != st.TxFrames {
			m.fail("nic %d put %d frames on its wire; its peers were offered %d", i, st.TxFrames, wire)
		}
	}
}
