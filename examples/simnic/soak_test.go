package simnic_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// The conservation soak: every TX mode in turn, each on a NIC whose
// behaviour modes the seed draws, with every fault kind on the seeded
// schedule, link flaps and resets, traffic both ways with every size
// (0, 1, 60, 127, 128, 129, 1514, 9000, a chain of more buffers than the
// driver takes, TSO packets, checksum offload, VLAN tags). At the end of
// each mode, per queue and in total: offered = delivered + each counted
// drop; payloads byte-identical and in order per flow, none twice; the
// busdma checker silent; no IOMMU fault; every zone full, no map loaded,
// no goroutine left (the rig's teardown).
//
//	SIMNIC_SOAK_DURATION=10m SIMNIC_SEED=0x... go test -run '^TestSoak$' -v -timeout 0 ./examples/simnic/
//
// The default is short, for CI (2 s per mode, 1 s with -short); the seed
// and the totals go to standard error so CI's log has them.

const soakFlows = 4

// soakDuration is SIMNIC_SOAK_DURATION, or the CI default.
func soakDuration(t *testing.T) time.Duration {
	if s := os.Getenv("SIMNIC_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, "SIMNIC_SOAK_DURATION=%q", s)
		require.Greater(t, d, time.Duration(0), "SIMNIC_SOAK_DURATION=%q: %v", s, err)
		return d
	}
	if testing.Short() {
		return 3 * time.Second
	}
	return 6 * time.Second
}

func TestSoak(t *testing.T) {
	seed := simnictest.Seed(t)
	dur := soakDuration(t)
	fmt.Fprintf(os.Stderr, "simnic soak: seed %#x, %v; replay: %s\n", seed, dur, simnictest.ReplayCommand(t, seed))
	var total soakTotals
	for phase, mode := range txModes {
		t.Run(mode.String(), func(t *testing.T) {
			total.add(runSoak(t, seed, phase, mode, dur/time.Duration(len(txModes))))
		})
	}
	fmt.Fprintf(os.Stderr, "simnic soak totals (seed %#x, %v):\n%s", seed, dur, total)
}

