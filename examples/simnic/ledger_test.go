package simnic_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// The ledgers: every frame a test offers is accounted for, by the
// counters of the layer that dropped it, and every frame delivered is
// checked byte for byte and in order within its flow.

// flowSize is the size of frame seq of flow: a deterministic mix of the
// sizes, so a receiver can rebuild any frame from its stamp.
type flowSize func(flow, seq uint32) int

func cycleSizes(sizes ...int) flowSize {
	return func(flow, seq uint32) int { return sizes[(int(flow)*7+int(seq))%len(sizes)] }
}

// txLedger transmits flows of stamped frames through a rig and checks
// what reaches the wire.
type txLedger struct {
	r     *simnictest.Rig
	rec   *simnictest.Recorder
	size  flowSize
	nseg  int
	flows int

	mu       sync.Mutex
	accepted [][]bool // [flow][seq]: Transmit returned nil
	errs     map[string]uint64
	nerrs    uint64
	nacc     uint64
}

func newTxLedger(r *simnictest.Rig, rec *simnictest.Recorder, flows int, size flowSize, nseg int) *txLedger {
	return &txLedger{r: r, rec: rec, size: size, nseg: nseg, flows: flows, accepted: make([][]bool, flows), errs: map[string]uint64{}}
}

func (l *txLedger) spec(flow, seq uint32) simnictest.FrameSpec {
	return simnictest.FrameSpec{Flow: flow, Seq: seq, Len: l.size(flow, seq)}
}

// send transmits frames [from, to) of each flow from one goroutine per
// flow, retrying a frame while iflib refuses it for want of room or link
// (ErrNoBufs, ErrLinkDown), and giving up on it after any other error.
// It returns when every flow is done or stop is closed.
func (l *txLedger) send(t testing.TB, from, to int, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for f := 0; f < l.flows; f++ {
		wg.Add(1)
		go func(flow uint32) {
			defer wg.Done()
			buf := make([]byte, 0, 16384)
			for seq := uint32(from); seq < uint32(to); seq++ {
				for {
					select {
					case <-stop:
						return
					default:
					}
					err := l.transmit(t, flow, seq, buf)
					if err == nil {
						break
					}
					if errors.Is(err, iflib.ErrNoBufs) || errors.Is(err, iflib.ErrNotRunning) {
						time.Sleep(50 * time.Microsecond)
						continue
					}
					break
				}
			}
		}(uint32(f))
	}
	wg.Wait()
}

// transmit sends frame seq of flow once and records the result.
func (l *txLedger) transmit(t testing.TB, flow, seq uint32, buf []byte) error {
	data := l.spec(flow, seq).Build(buf)
	err := l.r.Ctx.Transmit(l.packet(t, data, int(seq)))
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.errs[errName(err)]++
		l.nerrs++
		return err
	}
	if n := int(seq) + 1 - len(l.accepted[flow]); n > 0 {
		l.accepted[flow] = append(l.accepted[flow], make([]bool, n)...)
	}
	l.accepted[flow][seq] = true
	l.nacc++
	return nil
}

// packet builds the chain for data from the rig's TX zone, waiting for
// packets while the zone is empty (they come back as TX completes): the
// whole chain or nothing, so that waiting senders never hold part of it.
func (l *txLedger) packet(t testing.TB, data []byte, salt int) *iflib.Packet {
	nseg := 1
	if l.nseg > 1 {
		nseg = 1 + salt%l.nseg
	}
	for {
		m, err := l.r.TxZone.GetChain(data, simnictest.PartLen(len(data), nseg))
		if err == nil {
			return m
		}
		// On a sender goroutine: fail the test, and let Transmit
		// refuse the nil packet (ErrNilPacket, recorded).
		if !assert.ErrorIs(t, err, iflib.ErrNoPackets, "TX zone: %v", err) {
			return nil
		}
		runtime.Gosched()
		time.Sleep(20 * time.Microsecond)
	}
}

// settled reports whether everything accepted so far was either dropped
// by iflib or processed by the device (nothing in flight). A hung queue
// is not settled until iflib's watchdog resets it.
func (l *txLedger) settled() bool {
	l.mu.Lock()
	nacc, nerrs := l.nacc, l.nerrs
	l.mu.Unlock()
	var drops uint64
	for q := 0; q < l.r.Ctx.NumTxQueues(); q++ {
		st, err := l.r.Ctx.TxQueueStats(q)
		if err != nil {
			return false
		}
		drops += st.OErrors + st.OQDrops
	}
	ds := l.r.Driver.Stats()
	return drops >= nerrs && nacc == ds.TxEncapped+drops-nerrs && l.r.NIC.Stats().TxProcessed+ds.TxAbandoned == ds.TxEncapped
}

