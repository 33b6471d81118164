package iflib

import "github.com/goiflib/goiflib/busdma"

// Transmit is if_transmit: iflib_if_transmit (mpring mode),
// iflib_simple_transmit (simple mode) or the drbr transmit (simple_tx with
// buf_ring deferral).
//
// Ownership: the packet is iflib's from this call on, whatever the result,
// except for ErrNilPacket, ErrForeignPacket and ErrUseAfterFree (nothing
// was taken). nil means it was sent or queued. On any other error it has
// been freed and counted: ErrNotRunning, ErrLinkDown and ErrNoBufs in
// oqdrops; ErrEmptyPacket, ErrBadLength, ErrTooBig, ErrWrongSpace,
// ErrOffloadDisabled and ErrNoMem in oerrors. Never use a packet after passing it here: a failed
// Transmit has freed it, and the zone may already have handed the same
// pointer to someone else.
//
// Errors by mode, beyond the checks every mode makes first (nil, foreign,
// freed, not running, link down, empty, bad length, too big, wrong space,
// an offload not enabled):
//   - mpring: ErrNoBufs when the mp_ring is full. Mapping failures happen
//     later, in the drain: they are counted, not returned.
//   - simple: ErrNoBufs when the descriptors are exhausted; ErrNoMem when
//     the DMA mapping (or defrag) fails; a driver encap error.
//   - drbr: never drops for lack of space (the sender waits);
//     ErrNotRunning when Stop wakes a waiting sender; when the sender sends
//     its packet itself (the queue lock free), a mapping or driver encap
//     error as in simple mode. A deferred packet's failure is counted only.
func (c *Context) Transmit(m *Packet) error {
	if err := c.screen(m, "Transmit"); err != nil {
		return err
	}
	if !c.running.Load() {
		return c.dropTx(nil, m, ErrNotRunning)
	}
	// The queue choice runs before the sender enters the queue: a slow
	// driver selector holds nothing Stop must wait for.
	q := c.txqs[c.selectQueue(m)]
	if !q.enter() {
		return c.dropTx(q, m, ErrNotRunning)
	}
	defer q.leave()
	// Stop clears RUNNING before it closes the queues: a sender inside a
	// queue re-checks, so that Stop waits only for senders that saw it
	// running (iflib_if_transmit's IFF_DRV_RUNNING test).
	if !c.running.Load() {
		return c.dropTx(q, m, ErrNotRunning)
	}
	if c.link.Load() != int32(LinkStateUp) {
		return c.dropTx(q, m, ErrLinkDown)
	}
	if err := c.checkTx(m); err != nil {
		return c.rejectTx(q, m, err)
	}
	return q.path.send(m)
}

// TransmitBatch is Transmit for a batch, as a forwarding path passes on the
// batch its input callback received: the packets of each run bound for the
// same queue go into that queue with one mp_ring enqueue of the run
// (ifmp_ring_enqueue with n > 1), one drain and one doorbell decision; in
// simple mode a run is encapsulated under one hold of the queue lock with
// one doorbell. Order is kept within a queue. A packet that fails its
// checks ends the run before it.
//
// Each packet's outcome is Transmit's for it: accepted (sent or queued),
// or refused with an error, having been freed and counted (in oqdrops or
// oerrors, as Transmit documents), except that ErrNilPacket,
// ErrForeignPacket and ErrUseAfterFree take nothing (a foreign packet is
// counted in oerrors all the same). It returns how many were accepted and
// the error of the first packet (in pkts order) that was not; it does not
// say which: TransmitBatchErrs does. (In drbr mode a packet the driver's
// encap dropped inside this call is reported by its error but still
// counted among the accepted: bufring.DRBR.TransmitBurst does not say how
// many it dropped. TransmitBatchErrs is exact there too, through
// bufring.DRBR.TransmitBurstErrs.) Every entry of pkts is set to nil; the
// slice is not kept.
func (c *Context) TransmitBatch(pkts []*Packet) (int, error) {
	n, err := c.transmitBatch(pkts, nil)
	clear(pkts)
	return n, err
}