// mix is a splitmix64 step: a deterministic hash of (a, b).
func mix(a, b uint64) uint64 {
	x := a ^ b*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// txKind is what a soak sender sends as frame seq of a flow.
type txKind struct {
	spec  simnictest.FrameSpec
	nseg  int
	vlan  uint16 // M_VLANTAG
	csum  bool   // checksum offload (the frame goes out seeded)
	tso   int    // the MSS (0: no TSO)
	empty bool   // a zero-length packet (Transmit refuses it)
}

var soakSizes = []int{0, 1, 60, 127, 128, 129, 1514, 9000}

// soakTx is the deterministic TX plan: frame seq of flow.
func soakTx(seed uint64, flow, seq uint32) txKind {
	x := mix(seed^0x7478, uint64(flow)<<32|uint64(seq))
	k := txKind{spec: simnictest.FrameSpec{Flow: flow, Seq: seq, Proto: simnictest.ProtoUDP}, nseg: 1 + int(x>>8%3)}
	if x>>4&1 != 0 {
		k.spec.Proto = simnictest.ProtoTCP
		k.spec.TCPSeq = seq * 7
	}
	switch r := x % 100; {
	case r < 6: // TSO: the TCP sequence number says which packet and where
		k.spec.Proto, k.spec.IPID = simnictest.ProtoTCP, 0xc000
		k.spec.TCPSeq = seq << 20
		k.spec.Len = k.spec.Header() + simnictest.StampLen + int(x>>12%24000)
		k.tso = []int{536, 1448, 4000}[x>>40%3]
		k.nseg = (k.spec.Len + 2047) / 2048
		k.spec.Seed = true
		return k
	case r < 10: // more buffers than the driver takes: collapse or defrag
		k.spec.Len, k.nseg = 1514, 40
	default:
		k.spec.Len = soakSizes[x>>16%uint64(len(soakSizes))]
	}
	if k.spec.Len == 0 {
		k.empty = true
		return k
	}
	if k.spec.Len >= simnictest.MinStampedLen(k.spec.Proto) {
		k.csum = x>>24&3 == 0
		k.spec.Seed = k.csum
		if x>>28&3 == 0 {
			k.vlan = uint16(1 + x>>32%4000)
		}
	}
	return k
}

// wire is what the frame looks like on the wire (without TSO).
func (k txKind) wire() []byte {
	s := k.spec
	s.Seed = false // the device computed what the stack seeded
	s.VLAN = k.vlan
	return s.Build(nil)
}

// rxKind is frame seq of a flow on the receive side.
type rxKind struct {
	spec    simnictest.FrameSpec
	corrupt bool // the last payload byte flipped after the checksums: a bad L4 checksum
}

func soakRx(seed uint64, flow, seq uint32) rxKind {
	x := mix(seed^0x7278, uint64(flow)<<32|uint64(seq))
	k := rxKind{spec: simnictest.FrameSpec{Flow: flow, Seq: seq, Proto: simnictest.ProtoUDP, Len: soakSizes[1+x%uint64(len(soakSizes)-1)]}}
	if x>>8&1 != 0 {
		k.spec.Proto = simnictest.ProtoTCP
	}
	if k.spec.Len >= simnictest.MinStampedLen(k.spec.Proto) {
		if x>>12&3 == 0 {
			k.spec.VLAN = uint16(1 + x>>16%4000)
		}
		k.corrupt = x>>40%16 == 0
	}
	return k
}

func (k rxKind) frame() []byte {
	f := k.spec.Build(nil)
	if k.corrupt {
		f[len(f)-1] ^= 0x5a
	}
	return f
}

// soakConfig draws the phase's device, driver and iflib settings.
func soakConfig(seed uint64, phase int, mode iflib.TxMode) (simnic.Config, iflib.Config) {
	r := rand.New(rand.NewPCG(seed, uint64(phase)))
	pick := func(vs ...int) int { return vs[r.IntN(len(vs))] }
	nc := simnic.Config{
		Queues: pick(1, 2), NTxd: pick(256, 512, 1024), NRxd: pick(256, 512), FIFO: 256, Offload: true,
		TxCompletion: simnic.TxCompletion(r.IntN(3)), RxErrors: simnic.RxErrorStyle(r.IntN(2)),
		WBThresh: pick(0, 0, 8, 32), WBDelay: time.Duration(pick(0, 0, 50, 200)) * time.Microsecond,
		DMALatency: time.Duration(pick(0, 0, 0, 2)) * time.Microsecond, ITR: time.Duration(pick(0, 0, 30)) * time.Microsecond,
	}
	prof := simnic.DefaultProfile()
	prof.Every[simnic.FaultLinkDown] = 150
	nc.Schedule = simnic.NewSchedule(mix(seed, uint64(phase)), prof)
	// The watchdog gets 100 ms (real ones get seconds): a 20 ms freeze
	// is what a loaded 2-core machine under -race does to a healthy queue.
	cfg := iflib.Config{TxMode: mode, TimerInterval: 10 * time.Millisecond, TxWatchdogPeriods: 10, RxBudget: pick(8, 16, 32)}
	return nc, cfg
}

// soakTotals add up the phases.
type soakTotals struct {
	txOffered, txAccepted, txPackets, txWireFrames, txTSO, txErrs uint64
	rxOffered, rxSent, rxDelivered                                uint64
	faults                                                        map[simnic.FaultKind]uint64
	resets, watchdogs, manualResets, flaps, linkChanges           uint64
	txDrops, rxDrops                                              map[string]uint64
	recounted                                                     uint64
}

func (s *soakTotals) add(o soakTotals) {
	s.txOffered += o.txOffered
	s.txAccepted += o.txAccepted
	s.txPackets += o.txPackets
	s.txWireFrames += o.txWireFrames
	s.txTSO += o.txTSO
	s.txErrs += o.txErrs
	s.rxOffered += o.rxOffered
	s.rxSent += o.rxSent
	s.rxDelivered += o.rxDelivered
	s.resets += o.resets
	s.watchdogs += o.watchdogs
	s.manualResets += o.manualResets
	s.flaps += o.flaps
	s.linkChanges += o.linkChanges
	s.recounted += o.recounted
	if s.faults == nil {
		s.faults, s.txDrops, s.rxDrops = map[simnic.FaultKind]uint64{}, map[string]uint64{}, map[string]uint64{}
	}
	for k, v := range o.faults {
		s.faults[k] += v
	}
	for k, v := range o.txDrops {
		s.txDrops[k] += v
	}
	for k, v := range o.rxDrops {
		s.rxDrops[k] += v
	}
}

func formatMap(m map[string]uint64) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for i, k := range ks {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, m[k])
	}
	return b.String()
}