// describe says where TX stands (for a timeout).
func (l *txLedger) describe() string {
	l.mu.Lock()
	nacc, nerrs := l.nacc, l.nerrs
	l.mu.Unlock()
	st, _ := l.r.Ctx.TxQueueStats(0)
	return fmt.Sprintf("accepted %d errors %d; txq0 %+v; driver %+v; device %+v; resets %d watchdog %d",
		nacc, nerrs, st, l.r.Driver.Stats(), l.r.NIC.Stats(), l.r.Ctx.Resets(), l.r.Ctx.WatchdogEvents())
}

// progress is a number that moves while TX does.
func (l *txLedger) progress() uint64 {
	return l.r.NIC.Stats().TxProcessed + l.r.Driver.Stats().TxEncapped
}

func errName(err error) string {
	for _, e := range []error{iflib.ErrLinkDown, iflib.ErrNotRunning, iflib.ErrNoBufs, iflib.ErrNoMem, iflib.ErrTooBig, iflib.ErrDetached} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return err.Error()
}

// txTotals are the TX counters the conservation check reads.
type txTotals struct {
	errs                            map[string]uint64
	resets                          uint64
	accepted, returnedErrs, arrived uint64
	oerrors, oqdrops, stopDiscards  uint64
	drv                             simnic.DriverStats
	dev                             simnic.Stats
}

func (tt txTotals) String() string {
	return fmt.Sprintf("%v; resets %d; accepted %d (errors returned %d), on the wire %d; iflib oerrors %d oqdrops %d stop_discards %d; "+
		"driver encapped %d abandoned %d; device processed %d sent %d too-long %d dma %d bad-context %d",
		tt.errs, tt.resets, tt.accepted, tt.returnedErrs, tt.arrived, tt.oerrors, tt.oqdrops, tt.stopDiscards,
		tt.drv.TxEncapped, tt.drv.TxAbandoned, tt.dev.TxProcessed, tt.dev.TxPackets, tt.dev.TxTooLong, tt.dev.TxDMAFaults, tt.dev.TxBadContext)
}

// check verifies the frames on the wire and the books, after the context
// was stopped (so that nothing moves). It returns the totals.
func (l *txLedger) check(t testing.TB) txTotals {
	t.Helper()
	frames := l.rec.Frames()
	l.mu.Lock()
	defer l.mu.Unlock()
	last := make([]int64, l.flows)
	for i := range last {
		last[i] = -1
	}
	for i, f := range frames {
		p, err := simnictest.Parse(f)
		require.NoError(t, err, "wire frame %d (%d bytes) is not one the test sent", i, len(f))
		require.True(t, p.Stamped, "wire frame %d (%d bytes) is not one the test sent: %v", i, len(f), err)
		require.Less(t, int(p.Flow), l.flows, "wire frame %d (%d bytes) is not one the test sent: %v", i, len(f), err)
		require.Greater(t, int64(p.Seq), last[p.Flow], "flow %d: frame %d arrived after frame %d (duplicate or out of order)", p.Flow, p.Seq, last[p.Flow])
		last[p.Flow] = int64(p.Seq)
		require.Less(t, int(p.Seq), len(l.accepted[p.Flow]), "flow %d: frame %d arrived but Transmit did not accept it", p.Flow, p.Seq)
		require.True(t, l.accepted[p.Flow][p.Seq], "flow %d: frame %d arrived but Transmit did not accept it", p.Flow, p.Seq)
		require.True(t, l.spec(p.Flow, p.Seq).Matches(f), "flow %d: frame %d arrived corrupted (%d bytes)", p.Flow, p.Seq, len(f))
	}
	tt := txTotals{errs: l.errs, resets: l.r.Ctx.Resets(), accepted: l.nacc, returnedErrs: l.nerrs, arrived: uint64(len(frames)), drv: l.r.Driver.Stats(), dev: l.r.NIC.Stats()}
	for q := 0; q < l.r.Ctx.NumTxQueues(); q++ {
		st, err := l.r.Ctx.TxQueueStats(q)
		require.NoError(t, err)
		tt.oerrors += st.OErrors
		tt.oqdrops += st.OQDrops
		tt.stopDiscards += st.StopDiscards
	}
	postAccept := tt.oerrors + tt.oqdrops - tt.returnedErrs
	devDrops := tt.dev.TxTooLong + tt.dev.TxDMAFaults + tt.dev.TxBadContext
	require.GreaterOrEqual(t, tt.oerrors+tt.oqdrops, tt.returnedErrs, "iflib counted fewer drops than it returned errors: %v", tt)
	require.Equal(t, tt.drv.TxEncapped+postAccept, tt.accepted, "accepted ≠ encapped + dropped after acceptance: %v", tt)
	require.Equal(t, tt.dev.TxProcessed+tt.drv.TxAbandoned, tt.drv.TxEncapped, "encapped ≠ processed by the device + abandoned at stops: %v", tt)
	require.LessOrEqual(t, tt.drv.TxAbandoned, tt.stopDiscards, "%d packets abandoned on the ring at stops, only %d counted in stop_discards: %v", tt.drv.TxAbandoned, tt.stopDiscards, tt)
	require.Equal(t, tt.dev.TxPackets+devDrops, tt.dev.TxProcessed, "device: processed ≠ sent + dropped: %v", tt)
	require.Equal(t, tt.arrived, tt.dev.TxPackets, "device sent %d packets, %d on the wire: %v", tt.dev.TxPackets, tt.arrived, tt)
	return tt
}

