package iflib

import "sync/atomic"

// Counters.
//
// Every counter iflib keeps is declared once, in the tables below (name,
// description, which struct field it fills). The sysctl tree, expvar,
// Context.Counter, TxQueueStats and RxQueueStats all read through these
// tables, so a new counter is one line here plus the places that count it.
//
// A queue's counters live in a published array of atomics that any
// goroutine may read at any time. The queue's consumer (the mp_ring drain,
// the txq lock holder, the RX task) does not pay a locked instruction per
// event: it accumulates into a plain array it owns and publishes the
// deltas once per pass (publish). Events that happen outside the consumer
// (a sender's drop in Transmit, a timer's watchdog) add to the published
// array directly.

// txCounter indexes a TX queue's counters.
type txCounter int

const (
	txOPackets         txCounter = iota // IFCOUNTER_OPACKETS
	txOBytes                            // IFCOUNTER_OBYTES
	txOMcasts                           // IFCOUNTER_OMCASTS
	txOQDrops                           // IFCOUNTER_OQDROPS
	txOErrors                           // IFCOUNTER_OERRORS
	txMbufDefrag                        // mbuf_defrag
	txMbufDefragFailed                  // mbuf_defrag_failed
	txNoDescAvail                       // no_desc_avail
	txMapFailed                         // tx_map_failed
	txEncapEFBIG                        // txd_encap_efbig
	txNoDMASetup                        // no_tx_dma_setup
	txPullups                           // m_pullups
	txCollapses                         // collapses
	txDoorbells                         // doorbells
	txReclaimed                         // reclaimed
	txTaskRuns                          // task_runs
	txDrainNotReady                     // txq_drain_notready
	txDrainNoDesc                       // txq_drain_nodesc
	txStopDiscards                      // stop_discards
	txWatchdogs                         // watchdog_timeouts
	txMissedIntrs                       // missed_intrs
	numTxCounters
)

// rxCounter indexes an RX queue's counters (its free lists included).
type rxCounter int

const (
	rxIPackets     rxCounter = iota // IFCOUNTER_IPACKETS
	rxIBytes                        // IFCOUNTER_IBYTES
	rxIQDrops                       // IFCOUNTER_IQDROPS
	rxIErrors                       // IFCOUNTER_IERRORS
	rxCopies                        // rx_copies
	rxFiltered                      // rx_filtered
	rxDiscards                      // rx_discards
	rxStopDiscards                  // rx_stop_discards
	rxUnavail                       // rx_unavail
	rxIfInput                       // rx_if_input
	rxdFlushes                      // rxd_flush
	rxResets                        // rx_resets
	rxWatchdogs                     // rx_watchdogs
	rxIntrEnables                   // rx_intr_enables
	rxTaskRuns                      // task_runs
	rxCtxInactive                   // rx_ctx_inactive
	rxHeld                          // rx_held
	rxMapLoads                      // map_loads
	rxBAReuses                      // ba_reuses
	rxAllocFails                    // alloc_fails
	rxLoadFails                     // load_fails
	numRxCounters
)

// counterDesc is one row of a counter table.
type counterDesc[S any] struct {
	name, desc string
	field      func(*S) *uint64 // the field of the typed stats struct
}

// TxQueueStats are one TX queue's counters, named as the sysctl leaves
// under dev.<driver>.<unit>.iflib.txqN.
type TxQueueStats struct {
	OPackets, OBytes, OMcasts uint64 // IFCOUNTER_OPACKETS/OBYTES/OMCASTS of this queue
	// OQDrops are packets dropped before reaching a descriptor: a full
	// mp_ring, no descriptors in simple mode, the interface down, a purge.
	OQDrops uint64
	// OErrors are packets dropped for an error: bad length, DMA mapping
	// failure, a driver encap error.
	OErrors          uint64
	MbufDefrag       uint64 // m_defrag calls (after EFBIG)
	MbufDefragFailed uint64 // m_defrag failures
	NoDescAvail      uint64 // encaps refused for lack of descriptors
	MapFailed        uint64 // DMA map failures (tx_map_failed)
	EncapEFBIG       uint64 // driver TxdEncap returned EFBIG
	NoTxDMASetup     uint64 // map failures other than EFBIG
	Pullups          uint64 // m_pullup calls for the header parser
	Collapses        uint64 // m_collapse attempts after EFBIG
	Doorbells        uint64 // isc_txd_flush calls
	Reclaimed        uint64 // packets freed by completion reclaim
	TaskRuns         uint64 // TX task passes
	DrainNotReady    uint64 // drains while not running or the link down
	DrainNoDesc      uint64 // drains that stalled for lack of descriptors
	// StopDiscards are packets freed by Stop while still on the descriptor
	// ring without a completion report (the device may or may not have
	// sent them).
	StopDiscards uint64
	// WatchdogTimeouts are hung-queue detections (iflib_timer's
	// "Watchdog timeout ... -- resetting").
	WatchdogTimeouts uint64
	// MissedIntrs are timer passes that found completions pending with no
	// progress: a lost TX interrupt, recovered by scheduling the task.
	MissedIntrs uint64
}