func (s soakTotals) String() string {
	return fmt.Sprintf("  TX: %d packets offered, %d accepted (%d refused with an error), %d sent whole (%d TSO packets), %d frames on the wire\n"+
		"      drops: %s\n"+
		"  RX: %d frames offered at the wire, %d taken, %d delivered\n"+
		"      drops: %s\n"+
		"  faults injected: %s\n"+
		"  resets %d (watchdog %d, forced %d), link flaps forced %d, link changes %d; bad frames iflib counted twice %d\n"+
		"  lost 0, duplicated 0 (every packet accounted for, every payload checked)\n",
		s.txOffered, s.txAccepted, s.txErrs, s.txPackets, s.txTSO, s.txWireFrames, formatMap(s.txDrops),
		s.rxOffered, s.rxSent, s.rxDelivered, formatMap(s.rxDrops),
		simnic.FormatCounts(s.faults), s.resets, s.watchdogs, s.manualResets, s.flaps, s.linkChanges, s.recounted)
}

// bitset is a growable set of sequence numbers.
type bitset []uint64

func (b *bitset) set(i uint32) {
	for int(i>>6) >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[i>>6] |= 1 << (i & 63)
}

func (b bitset) has(i uint32) bool { return int(i>>6) < len(b) && b[i>>6]&(1<<(i&63)) != 0 }

// soakLedger tracks one phase's traffic.
type soakLedger struct {
	seed uint64
	r    *simnictest.Rig
	nq   int

	mu        sync.Mutex
	accepted  [soakFlows]bitset
	nacc      uint64
	offered   uint64
	errs      map[string]uint64
	nerrs     uint64
	retryErrs uint64

	rxMu        sync.Mutex
	rxLast      [soakFlows]int64
	rxDelivered uint64
	rxBad       error
}

// send transmits the flow's plan until stop is closed.
func (l *soakLedger) send(flow uint32, stop <-chan struct{}) {
	for seq := uint32(0); ; seq++ {
		k := soakTx(l.seed, flow, seq)
		data := k.spec.Build(nil)
		l.mu.Lock()
		l.offered++
		l.mu.Unlock()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var m *iflib.Packet
			if k.empty {
				p, err := l.r.TxZone.Get()
				if err != nil {
					time.Sleep(20 * time.Microsecond)
					continue
				}
				m = p
			} else {
				m = l.packet(data, k.nseg)
				if m == nil {
					time.Sleep(20 * time.Microsecond)
					continue
				}
			}
			m.Hdr.FlowID, m.Hdr.HashType = flow, iflib.HashRSSUDPv4
			if k.vlan != 0 {
				m.Hdr.Flags |= iflib.MVLANTag
				m.Hdr.VLANTag = k.vlan
			}
			switch {
			case k.tso != 0:
				m.Hdr.CsumFlags, m.Hdr.TSOSegSize = iflib.CsumIPTSO, uint16(k.tso)
			case k.csum && k.spec.Proto == simnictest.ProtoTCP:
				m.Hdr.CsumFlags = iflib.CsumIP | iflib.CsumIPTCP
			case k.csum:
				m.Hdr.CsumFlags = iflib.CsumIP | iflib.CsumIPUDP
			}
			err := l.r.Ctx.Transmit(m)
			l.mu.Lock()
			if err == nil {
				l.accepted[flow].set(seq)
				l.nacc++
				l.mu.Unlock()
				break
			}
			l.errs[errName(err)]++
			l.nerrs++
			retry := errors.Is(err, iflib.ErrNoBufs) || errors.Is(err, iflib.ErrNotRunning)
			if retry {
				l.retryErrs++
			}
			l.mu.Unlock()
			if !retry {
				break
			}
			time.Sleep(30 * time.Microsecond)
		}
	}
}