// rxLedger checks what iflib delivers from a generator on the NIC's wire.
type rxLedger struct {
	size     flowSize
	flows    int
	lossless bool // the generator retries refused frames (see check)

	mu        sync.Mutex
	last      []int64
	delivered uint64
	bad       error
}

func newRxLedger(flows int, size flowSize) *rxLedger {
	l := &rxLedger{size: size, flows: flows, last: make([]int64, flows)}
	for i := range l.last {
		l.last[i] = -1
	}
	return l
}

// input is the rig's Input: verify each packet and free it.
func (l *rxLedger) input(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range pkts {
		f := flatten(m)
		m.Free()
		l.delivered++
		if l.bad != nil {
			continue
		}
		p, err := simnictest.Parse(f)
		switch {
		case err != nil || !p.Stamped || int(p.Flow) >= l.flows:
			l.bad = fmt.Errorf("delivered a frame (%d bytes) the generator did not send: %v", len(f), err)
		case int64(p.Seq) <= l.last[p.Flow]:
			l.bad = fmt.Errorf("flow %d: frame %d delivered after %d (duplicate or out of order)", p.Flow, p.Seq, l.last[p.Flow])
		case !(simnictest.FrameSpec{Flow: p.Flow, Seq: p.Seq, Len: l.size(p.Flow, p.Seq)}).Matches(f):
			l.bad = fmt.Errorf("flow %d: frame %d delivered corrupted (%d bytes)", p.Flow, p.Seq, len(f))
		default:
			l.last[p.Flow] = int64(p.Seq)
		}
	}
}

func (l *rxLedger) count() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delivered
}

// generator returns a generator of the ledger's flows, round robin, count
// frames in all (0: until stopped).
func (l *rxLedger) generator(count uint64, lossless bool) *simnic.Generator {
	l.lossless = lossless
	return &simnic.Generator{
		Count: count, Lossless: lossless,
		Next: func(seq uint64, buf []byte) int {
			flow, s := uint32(seq%uint64(l.flows)), uint32(seq/uint64(l.flows))
			return len(simnictest.FrameSpec{Flow: flow, Seq: s, Len: l.size(flow, s)}.Build(buf[:0]))
		},
	}
}

// settled reports whether the generator is done and every frame it got
// into the FIFO was written and taken by iflib (or counted dropped).
func (l *rxLedger) settled(r *simnictest.Rig, gen *simnic.Generator) bool {
	if gen.Sent()+gen.Refused() < gen.Count {
		return false
	}
	return rxTaken(r, gen)
}

// rxTaken reports whether every frame the generator got into the FIFO was
// written (or dropped: no room, flushed by a reset) and every frame
// written was taken by iflib (counted in ipackets, ierrors or
// rx_stop_discards, over all RX queues).
func rxTaken(r *simnictest.Rig, gen *simnic.Generator) bool {
	d := r.NIC.Stats()
	written := d.RxFrames + d.RxErrors + d.RxDMAFaults
	if gen.Sent() != written+d.RxNoRoom+d.RxFlushed {
		return false
	}
	var taken uint64
	for q := 0; q < r.Ctx.NumRxQueues(); q++ {
		st, err := r.Ctx.RxQueueStats(q)
		if err != nil {
			return false
		}
		taken += st.IPackets + st.IErrors + st.StopDiscards
	}
	return taken >= written
}

// progress is a number that moves while RX does.
func (l *rxLedger) progress(r *simnictest.Rig) uint64 {
	d := r.NIC.Stats()
	return d.RxFrames + d.RxErrors + d.RxDMAFaults + d.RxFlushed + l.count()
}