// TransmitBatchErrs is TransmitBatch reporting each packet's outcome:
// errs[i] is nil when pkts[i] was accepted (sent or queued), else the
// error Transmit would have returned for it. Ownership after the call,
// per packet: iflib's when errs[i] is nil or any error but ErrNilPacket,
// ErrForeignPacket and ErrUseAfterFree (a refused packet has already been
// freed and counted), and then pkts[i] is set to nil; with those three
// errors iflib took nothing and pkts[i] is left as it was. So after the
// call the non-nil entries of pkts are exactly the packets iflib did not
// take.
//
// errs must be at least as long as pkts: only pkts[:len(errs)] are
// transmitted, and the packets beyond are left untouched in pkts, still
// the caller's. It returns how many were accepted, and allocates nothing.
//
// Accepted means what it means for Transmit: in mpring mode a packet is
// accepted once it is in the mp_ring, and a later failure of its mapping
// in the drain is counted, not reported; in drbr mode a deferred packet's
// later failure likewise. In drbr mode a run is one send-or-defer decision
// (bufring.DRBR.TransmitBurstErrs), as in TransmitBatch, and a packet the
// driver's encap dropped during the call is reported at its index.
func (c *Context) TransmitBatchErrs(pkts []*Packet, errs []error) int {
	if len(errs) < len(pkts) {
		pkts = pkts[:len(errs)]
	}
	errs = errs[:len(pkts)]
	n, _ := c.transmitBatch(pkts, errs)
	return n
}

// transmitBatch screens each packet of pkts, chooses its queue, and sends
// each run of consecutive packets bound for one queue as it ends. errs is
// nil or as long as pkts: each packet's outcome is stored there. Entries
// of pkts that iflib took are set to nil. It returns how many were
// accepted and the first error in pkts order.
func (c *Context) transmitBatch(pkts []*Packet, errs []error) (int, error) {
	sent := 0
	var first error
	fail := func(i int, err error) {
		if errs != nil {
			errs[i] = err
		}
		if first == nil {
			first = err
		}
	}
	runStart := 0
	var runQ *txq
	flush := func(end int) {
		if runQ == nil {
			return
		}
		var runErrs []error
		if errs != nil {
			runErrs = errs[runStart:end]
		}
		n, err := c.sendRun(runQ, pkts[runStart:end], runErrs)
		sent += n
		if err != nil && first == nil {
			first = err
		}
		clear(pkts[runStart:end]) // every packet of a run is iflib's
		runQ = nil
	}
	for i, m := range pkts {
		if errs != nil {
			errs[i] = nil
		}
		if err := c.screen(m, "TransmitBatch"); err != nil {
			flush(i)
			fail(i, err) // nothing taken: the entry stays
			continue
		}
		if !c.running.Load() {
			flush(i)
			fail(i, c.dropTx(nil, m, ErrNotRunning))
			pkts[i] = nil
			continue
		}
		q := c.txqs[c.selectQueue(m)]
		if err := c.checkTx(m); err != nil {
			flush(i)
			err = c.rejectTx(q, m, err)
			fail(i, err)
			if !kept(err) {
				pkts[i] = nil
			}
			continue
		}
		if q != runQ {
			flush(i)
			runQ, runStart = q, i
		}
	}
	flush(len(pkts))
	return sent, first
}

// kept reports whether a transmit error left the packet with its caller.
func kept(err error) bool {
	return err == ErrNilPacket || err == ErrForeignPacket || err == ErrUseAfterFree
}

// sendRun sends a run of checked packets bound for q, as Transmit does
// from the queue's entry on. errs is nil or as long as run: the error of
// each packet refused is stored there (the others' entries are left).
func (c *Context) sendRun(q *txq, run []*Packet, errs []error) (int, error) {
	var down error
	switch {
	case !q.enter():
		return 0, c.dropRun(q, run, errs, ErrNotRunning)
	case !c.running.Load():
		down = ErrNotRunning
	case c.link.Load() != int32(LinkStateUp):
		down = ErrLinkDown
	}
	defer q.leave()
	if down != nil {
		return 0, c.dropRun(q, run, errs, down)
	}
	return q.path.sendBatch(run, errs)
}

// dropRun drops every packet of run with err (stored in errs if not nil).
func (c *Context) dropRun(q *txq, run []*Packet, errs []error, err error) error {
	for i, m := range run {
		c.dropTx(q, m, err)
		if errs != nil {
			errs[i] = err
		}
	}
	return err
}