// packet builds a chain of nseg buffers (each at most a cluster) holding
// data, or nil when the zone is empty for now.
func (l *soakLedger) packet(data []byte, nseg int) *iflib.Packet {
	m, err := l.r.TxZone.GetChain(data, simnictest.PartLen(len(data), nseg))
	if err != nil {
		return nil
	}
	return m
}

// input verifies each delivered packet against the RX plan.
func (l *soakLedger) input(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
	l.rxMu.Lock()
	defer l.rxMu.Unlock()
	for _, m := range pkts {
		f, hdr := flatten(m), m.Hdr
		m.Free()
		l.rxDelivered++
		if l.rxBad != nil {
			continue
		}
		l.rxBad = l.checkRx(f, hdr)
	}
}

func (l *soakLedger) checkRx(f []byte, hdr iflib.PktHdr) error {
	p, err := simnictest.Parse(f)
	if err != nil || !p.Stamped {
		return nil // a frame too short to carry a stamp
	}
	if int(p.Flow) >= soakFlows {
		return fmt.Errorf("delivered a frame of flow %d, which nobody sent", p.Flow)
	}
	if int64(p.Seq) <= l.rxLast[p.Flow] {
		return fmt.Errorf("flow %d: frame %d delivered after %d (duplicate or out of order)", p.Flow, p.Seq, l.rxLast[p.Flow])
	}
	l.rxLast[p.Flow] = int64(p.Seq)
	k := soakRx(l.seed, p.Flow, p.Seq)
	want := k.frame()
	if k.spec.VLAN != 0 {
		// Stripped by the device into the descriptor.
		want = append(append([]byte{}, want[:12]...), want[16:]...)
		if hdr.Flags&iflib.MVLANTag == 0 || hdr.VLANTag != k.spec.VLAN {
			return fmt.Errorf("flow %d frame %d: VLAN tag %d not handed up (%v/%d)", p.Flow, p.Seq, k.spec.VLAN, hdr.Flags&iflib.MVLANTag != 0, hdr.VLANTag)
		}
	}
	if !bytes.Equal(f, want) {
		return fmt.Errorf("flow %d frame %d delivered corrupted (%d bytes, want %d)", p.Flow, p.Seq, len(f), len(want))
	}
	wantCsum := iflib.CsumL3Calc | iflib.CsumL3Valid | iflib.CsumL4Calc | iflib.CsumL4Valid
	if k.corrupt {
		wantCsum &^= iflib.CsumL4Valid
	}
	if hdr.CsumFlags != wantCsum {
		return fmt.Errorf("flow %d frame %d: checksum flags %#x, want %#x", p.Flow, p.Seq, hdr.CsumFlags, wantCsum)
	}
	return nil
}