// rxTotals are the RX counters the conservation check reads.
type rxTotals struct {
	recounted                                                    uint64 // bad frames iflib counted twice (see check)
	sent, delivered                                              uint64
	ipackets, ierrors, discards, stopDiscards, iqdrops, filtered uint64
	dev                                                          simnic.Stats
}

func (rt rxTotals) String() string {
	return fmt.Sprintf("generator sent %d, delivered %d; iflib ipackets %d ierrors %d (discards %d) rx_stop_discards %d iqdrops %d filtered %d; "+
		"device good %d errors %d dma %d no-room %d flushed %d",
		rt.sent, rt.delivered, rt.ipackets, rt.ierrors, rt.discards, rt.stopDiscards, rt.iqdrops, rt.filtered,
		rt.dev.RxFrames, rt.dev.RxErrors, rt.dev.RxDMAFaults, rt.dev.RxNoRoom, rt.dev.RxFlushed)
}

// check verifies the deliveries and the books after the context was
// stopped (the FIFO is then empty).
//
// iflib counts a frame the driver failed on (em's EBADMSG) once more each
// time rxeof meets it again before the admin task's reset; check tolerates
// such recounts (at most one per EBADMSG the driver returned) and reports
// them in rxTotals.recounted. TestRxErrorCountedOnce shows it.
func (l *rxLedger) check(t testing.TB, r *simnictest.Rig, gen *simnic.Generator) rxTotals {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.NoError(t, l.bad)
	rt := rxTotals{sent: gen.Sent(), delivered: l.delivered, dev: r.NIC.Stats()}
	for q := 0; q < r.Ctx.NumRxQueues(); q++ {
		st, err := r.Ctx.RxQueueStats(q)
		require.NoError(t, err)
		rt.ipackets += st.IPackets
		rt.ierrors += st.IErrors
		rt.discards += st.Discards
		rt.stopDiscards += st.StopDiscards
		rt.iqdrops += st.IQDrops
		rt.filtered += st.Filtered
	}
	written := rt.dev.RxFrames + rt.dev.RxErrors + rt.dev.RxDMAFaults
	counted := rt.ipackets + rt.ierrors + rt.stopDiscards
	if counted > written {
		rt.recounted = counted - written
	}
	bad, resets := r.Driver.Stats().RxBadFrames, r.Ctx.Resets()
	// At the wire every frame the generator gave up on was refused once,
	// counted by the MAC (a lossless generator retries a frame the FIFO or
	// a link loss refused, so those counts may exceed its refusals).
	wire := rt.dev.RxLinkDown + rt.dev.RxFilteredAddr + rt.dev.RxFilteredVLAN + rt.dev.RxTooLong - rt.dev.RxNoRoom + rt.dev.RxMissed - rt.dev.RxFlushed
	require.False(t, !l.lossless && gen.Refused() != wire, "device: the generator had %d frames refused, the MAC counted %d (link down %d, filtered %d+%d, too long %d, FIFO full %d): %v", gen.Refused(), wire, rt.dev.RxLinkDown, rt.dev.RxFilteredAddr, rt.dev.RxFilteredVLAN, rt.dev.RxTooLong-rt.dev.RxNoRoom, rt.dev.RxMissed-rt.dev.RxFlushed, rt)
	require.False(t, l.lossless && gen.Refused() > wire, "device: the generator had %d frames refused, the MAC counted %d (link down %d, filtered %d+%d, too long %d, FIFO full %d): %v", gen.Refused(), wire, rt.dev.RxLinkDown, rt.dev.RxFilteredAddr, rt.dev.RxFilteredVLAN, rt.dev.RxTooLong-rt.dev.RxNoRoom, rt.dev.RxMissed-rt.dev.RxFlushed, rt)
	require.Equal(t, written+rt.dev.RxNoRoom+rt.dev.RxFlushed, rt.sent, "device: accepted ≠ written + dropped: %v", rt)
	require.GreaterOrEqual(t, counted, written, "written ≠ ipackets + ierrors + rx_stop_discards: %v", rt)
	require.False(t, r.NIC.Config().RxErrors == simnic.RxErrorsDiscard && counted != written, "written ≠ ipackets + ierrors + rx_stop_discards: %v", rt)
	require.LessOrEqual(t, rt.recounted, bad, "iflib counted %d frames more than the device wrote, with only %d bad frames returned (%d resets): %v", rt.recounted, bad, resets, rt)
	require.Equal(t, rt.delivered+rt.filtered+rt.iqdrops, rt.ipackets, "ipackets ≠ delivered + filtered + iqdrops: %v", rt)
	return rt
}
