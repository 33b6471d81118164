package iflib

import (
	"errors"
	"runtime"

	"github.com/goiflib/goiflib/bufring"
)

// The drbr transmit mode (TxModeDRBR): simple_tx with buf_ring deferral,
// on bufring.DRBR. A sender that finds the queue free sends itself; one
// that finds it busy defers its packet into the queue's buf_ring (up to
// simple_max_producers at once; the others wait for the lock), and the
// lock holder drains what was deferred, simple_drain_quota at a time. It
// never drops for lack of room: a sender waits. DRBR's lock is ift_mtx
// here: xmit, the doorbell and the TX task's reclaim all run under it, so
// the holder of that lock owns the descriptor ring.

// drbrMode is TxModeDRBR to the whole context.
type drbrMode struct{}

func (drbrMode) newPath(q *txq) (txPath, error) {
	p := &drbrPath{q: q}
	cfg := &q.ctx.cfg
	br, err := bufring.NewDRBRWith(bufring.DRBRConfig[*Packet]{
		Size:         cfg.DRBRSize,
		MaxProducers: cfg.DRBRMaxProducers,
		DrainQuota:   cfg.DRBRDrainQuota,
		Xmit:         p.xmit,
		Doorbell:     p.doorbell,
		CanRestart:   q.canRestart,
	})
	if err != nil {
		return nil, err
	}
	p.br = br
	return p, nil
}

// driverSelect: iflib_simple_select_queue does not ask the driver.
func (drbrMode) driverSelect() bool { return false }

// sysctl adds FreeBSD's net.iflib.simple_* knobs of the deferred
// simple_tx (read-only here: Config sets them).
func (drbrMode) sysctl(ifl *Node, cfg *Config) {
	ifl.leaf("simple_max_producers", "senders that may defer into the buf_ring", func() any { return cfg.DRBRMaxProducers })
	ifl.leaf("simple_drain_quota", "packets per TX task drain of the buf_ring", func() any { return cfg.DRBRDrainQuota })
	ifl.leaf("simple_txbr_size", "buf_ring size", func() any { return cfg.DRBRSize })
}

// drbrPath is one queue's DRBR.
type drbrPath struct {
	q  *txq
	br *bufring.DRBR[*Packet]
}

func (p *drbrPath) send(m *Packet) error {
	// DRBR.Transmit never drops for lack of room: it sends, defers, or
	// waits for room. It fails when Stop closed the queue (the packet is
	// still ours) or when xmit dropped the packet in this very call (freed
	// and counted by encap), which is reported as simple mode reports it.
	err := p.br.Transmit(m)
	if err != nil && errors.Is(err, bufring.ErrClosed) {
		return p.q.ctx.dropTx(p.q, m, ErrNotRunning)
	}
	p.yieldIfStalled()
	return err
}

// yieldIfStalled lets the device and the TX task run when this sender
// leaves the queue stalled (its packet, or the one it deferred, waits for
// descriptors): they come back only when the device's completion and the
// TX task's Restart get a CPU. A sender that went on building packets
// meanwhile would fill the buf_ring with packets that go cache-cold before
// they are sent: at GOMAXPROCS 1 about half of all packets went through
// the buf_ring, a ringful per stall (sysctl br_deferred against
// br_stalls), where simple_tx's sender drops one packet and yields. With
// the yield a stall defers about one packet per sender, and drbr's CPU per
// packet at GOMAXPROCS 1, against simple_tx's in the same run, went from
// 0.99–1.13× (median of 5 runs at each of 1 to 64 senders) to 0.97–1.03×;
// at GOMAXPROCS 2 it stayed 0.53–0.72× (0.54–0.72× with the yield), and
// Gb/s against mp_ring's stayed 1.4–2.9× (builds without and with the
// yield alternating, a shared 2-CPU machine at load 6–14; issue 24):
//
//	go test -run '^$' -bench '^BenchmarkDRBRRounds$' -benchtime 200000x -cpu 1,2 -count 5 ./examples/seedbench/
//
// Not FreeBSD's (its sender returns at once; docs/freebsd.md). A yield is
// not a drop: the packet is deferred, and a sender still blocks only for
// the lock or for ring space, as bufring.DRBR documents. It runs outside
// DRBR's lock.
func (p *drbrPath) yieldIfStalled() {
	if p.br.Stalled() {
		runtime.Gosched()
	}
}

func (p *drbrPath) sendBatch(ms []*Packet, errs []error) (int, error) {
	var n int
	var err error
	if errs != nil {
		// errs[i]: the drop of ms[i] by encap inside this call, or (for
		// ms[n:]) the close error.
		n, err = p.br.TransmitBurstErrs(ms, errs)
	} else {
		n, err = p.br.TransmitBurst(ms)
	}
	if err != nil && errors.Is(err, bufring.ErrClosed) {
		for i, m := range ms[n:] {
			p.q.ctx.dropTx(p.q, m, ErrNotRunning)
			if errs != nil {
				errs[n+i] = ErrNotRunning
			}
		}
		if errs == nil {
			return n, ErrNotRunning
		}
	}
	p.yieldIfStalled()
	if errs == nil {
		return n, err
	}
	// Exact: an item encap dropped is not accepted.
	sent := 0
	var first error
	for _, e := range errs {
		if e == nil {
			sent++
		} else if first == nil {
			first = e
		}
	}
	return sent, first
}