// RxQueueStats are one RX queue's counters, its free lists summed, named
// as the sysctl leaves under dev.<driver>.<unit>.iflib.rxqN.
type RxQueueStats struct {
	IPackets, IBytes uint64 // frames taken from the ring (IFCOUNTER_IPACKETS/IBYTES)
	// IQDrops are frames dropped for lack of a packet to copy into.
	IQDrops uint64
	// IErrors are bad frames: flagged by the device (Discard), zero
	// length, or a descriptor the driver could not describe (then the
	// interface is reset).
	IErrors  uint64
	Copies   uint64 // small frames copied (IFLIB_RX_COPY_THRESH path)
	Filtered uint64 // frames dropped by the early-drop filter
	// Discards are frames the device flagged as bad (RxdInfo.Discard),
	// recycled without delivery; also counted in IErrors.
	Discards uint64
	// StopDiscards are frames the device had written to host memory that
	// Stop found not yet taken by rxeof.
	StopDiscards uint64
	RxUnavail    uint64 // rxeof passes with nothing available
	IfInput      uint64 // if_input calls
	RxdFlush     uint64 // isc_rxd_flush calls
	Resets       uint64 // resets requested by this queue (IFC_DO_RESET)
	Watchdogs    uint64 // RX watchdog arms after a failed refill
	IntrEnables  uint64 // RX interrupt re-enables
	TaskRuns     uint64 // RX task passes
	CtxInactive  uint64 // rxeof passes cut short by Stop
	Held         uint64 // rxeof passes held back by InputReady (back-pressure)
	MapLoads     uint64 // bus_dmamap_load calls (new clusters)
	BAReuses     uint64 // buffers reposted by ifsd_ba without a load
	AllocFails   uint64 // cluster allocation failures
	LoadFails    uint64 // map load failures
}

var txCounterTable = [numTxCounters]counterDesc[TxQueueStats]{
	txOPackets:         {"opackets", "IFCOUNTER_OPACKETS of this queue", func(s *TxQueueStats) *uint64 { return &s.OPackets }},
	txOBytes:           {"obytes", "IFCOUNTER_OBYTES of this queue", func(s *TxQueueStats) *uint64 { return &s.OBytes }},
	txOMcasts:          {"omcasts", "IFCOUNTER_OMCASTS of this queue", func(s *TxQueueStats) *uint64 { return &s.OMcasts }},
	txOQDrops:          {"oqdrops", "IFCOUNTER_OQDROPS of this queue", func(s *TxQueueStats) *uint64 { return &s.OQDrops }},
	txOErrors:          {"oerrors", "IFCOUNTER_OERRORS of this queue", func(s *TxQueueStats) *uint64 { return &s.OErrors }},
	txMbufDefrag:       {"mbuf_defrag", "# of times m_defrag was called", func(s *TxQueueStats) *uint64 { return &s.MbufDefrag }},
	txMbufDefragFailed: {"mbuf_defrag_failed", "# of times m_defrag failed", func(s *TxQueueStats) *uint64 { return &s.MbufDefragFailed }},
	txNoDescAvail:      {"no_desc_avail", "# of times no descriptors were available", func(s *TxQueueStats) *uint64 { return &s.NoDescAvail }},
	txMapFailed:        {"tx_map_failed", "# of times DMA map failed", func(s *TxQueueStats) *uint64 { return &s.MapFailed }},
	txEncapEFBIG:       {"txd_encap_efbig", "# of times txd_encap returned EFBIG", func(s *TxQueueStats) *uint64 { return &s.EncapEFBIG }},
	txNoDMASetup:       {"no_tx_dma_setup", "# of times map failed for other than EFBIG", func(s *TxQueueStats) *uint64 { return &s.NoTxDMASetup }},
	txPullups:          {"m_pullups", "# of times m_pullup was called", func(s *TxQueueStats) *uint64 { return &s.Pullups }},
	txCollapses:        {"collapses", "m_collapse attempts after EFBIG", func(s *TxQueueStats) *uint64 { return &s.Collapses }},
	txDoorbells:        {"doorbells", "isc_txd_flush calls", func(s *TxQueueStats) *uint64 { return &s.Doorbells }},
	txReclaimed:        {"reclaimed", "packets freed by reclaim", func(s *TxQueueStats) *uint64 { return &s.Reclaimed }},
	txTaskRuns:         {"task_runs", "TX task passes", func(s *TxQueueStats) *uint64 { return &s.TaskRuns }},
	txDrainNotReady:    {"txq_drain_notready", "drains while not running or link down", func(s *TxQueueStats) *uint64 { return &s.DrainNotReady }},
	txDrainNoDesc:      {"txq_drain_nodesc", "drains stalled for lack of descriptors", func(s *TxQueueStats) *uint64 { return &s.DrainNoDesc }},
	txStopDiscards:     {"stop_discards", "packets freed by stop before a completion report", func(s *TxQueueStats) *uint64 { return &s.StopDiscards }},
	txWatchdogs:        {"watchdog_timeouts", "hung-queue detections that reset the interface", func(s *TxQueueStats) *uint64 { return &s.WatchdogTimeouts }},
	txMissedIntrs:      {"missed_intrs", "completions found by the timer with no interrupt", func(s *TxQueueStats) *uint64 { return &s.MissedIntrs }},
}