// screen refuses what iflib cannot take ownership of: a nil packet, one no
// zone handed out (counted in oerrors of queue 0), or a freed one
// (reported as used after free at use). The caller keeps such a packet.
func (c *Context) screen(m *Packet, use string) error {
	switch {
	case m == nil:
		return ErrNilPacket
	case m.zone == nil:
		if len(c.txqs) > 0 {
			c.txqs[0].st.add(txOErrors, 1)
		}
		return ErrForeignPacket
	case m.free.Load():
		c.usedAfterFree(m, use)
		return ErrUseAfterFree
	}
	return nil
}

// usedAfterFree reports a freed packet passed to a transmit call: to the
// zone's debug reporter, and to the device's busdma checker when it has
// one (the report names where the packet was freed if the zone records it,
// Zone.SetDebug, and where it was used again).
func (c *Context) usedAfterFree(p *Packet, use string) {
	msg := p.zone.usedAfterFree(p, use)
	if chk := c.bus.Checker(); chk != nil {
		chk.Add(busdma.Report{Kind: busdma.KindClient, Device: c.bus.Name(), Site: callerSite(), Msg: msg})
	}
}

// rejectTx is dropTx for checkTx's verdicts: a foreign or freed buffer in
// the chain means nothing was taken.
func (c *Context) rejectTx(q *txq, m *Packet, err error) error {
	if err == ErrUseAfterFree || err == ErrForeignPacket {
		return err
	}
	return c.dropTx(q, m, err)
}

// MaxChainBufs bounds the buffers of one packet Transmit accepts: more
// than a 64 KB TSO packet of single-byte buffers could need. A longer
// chain, or a cyclic one (which would make every walk of it endless), is
// ErrBadLength.
const MaxChainBufs = 1 << 16

// checkTx validates a packet before it is queued: one walk of the chain
// checks every buffer is live and from a zone of the device's space, and
// sums the lengths (m_pkthdr.len must equal the sum of m_len; 0 means "fill
// it in").
func (c *Context) checkTx(m *Packet) error {
	n, bufs := 0, 0
	for p := m; p != nil; p = p.Next {
		if bufs++; bufs > MaxChainBufs {
			return ErrBadLength // a cyclic chain (a.Next = b, b.Next = a), or absurdly long
		}
		switch {
		case p.zone == nil:
			return ErrForeignPacket
		case p != m && p.free.Load():
			c.usedAfterFree(p, "Transmit (a buffer of the chain)")
			return ErrUseAfterFree
		case p.zone.space != c.space:
			return ErrWrongSpace
		}
		n += p.n
	}
	if m.Hdr.Len == 0 {
		m.Hdr.Len = n
	}
	switch {
	case n == 0:
		return ErrEmptyPacket
	case m.Hdr.Len != n:
		return ErrBadLength
	case n > c.txMaxLen(m):
		return ErrTooBig
	case m.Hdr.CsumFlags&csumOffloadTx&^CsumFlags(c.ctl.hwassist.Load()) != 0:
		return ErrOffloadDisabled
	case m.Hdr.Flags&MVLANTag != 0 && Capabilities(c.ctl.capEnable.Load())&CapVLANHWTagging == 0:
		return ErrOffloadDisabled
	}
	return nil
}

// dropTx frees and counts a packet Transmit will not send: ENETDOWN and
// ENOBUFS as oqdrops, everything else as oerrors. q nil means queue 0;
// before the context has queues (Transmit from an IFDI method during
// Register) the context's own count. FreeBSD frees an ENETDOWN refusal
// without counting it (iflib_if_transmit); goiflib counts every packet it
// does not send (docs/freebsd.md).
func (c *Context) dropTx(q *txq, m *Packet, err error) error {
	if q == nil && len(c.txqs) > 0 {
		q = c.txqs[0]
	}
	drop := err == ErrNotRunning || err == ErrLinkDown || err == ErrNoBufs
	switch {
	case q != nil && drop:
		q.st.add(txOQDrops, 1)
	case q != nil:
		q.st.add(txOErrors, 1)
	case drop:
		c.noQueueDrops[0].Add(1)
	default:
		c.noQueueDrops[1].Add(1)
	}
	m.Free()
	return err
}

// txMaxLen is the maxsize of the tag the packet will be loaded on.
func (c *Context) txMaxLen(m *Packet) int {
	if m.Hdr.CsumFlags&CsumTSO != 0 && c.shared.TSOMaxSize > 0 {
		return c.shared.TSOMaxSize
	}
	return c.shared.TxMaxSize
}