// soakWire is the far end of the wire: it checks each frame as it
// arrives (a soak moves too many to keep): each stamped frame once, in
// order per flow, byte-identical to its plan (with the checksums the
// device inserted and the VLAN tag), each TSO packet as complete, correct
// segments; frames too short to identify are counted.
type soakWire struct {
	l *soakLedger

	mu      sync.Mutex
	last    [soakFlows]int64
	seen    [soakFlows]bitset
	perFlow [soakFlows]uint64
	frames  uint64
	tso     uint64
	anon    uint64
	err     error
	// A TSO packet being reassembled: its segments follow its first.
	tsoKind txKind
	tsoSegs [][]byte
	tsoLeft int
}

func newSoakWire(l *soakLedger) *soakWire {
	return &soakWire{l: l, last: [soakFlows]int64{-1, -1, -1, -1}}
}

// Receive checks a frame.
func (w *soakWire) Receive(f []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.frames++
	if w.err == nil {
		if err := w.check(f); err != nil {
			w.err = fmt.Errorf("wire frame %d: %w", w.frames, err)
		}
	}
	return true
}

func (w *soakWire) check(f []byte) error {
	if w.tsoLeft > 0 {
		w.tsoSegs = append(w.tsoSegs, bytes.Clone(f))
		if w.tsoLeft--; w.tsoLeft > 0 {
			return nil
		}
		return w.finishTSO()
	}
	p, err := simnictest.Parse(f)
	if err != nil || p.Payload == 0 {
		w.anon++
		return nil
	}
	if p.Proto == simnictest.ProtoTCP && p.IPID >= 0xc000 {
		// The first segment of a TSO packet carries the stamp.
		if !p.Stamped || p.TCPSeq&0xfffff != 0 {
			return fmt.Errorf("a TSO segment without its first")
		}
		k := soakTx(w.l.seed, p.Flow, p.Seq)
		if k.tso == 0 || p.TCPSeq>>20 != p.Seq&0xfff {
			return fmt.Errorf("flow %d frame %d is not a TSO packet of the plan", p.Flow, p.Seq)
		}
		w.tsoKind, w.tsoSegs = k, append(w.tsoSegs[:0], bytes.Clone(f))
		if w.tsoLeft = (k.spec.Len-k.spec.Header()+k.tso-1)/k.tso - 1; w.tsoLeft > 0 {
			return nil
		}
		return w.finishTSO()
	}
	if !p.Stamped {
		w.anon++
		return nil
	}
	if err := w.accept(p.Flow, p.Seq); err != nil {
		return err
	}
	if k := soakTx(w.l.seed, p.Flow, p.Seq); !bytes.Equal(f, k.wire()) {
		return fmt.Errorf("flow %d frame %d differs from its plan (%d bytes)", p.Flow, p.Seq, len(f))
	}
	return nil
}

// finishTSO checks the TSO packet whose segments arrived.
func (w *soakWire) finishTSO() error {
	k := w.tsoKind
	if err := checkTSO(k.wire(), w.tsoSegs, k.tso); err != nil {
		return fmt.Errorf("flow %d TSO packet %d: %w", k.spec.Flow, k.spec.Seq, err)
	}
	w.tso++
	return w.accept(k.spec.Flow, k.spec.Seq)
}

func (w *soakWire) accept(flow, seq uint32) error {
	if flow >= soakFlows {
		return fmt.Errorf("flow %d on the wire, which nobody sent", flow)
	}
	if int64(seq) <= w.last[flow] {
		return fmt.Errorf("flow %d: frame %d after %d (duplicate or out of order)", flow, seq, w.last[flow])
	}
	w.last[flow] = int64(seq)
	w.seen[flow].set(seq)
	w.perFlow[flow]++
	return nil
}