var rxCounterTable = [numRxCounters]counterDesc[RxQueueStats]{
	rxIPackets:     {"ipackets", "packets received", func(s *RxQueueStats) *uint64 { return &s.IPackets }},
	rxIBytes:       {"ibytes", "bytes received", func(s *RxQueueStats) *uint64 { return &s.IBytes }},
	rxIQDrops:      {"iqdrops", "packets dropped for lack of buffers", func(s *RxQueueStats) *uint64 { return &s.IQDrops }},
	rxIErrors:      {"ierrors", "bad frames and descriptors", func(s *RxQueueStats) *uint64 { return &s.IErrors }},
	rxCopies:       {"rx_copies", "small packets copied", func(s *RxQueueStats) *uint64 { return &s.Copies }},
	rxFiltered:     {"rx_filtered", "frames dropped by the early-drop filter", func(s *RxQueueStats) *uint64 { return &s.Filtered }},
	rxDiscards:     {"rx_discards", "frames the device flagged as bad, recycled", func(s *RxQueueStats) *uint64 { return &s.Discards }},
	rxStopDiscards: {"rx_stop_discards", "frames written by the device but not taken at stop", func(s *RxQueueStats) *uint64 { return &s.StopDiscards }},
	rxUnavail:      {"rx_unavail", "rxeof passes with nothing available", func(s *RxQueueStats) *uint64 { return &s.RxUnavail }},
	rxIfInput:      {"rx_if_input", "if_input calls", func(s *RxQueueStats) *uint64 { return &s.IfInput }},
	rxdFlushes:     {"rxd_flush", "isc_rxd_flush calls", func(s *RxQueueStats) *uint64 { return &s.RxdFlush }},
	rxResets:       {"rx_resets", "resets requested by this queue", func(s *RxQueueStats) *uint64 { return &s.Resets }},
	rxWatchdogs:    {"rx_watchdogs", "RX watchdog arms after a failed refill", func(s *RxQueueStats) *uint64 { return &s.Watchdogs }},
	rxIntrEnables:  {"rx_intr_enables", "RX interrupt enables", func(s *RxQueueStats) *uint64 { return &s.IntrEnables }},
	rxTaskRuns:     {"task_runs", "RX task passes", func(s *RxQueueStats) *uint64 { return &s.TaskRuns }},
	rxCtxInactive:  {"rx_ctx_inactive", "rxeof passes cut short by stop", func(s *RxQueueStats) *uint64 { return &s.CtxInactive }},
	rxHeld:         {"rx_held", "rxeof passes held back by InputReady (back-pressure)", func(s *RxQueueStats) *uint64 { return &s.Held }},
	rxMapLoads:     {"map_loads", "bus_dmamap_load calls", func(s *RxQueueStats) *uint64 { return &s.MapLoads }},
	rxBAReuses:     {"ba_reuses", "buffers reposted by ifsd_ba without a load", func(s *RxQueueStats) *uint64 { return &s.BAReuses }},
	rxAllocFails:   {"alloc_fails", "cluster allocation failures", func(s *RxQueueStats) *uint64 { return &s.AllocFails }},
	rxLoadFails:    {"load_fails", "map load failures", func(s *RxQueueStats) *uint64 { return &s.LoadFails }},
}