// selectQueue is the queue choice. mpring mode (iflib_if_transmit): the
// driver's selector (ift_txq_select; an out-of-range answer means queue
// 0), else QIDX for a hashed packet when there are several queues, else
// queue 0. simple and drbr modes (iflib_simple_select_queue): QIDX for a
// hashed packet on several queues, else the last queue; the driver's
// selector is not asked (setupTxSelect).
func (c *Context) selectQueue(m *Packet) int {
	n := len(c.txqs)
	if c.txqSelect != nil {
		if q := c.txqSelect(m); q >= 0 && q < n {
			return q
		}
		return 0
	}
	if n > 1 && m.Hdr.HashType != HashNone {
		// QIDX: ((flowid & isc_rss_table_mask) % NTXQSETS) + FIRST_QSET
		return int(m.Hdr.FlowID&uint32(c.sc.RSSTableSize-1)) % n
	}
	return c.unhashedQueue
}

// setupTxSelect applies the mode's queue choice once the TX queues exist
// (Register): a mode that does not ask the driver's selector forgets it,
// and sends unhashed packets to the last queue.
func (c *Context) setupTxSelect() {
	if !pathFor(c.cfg.TxMode).driverSelect() {
		c.txqSelect = nil
		c.unhashedQueue = len(c.txqs) - 1
	}
}

// A transmit mode (Config.TxMode) is a strategy in two parts: txMode, what
// the mode is to the whole context, and txPath, one TX queue's software
// side. The mode-independent parts stay outside: Transmit and
// TransmitBatch screen and check each packet and admit the sender to its
// queue (hold.go) before the path sees it; the descriptor ring (txq.go:
// encap, the doorbell, reclaim, iflib_txsd_free) is shared by every mode,
// and each mode only decides who its consumer is. Each mode lives in its
// own file: tx_mpring.go, tx_simple.go, tx_drbr.go. A fourth mode is one
// new file implementing both interfaces plus one case in pathFor (and its
// exported TxMode constant in config.go).

// txMode is a transmit mode to the whole context.
type txMode interface {
	// newPath builds queue q's side of the mode (iflib_queues_alloc's
	// software ring allocation), at Register.
	newPath(q *txq) (txPath, error)
	// driverSelect reports whether the queue choice asks the driver's
	// selector (ift_txq_select).
	driverSelect() bool
	// sysctl adds the mode's entries to the context's iflib node.
	sysctl(ifl *Node, cfg *Config)
}

// txPath is one TX queue in its transmit mode. The queue's descriptor
// ring belongs to the path's consumer (the txq invariants); every method
// that touches it runs there.
type txPath interface {
	// send is if_transmit for one checked packet, from a sender inside
	// the queue (q.enter): nil when sent or queued, else the packet was
	// freed and counted (dropTx, or encap's own count).
	send(m *Packet) error
	// sendBatch is send for a run of checked packets bound for the queue;
	// it returns how many were accepted and the first error. errs is nil
	// or as long as ms: the error of each packet refused is stored at its
	// index (the entries of accepted packets are left as they are).
	sendBatch(ms []*Packet, errs []error) (int, error)
	// task is one run of the queue's TX task (_task_fn_tx): become the
	// consumer, reclaim (completedReclaim, which carries the timer's idle
	// reclaim) and ring what is pending, or arrange to look again soon;
	// never wait for a sender.
	task()
	// start opens the mode to senders again (Init), before the queue's
	// hold opens.
	start()
	// stop closes the mode (Stop), after the queue's hold closed: senders
	// waiting inside the mode wake and fail with ErrNotRunning.
	stop()
	// purge frees what the software ring still holds, each counted as an
	// oqdrop (the queue's teardown: no sender inside, the task stopped).
	purge()
	// backlog is the packets waiting in the software ring (TxBacklog, the
	// watchdog's offered work). Safe at any time.
	backlog() int
	// restart restarts a software ring that stalled (the admin pass after
	// the link came up, iflib_txq_check_drain); the pass then kicks the
	// task.
	restart()
	// sysctl adds the mode's per-queue entries to the queue's node.
	sysctl(n *Node)
}

// pathFor is the mode Config.TxMode names (validated at Register).
func pathFor(m TxMode) txMode {
	switch m {
	case TxModeSimple:
		return simpleMode{}
	case TxModeDRBR:
		return drbrMode{}
	}
	return mpringMode{}
}