// runSoak runs one TX mode's phase and checks its books.
func runSoak(t *testing.T, seed uint64, phase int, mode iflib.TxMode, dur time.Duration) soakTotals {
	nc, cfg := soakConfig(seed, phase, mode)
	t.Logf("%s: %+v", mode, nc)
	l := &soakLedger{seed: seed, errs: map[string]uint64{}}
	for f := range l.rxLast {
		l.rxLast[f] = -1
	}
	wire := newSoakWire(l)
	r := simnictest.New(t, simnictest.Options{
		Env: simnictest.EnvOptions{IOMMU: true, Sim: busdmaSim()}, NIC: nc, Config: cfg, Peer: wire, Input: l.input, TxZone: 3000,
	})
	l.r, l.nq = r, nc.Queues
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("faults fired (first %d): %v", len(nc.Schedule.Fired()), nc.Schedule.Fired())
		}
	})
	gen := &simnic.Generator{Next: func(seq uint64, buf []byte) int {
		k := soakRx(seed, uint32(seq%soakFlows), uint32(seq/soakFlows))
		return copy(buf, k.frame())
	}}
	require.NoError(t, r.Env.Start(gen, r.NIC))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for f := uint32(0); f < soakFlows; f++ {
		wg.Add(1)
		go func() { defer wg.Done(); l.send(f, stop) }()
	}
	// Forced resets and link flaps on top of the schedule's.
	var manual, flaps uint64
	ev := rand.New(rand.NewPCG(seed, uint64(phase)+100))
	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(100+ev.IntN(300)) * time.Millisecond)
		switch ev.IntN(3) {
		case 0:
			require.NoError(t, r.Ctx.Stop())
			require.NoError(t, r.Ctx.Init())
			manual++
		case 1:
			r.NIC.SetLink(false)
			time.Sleep(time.Duration(1+ev.IntN(10)) * time.Millisecond)
			r.NIC.SetLink(true)
			flaps++
		}
	}
	close(stop)
	wg.Wait()
	require.NoError(t, gen.Stop())
	r.NIC.SetLink(true)
	txl := &txLedger{r: r}
	txl.nacc, txl.nerrs = l.nacc, l.nerrs
	testutil.Settle(t, "the soak's traffic to drain", func() bool {
		return r.NIC.LinkUp() && txl.settled() && rxTaken(r, gen)
	}, func() uint64 { return txl.progress() + r.NIC.Stats().RxFrames }, txl.describe)
	require.NoError(t, r.Ctx.Stop())
	tot := l.check(t, r, wire, gen, manual)
	t.Logf("%s: resets %d watchdog %d missed-intr %d; completion %d wb %d/%v", mode, r.Ctx.Resets(), r.Ctx.WatchdogEvents(), missedIntrs(r), nc.TxCompletion, nc.WBThresh, nc.WBDelay)
	tot.manualResets, tot.flaps = manual, flaps
	r.Close()
	return tot
}

// straddling bounds the packets iflib's stop counts as reported although
// the device never finished them: with head write-back the head can stop
// inside a packet, and iflib's freeAll counts a packet by its first
// descriptor (at most one such packet per queue and stop). With DD
// write-back reports end at packet boundaries: none.
func straddling(r *simnictest.Rig, manual uint64) uint64 {
	if r.NIC.Config().TxCompletion != simnic.TxCompletionHeadWB {
		return 0
	}
	return (r.Ctx.Resets() + manual + 1) * uint64(r.Ctx.NumTxQueues())
}