// counters is one queue's counter set: pub is what readers see; local is
// the consumer's plain accumulator, published by publish.
type counters[K ~int] struct {
	pub   []atomic.Uint64
	local []uint64
}

func newCounters[K ~int](n int) counters[K] {
	return counters[K]{pub: make([]atomic.Uint64, n), local: make([]uint64, n)}
}

// inc counts n events from the queue's consumer (no locked instruction).
func (c *counters[K]) inc(k K, n uint64) { c.local[k] += n }

// add counts n events from any goroutine.
func (c *counters[K]) add(k K, n uint64) { c.pub[k].Add(n) }

// publish makes the consumer's counts visible: one atomic add per counter
// that moved since the last publish.
// Preconditions: the caller is the queue's consumer.
func (c *counters[K]) publish() {
	for i, v := range c.local {
		if v != 0 {
			c.pub[i].Add(v)
			c.local[i] = 0
		}
	}
}

func (c *counters[K]) load(k K) uint64 { return c.pub[k].Load() }

// snapshot fills a typed stats struct from a queue's published counters
// through its table.
func snapshot[K ~int, S any](c *counters[K], table []counterDesc[S]) S {
	var s S
	for i := range table {
		*table[i].field(&s) = c.load(K(i))
	}
	return s
}

// TxQueueStats returns TX queue qid's counters. After Detach it returns the
// final values.
func (c *Context) TxQueueStats(qid int) (TxQueueStats, error) {
	if qid < 0 || qid >= len(c.txqs) {
		return TxQueueStats{}, errBadQueue(qid, len(c.txqs))
	}
	return snapshot(&c.txqs[qid].st, txCounterTable[:]), nil
}

// RxQueueStats returns RX queue qid's counters, its free lists summed.
// After Detach it returns the final values.
func (c *Context) RxQueueStats(qid int) (RxQueueStats, error) {
	if qid < 0 || qid >= len(c.rxqs) {
		return RxQueueStats{}, errBadQueue(qid, len(c.rxqs))
	}
	return snapshot(&c.rxqs[qid].st, rxCounterTable[:]), nil
}

// ifCounterSource says which queue counter feeds an interface counter.
var ifCounterSource = [...]struct {
	tx    txCounter
	rx    rxCounter
	hasTx bool
	hasRx bool
}{
	IfCounterIPackets: {rx: rxIPackets, hasRx: true},
	IfCounterIErrors:  {rx: rxIErrors, hasRx: true},
	IfCounterOPackets: {tx: txOPackets, hasTx: true},
	IfCounterOErrors:  {tx: txOErrors, hasTx: true},
	IfCounterIBytes:   {rx: rxIBytes, hasRx: true},
	IfCounterOBytes:   {tx: txOBytes, hasTx: true},
	IfCounterOMcasts:  {tx: txOMcasts, hasTx: true},
	IfCounterIQDrops:  {rx: rxIQDrops, hasRx: true},
	IfCounterOQDrops:  {tx: txOQDrops, hasTx: true},
}

// Counter is iflib_if_get_counter: the driver's IFDI_GET_COUNTER when it
// answers, else iflib's own sums over the queues. After Detach it returns
// the final values.
func (c *Context) Counter(ic IfCounter) uint64 {
	if g, ok := c.dev.(CounterGetter); ok {
		if v, ok := g.GetCounter(c, ic); ok {
			return v
		}
	}
	if ic < 0 || int(ic) >= len(ifCounterSource) {
		return 0
	}
	src := ifCounterSource[ic]
	var t uint64
	if src.hasTx {
		for _, q := range c.txqs {
			t += q.st.load(src.tx)
		}
		switch ic {
		case IfCounterOQDrops:
			t += c.noQueueDrops[0].Load()
		case IfCounterOErrors:
			t += c.noQueueDrops[1].Load()
		}
	}
	if src.hasRx {
		for _, q := range c.rxqs {
			t += q.st.load(src.rx)
		}
	}
	return t
}

// TxBacklog returns how much TX queue qid holds that the device has not
// completed: packets waiting in its software ring (mp_ring or buf_ring)
// plus descriptors in use. A forwarding path compares it with a limit in
// Attachment.InputReady to pass back-pressure to its receive side. Safe
// at any time; an out-of-range qid gives 0.
func (c *Context) TxBacklog(qid int) int {
	if qid < 0 || qid >= len(c.txqs) {
		return 0
	}
	q := c.txqs[qid]
	return int(q.inUseA.Load()) + q.path.backlog()
}