func (p *drbrPath) task() {
	// As in simple mode, the task never waits for a sender holding the
	// lock.
	q := p.q
	if !p.br.TryDo(func() {
		q.completedReclaim()
		q.dbCheck(true)
		q.publish()
	}) {
		q.retrySoon()
	}
	// Descriptors may have come back: restart a stalled queue. Re-run only
	// while the quota ran out with items left; a queue stalled again waits
	// for the next completion interrupt or timer tick instead of spinning.
	if _, more, _ := p.br.Restart(); more {
		q.kick()
	}
}

// start opens the buf_ring again (Init).
func (p *drbrPath) start() { p.br.Reopen() }

// stop closes the buf_ring (Stop), which wakes every sender blocked for
// ring space or for the lock; their Transmit frees and counts the packet
// and returns ErrNotRunning.
func (p *drbrPath) stop() { p.br.Close(ErrNotRunning) }

// purge is drbr_flush: free what is still deferred, each an oqdrop.
func (p *drbrPath) purge() {
	n := p.br.Flush(func(m *Packet) { m.Free() })
	p.q.st.add(txOQDrops, uint64(n))
}

// backlog is the packets deferred in the buf_ring.
func (p *drbrPath) backlog() int { return p.br.Pending() }

// restart: the TX task's DRBR.Restart restarts a stalled queue (the admin
// pass kicks it).
func (p *drbrPath) restart() {}

func (p *drbrPath) sysctl(n *Node) {
	d := p.br
	for _, l := range []struct {
		name, desc string
		get        func(bufring.DRBRStats) uint64
	}{
		{"br_direct", "sent in the sender's own call", func(s bufring.DRBRStats) uint64 { return s.Direct }},
		{"br_deferred", "deferred into the buf_ring", func(s bufring.DRBRStats) uint64 { return s.Deferred }},
		{"br_drained", "deferred packets sent later", func(s bufring.DRBRStats) uint64 { return s.Drained }},
		{"br_flushed", "deferred packets freed by stop", func(s bufring.DRBRStats) uint64 { return s.Flushed }},
		{"br_returned", "packets of senders woken by stop", func(s bufring.DRBRStats) uint64 { return s.Returned }},
		{"br_lock_waits", "senders that waited for the lock", func(s bufring.DRBRStats) uint64 { return s.LockWaits }},
		{"br_full_waits", "senders that waited for buf_ring space", func(s bufring.DRBRStats) uint64 { return s.FullWaits }},
		{"br_refused", "transmits refused for lack of descriptors", func(s bufring.DRBRStats) uint64 { return s.Refused }},
		{"br_stalls", "times the queue stalled until descriptors came back", func(s bufring.DRBRStats) uint64 { return s.Stalls }},
		{"br_doorbells", "doorbells rung, one per run of sends", func(s bufring.DRBRStats) uint64 { return s.Doorbells }},
	} {
		n.leaf(l.name, l.desc+" (goiflib drbr)", func() any { return l.get(d.Stats()) })
	}
	n.leaf("br_pending", "packets deferred in the buf_ring now (goiflib drbr)", func() any { return d.Pending() })
	n.leaf("br_stalled", "the buf_ring head waits for descriptors (goiflib drbr)", func() any { return d.Stalled() })
}

// xmit is the DRBR transmit callback, called with the DRBR lock held:
// opportunistic reclaim, then encap. It refuses (bufring.ErrRefused) while
// a worst-case packet might not fit, or while the interface is not running
// or the link is down; the packet then stays at the head of the buf_ring
// and the queue is stalled until the TX task's Restart (or a sender's
// can_drain probe). Because it encaps only with TXQ_AVAIL >= MAX_TX_DESC
// (the mp_ring drain's guard), encap never runs out of descriptors here,
// and a refused head costs no failed mapping. A packet encap dropped
// (freed and counted) is reported with encap's error. The doorbell is
// rung once per run, by doorbell.
func (p *drbrPath) xmit(mp **Packet) error {
	q := p.q
	c := q.ctx
	if !c.running.Load() || c.link.Load() != int32(LinkStateUp) {
		q.st.inc(txDrainNotReady, 1)
		q.publish() // a refusal stalls the queue: no doorbell hook will follow
		return bufring.ErrRefused
	}
	if q.avail() < 2*q.maxTxDesc() {
		q.completedReclaim()
	}
	if q.avail() < q.maxTxDesc() {
		// The ring is nearly full: make what this run encapsulated visible
		// to the device before stalling (iflib_txd_db_check rings when
		// TXQ_AVAIL is low), or nothing would complete to restart it.
		q.dbCheck(true)
		q.st.inc(txDrainNoDesc, 1)
		q.publish()
		return bufring.ErrRefused
	}
	switch err := q.encap(mp); err {
	case nil:
		return nil
	case errNoDesc:
		return bufring.ErrRefused // *mp may be a replacement: it stays queued
	default:
		return err
	}
}

// doorbell is DRBR's once-per-run hook: ring the doorbell for the run
// (iflib_txd_db_check) and publish the counters.
func (p *drbrPath) doorbell() {
	p.q.dbCheck(true)
	p.q.publish()
}