// check verifies the phase's books once the context is stopped.
func (l *soakLedger) check(t *testing.T, r *simnictest.Rig, w *soakWire, gen *simnic.Generator, manual uint64) soakTotals {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	require.NoError(t, w.err)
	require.Zero(t, w.tsoLeft, "a TSO packet of flow %d was cut short on the wire", w.tsoKind.spec.Flow)
	for f := range w.seen {
		for i, word := range w.seen[f] {
			for b := 0; b < 64; b++ {
				seq := uint32(i*64 + b)
				require.False(t, word&(1<<b) != 0 && !l.accepted[f].has(seq), "flow %d frame %d reached the wire, but Transmit refused it", f, seq)
			}
		}
	}
	perFlow, tso, anon, frames := w.perFlow, w.tso, w.anon, w.frames
	dev, drv := r.NIC.Stats(), r.Driver.Stats()
	tot := soakTotals{
		txOffered: l.offered, txAccepted: l.nacc, txPackets: dev.TxPackets, txWireFrames: frames, txTSO: dev.TxTSO,
		txErrs: l.nerrs - l.retryErrs, resets: r.Ctx.Resets(), watchdogs: r.Ctx.WatchdogEvents(), linkChanges: dev.LinkChanges,
		faults: r.NIC.Schedule().Counts(), txDrops: map[string]uint64{}, rxDrops: map[string]uint64{},
	}
	// Per queue: the driver's and the device's books, and what reached
	// the wire from each queue's flows.
	var sumFlows uint64
	for q := 0; q < l.nq; q++ {
		dq, err := r.Driver.QueueStats(q)
		require.NoError(t, err)
		nq, err := r.NIC.QueueStats(q)
		require.NoError(t, err)
		var flows uint64
		for f := 0; f < soakFlows; f++ {
			if f%l.nq == q { // QIDX: (flowid & (rss table size - 1)) % ntxqsets
				flows += perFlow[f]
			}
		}
		sumFlows += flows
		require.Equal(t, nq.TxProcessed+dq.TxAbandoned, dq.TxEncapped, "txq%d: encapped %d ≠ processed %d + abandoned %d", q, dq.TxEncapped, nq.TxProcessed, dq.TxAbandoned)
		require.Equal(t, nq.TxPackets+nq.TxDropped, nq.TxProcessed, "txq%d: processed %d ≠ sent %d + dropped %d", q, nq.TxProcessed, nq.TxPackets, nq.TxDropped)
		require.LessOrEqual(t, flows, nq.TxPackets, "txq%d: %d of its flows' packets on the wire, the device sent %d", q, flows, nq.TxPackets)
		st, err := r.Ctx.RxQueueStats(q)
		require.NoError(t, err)
		counted := st.IPackets + st.IErrors + st.StopDiscards
		require.GreaterOrEqual(t, counted, nq.RxWritten, "rxq%d: the device wrote %d frames, iflib counts %d (ipackets %d ierrors %d stop %d)", q, nq.RxWritten, counted, st.IPackets, st.IErrors, st.StopDiscards)
		require.False(t, r.NIC.Config().RxErrors == simnic.RxErrorsDiscard && counted != nq.RxWritten, "rxq%d: the device wrote %d frames, iflib counts %d (ipackets %d ierrors %d stop %d)", q, nq.RxWritten, counted, st.IPackets, st.IErrors, st.StopDiscards)
		tot.recounted += counted - nq.RxWritten
	}
	// TX in total: every packet offered was refused with an error,
	// accepted and dropped by iflib (counted), abandoned on the ring at a
	// stop (counted), dropped by the device (counted) or sent, once.
	var oerr, oqd, stopd uint64
	for q := 0; q < l.nq; q++ {
		st, _ := r.Ctx.TxQueueStats(q)
		oerr, oqd, stopd = oerr+st.OErrors, oqd+st.OQDrops, stopd+st.StopDiscards
	}
	post := oerr + oqd - l.nerrs
	require.GreaterOrEqual(t, oerr+oqd, l.nerrs, "iflib counted %d drops, returned %d errors", oerr+oqd, l.nerrs)
	require.Equal(t, drv.TxEncapped+post, l.nacc, "accepted %d ≠ encapped %d + dropped after acceptance %d", l.nacc, drv.TxEncapped, post)
	require.LessOrEqual(t, drv.TxAbandoned, stopd+straddling(r, manual), "%d packets abandoned on the ring, %d counted in stop_discards", drv.TxAbandoned, stopd)
	require.Equal(t, sumFlows+anon, dev.TxPackets, "the device sent %d packets; on the wire %d stamped/TSO and %d anonymous", dev.TxPackets, sumFlows, anon)
	require.Equal(t, frames, dev.TxFrames, "the device put %d frames on the wire, the sink has %d", dev.TxFrames, frames)
	require.Equal(t, dev.TxTSO, tso, "%d TSO packets on the wire, the device cut %d", tso, dev.TxTSO)
	tot.txDrops = map[string]uint64{
		"refused-retried": l.retryErrs, "iflib-after-accept": post, "abandoned-at-stop": drv.TxAbandoned,
		"device-too-long": dev.TxTooLong, "device-dma": dev.TxDMAFaults, "device-bad-context": dev.TxBadContext,
	}
	for k, v := range l.errs {
		if !strings.Contains(k, "no buffer space") && !strings.Contains(k, "ENETDOWN") {
			tot.txDrops["refused: "+k] += v
		}
	}
	// RX in total.
	l.rxMu.Lock()
	defer l.rxMu.Unlock()
	require.NoError(t, l.rxBad)
	var ip, ie, disc, sd, iqd, filt uint64
	for q := 0; q < l.nq; q++ {
		st, _ := r.Ctx.RxQueueStats(q)
		ip, ie, disc, sd, iqd, filt = ip+st.IPackets, ie+st.IErrors, disc+st.Discards, sd+st.StopDiscards, iqd+st.IQDrops, filt+st.Filtered
	}
	written := dev.RxFrames + dev.RxErrors + dev.RxDMAFaults
	require.Equal(t, written+dev.RxNoRoom+dev.RxFlushed, gen.Sent(), "RX: the FIFO took %d frames, the device wrote %d and dropped %d+%d", gen.Sent(), written, dev.RxNoRoom, dev.RxFlushed)
	require.Equal(t, l.rxDelivered+filt+iqd, ip, "RX: ipackets %d ≠ delivered %d + filtered %d + iqdrops %d", ip, l.rxDelivered, filt, iqd)
	require.LessOrEqual(t, tot.recounted, drv.RxBadFrames, "RX: iflib counted %d frames more than the device wrote, with %d bad frames", tot.recounted, drv.RxBadFrames)
	tot.rxOffered, tot.rxSent, tot.rxDelivered = gen.Sent()+gen.Refused(), gen.Sent(), l.rxDelivered
	tot.rxDrops = map[string]uint64{
		"wire-fifo-full": dev.RxMissed - dev.RxFlushed, "wire-link-down": dev.RxLinkDown, "wire-too-long": dev.RxTooLong - dev.RxNoRoom,
		"wire-filtered-addr": dev.RxFilteredAddr, "wire-filtered-vlan": dev.RxFilteredVLAN,
		"fifo-flushed-by-reset": dev.RxFlushed, "no-room": dev.RxNoRoom,
		"iflib-ierrors": ie - tot.recounted, "iflib-discards": disc, "iflib-stop-discards": sd, "iflib-iqdrops": iqd,
	}
	require.Equal(t, gen.Sent()+dev.RxMissed-dev.RxFlushed+dev.RxLinkDown+dev.RxTooLong-dev.RxNoRoom+dev.RxFilteredAddr+dev.RxFilteredVLAN, gen.Sent()+gen.Refused(), "RX at the wire: offered %d ≠ taken %d + refused %d+%d+%d+%d+%d", gen.Sent()+gen.Refused(), gen.Sent(), dev.RxMissed-dev.RxFlushed, dev.RxLinkDown, dev.RxTooLong-dev.RxNoRoom, dev.RxFilteredAddr, dev.RxFilteredVLAN)
	return tot
}

// busdmaSim sizes the soak's memory: two queue sets of RX zones, a TX zone
// and the rings.
func busdmaSim() busdma.SimConfig { return busdma.SimConfig{Size: 96 << 20, ContigSize: 4 << 20} }

func missedIntrs(r *simnictest.Rig) (n uint64) {
	for q := 0; q < r.Ctx.NumTxQueues(); q++ {
		st, _ := r.Ctx.TxQueueStats(q)
		n += st.MissedIntrs
	}
	return n
}
