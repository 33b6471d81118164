package iflib

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/cpumap"
)

// Attachment is what a driver passes to Register: the arguments of
// iflib_device_register plus the stack's side of the ifnet.
type Attachment struct {
	Driver Device         // the IFDI methods
	Shared *SharedCtx     // DEVICE_REGISTER's if_shared_ctx
	Bus    *busdma.Device // the bus device; its root tag is bus_get_dma_tag(dev); the RX zones come from its space
	Config Config         // iflib's tunables
	// Input is if_input: it receives each RX batch (or each packet with
	// Config.RxPerPacket or Config.RxPerPacketInput) on the RX queue's task,
	// with the context that received it (ic, as FreeBSD's if_input(ifp, m)
	// receives the ifnet: one callback may serve several contexts, and an
	// adapter needs no second step after Register to learn its own). The
	// packets are the callee's: it must free or transmit each. The slice is
	// reused after the call returns. A nil Input frees every received
	// packet (counted as delivered). Input may call Transmit (on ic or any
	// other context); a Stop or Detach from Input is handed to the admin
	// task (ErrDeferred). Input must not block: Stop waits for the RX task
	// to come back from it (StopTimeout bounds only the wait for
	// transmits), so an Input that sleeps delays Stop by as long. Input is
	// called only after Init (so never before Register has returned ic).
	Input func(ic *Context, qid int, pkts []*Packet)
	// InputReady (optional; goiflib) is asked before each rxeof pass of RX
	// queue qid: false holds the queue back, leaving the frames in the
	// ring (the device drops what it cannot hold and counts it) and
	// looking again shortly, instead of receiving frames the consumer
	// would drop. A forwarding path passes back-pressure this way, e.g.
	// func(int) bool { return out.TxBacklog(0) < limit }. It runs on the
	// RX task and must be cheap.
	InputReady func(qid int) bool
	// TxQueueSelect is ift_txq_select (optional, mpring mode): return the
	// TX queue of a packet; an out-of-range answer means queue 0. It runs
	// in the sender's Transmit call, before the sender enters the queue (so
	// a slow selector never holds up Stop), and must not call lifecycle
	// methods. simple and drbr modes do not ask it
	// (iflib_simple_select_queue).
	TxQueueSelect func(m *Packet) int
	// RxFilter is the early-drop hook (pfil_mem_in on the raw cluster,
	// PFIL_HOOKED_IN): it sees each received frame, whole, before a packet
	// is built, and returns true to drop it. A frame in one buffer is passed
	// in place; a frame that spans several buffers is copied into one
	// slice first (FreeBSD hands pfil only one cluster per call). A dropped
	// frame's clusters stay mapped in their slots and are reposted without
	// a reload. It runs on the RX task and must not keep the slice.
	RxFilter func(qid int, frame []byte) bool
	// CPUs is the placement registry (nil: cpumap.DefaultAllocator, shared by
	// every context of the process, like FreeBSD's cpu_offsets).
	CPUs *cpumap.Allocator
}

// ctxState is the lifecycle state (FreeBSD's IFC_INIT_DONE, IFF_DRV_RUNNING
// and IFC_IN_DETACH flags as one value).
type ctxState int32

const (
	stateRegistering ctxState = iota // Register has not returned (the zero value)
	stateAttached                    // registered, not running (also: stopped)
	stateRunning                     // Init done, tasks running
	stateDetaching                   // Detach has begun (IFC_IN_DETACH)
	stateDetached                    // Detach finished
)

// Context is struct iflib_ctx: one attached device.
//
// Lifecycle: Register (attached) → Init (running) ⇄ Stop (attached) →
// Detach (detaching → detached). Every method may be called from any
// goroutine at any time; what each does in each state:
//
//   - During Register (from an IFDI method): Init ErrRegistering, Stop nil,
//     Detach ErrDeferred (Register fails with ErrDetached).
//   - Init: attached → running; running: nil; after Detach began:
//     ErrDetached; ErrBusy while a transmit from before the last Stop still
//     holds a TX queue after StopTimeout.
//   - Stop: running → attached, bounded in time (Config.StopTimeout);
//     attached: nil; after Detach began: ErrDetached. A TX queue a sender
//     still holds is torn down when the sender leaves.
//   - Detach: stops if running, then frees everything and calls
//     IFDI_DETACH; a second Detach (concurrent or later) gets ErrDetached.
//     It returns a *LeakError when packets are still out of iflib's zones
//     (held by the stack) or maps are still loaded.
//   - Stop or Detach called from the context's own goroutines (the input
//     callback, RxFilter, TxRx and IFDI methods) are handed to the admin
//     task and return ErrDeferred.
//   - Transmit: while running with the link up it sends or queues; else
//     the packet is freed and counted (ErrNotRunning, ErrLinkDown; after
//     Detach ErrNotRunning too). It may run concurrently with everything.
//   - Counter, TxQueueStats, RxQueueStats, Sysctl, SysctlValue and expvar
//     may run concurrently with everything and keep returning the final
//     values after Detach.
//   - TxIntr, RxIntr, AdminIntr and LinkStateChange may be called at any
//     time; they do nothing harmful after Stop or Detach.
//
// The lifecycle methods serialize on mu (CTX_LOCK). Transmit and the
// queue tasks run concurrently with each other and are fenced off by
// running and each TX queue's admission word during Stop (hold.go).
type Context struct {
	mu        sync.Mutex    // CTX_LOCK: lifecycle
	lockOwner atomic.Uint64 // goroutine id of mu's holder (0: none)
	state     atomic.Int32  // ctxState; written with mu held

	name      string // <driver><unit>
	expvarKey string // the key under expvar "iflib" (set by Register)
	dev       Device
	shared    SharedCtx
	sc        SoftcCtx
	cfg       Config
	txrx      TxRx
	bus       *busdma.Device
	space     busdma.Space
	input     func(ic *Context, qid int, pkts []*Packet)
	// inputReady is Attachment.InputReady.
	inputReady func(qid int) bool

	txqSelect     func(m *Packet) int
	unhashedQueue int // the TX queue of packets without a hash (set at Register)
	rxFilter      func(qid int, frame []byte) bool
	alloc         *cpumap.Allocator

	admin    adminTask
	own      goroutineSet  // the tasks', the timer's and the admin task's goroutines
	detached chan struct{} // closed when Detach finishes

	running atomic.Bool  // IFF_DRV_RUNNING
	link    atomic.Int32 // ifc_link_state
	// linkChangeMu orders concurrent LinkStateChange calls, so that the
	// events subscribers see end in the state the context holds.
	linkChangeMu sync.Mutex
	baudrate     atomic.Uint64
	// pauseFrames is isc_pause_frames: set by the driver (ReportPauseFrames),
	// read and cleared by the timer each period.
	pauseFrames atomic.Uint64
	// teardowns are the TX queue teardowns Stop owes (see hold.go).
	teardowns teardownSet
	// pendingInit is a control call's init handed to the admin task
	// (restartLocked); Stop and Detach cancel it.
	pendingInit atomic.Bool
	// regDetach is a Detach called from an IFDI method during Register
	// (the registering goroutine only).
	regDetach bool
	// noQueueDrops count packets Transmit refused before the context had
	// queues (from an IFDI method during Register): [0] oqdrops, [1] oerrors.
	noQueueDrops [2]atomic.Uint64
	// timerMu fences IFDI_TIMER off from the admin task's IFDI calls, as
	// _task_fn_admin stops the ift_timer callouts around them.
	timerMu sync.Mutex

	// The queue tables are written by Register only; they stay (with their
	// final counters) after Detach, so readers never race with teardown.
	txqs    []*txq
	rxqs    []*rxq
	txRings []RingMem
	rxRings []RingMem

	placement *placement
	tasks     sync.WaitGroup
	stopCh    chan struct{} // closed by Stop: the tasks and the timer end
	sysctl    atomic.Pointer[Node]

	qIntr QueueIntrEnabler // nil: whole-device IntrEnable

	// ctl is the configuration the control calls set (ctl.go).
	ctl ctlState
}

// Register is iflib_device_register: validate the shared context, resolve
// the tunables, call AttachPre, validate and clamp the softc context,
// create the tags, allocate the descriptor rings and software state of
// every queue, hand the rings to the driver, IFDI_TXQ_SETUP/IFDI_RXQ_SETUP
// (iflib_qset_structures_setup) and AttachPost. Every parameter problem is
// a *ConfigError (errors.Is ErrConfig) naming the field; the other errors
// are an IFDI method's error (an *IFDIError), ErrDetached (the driver called
// Detach from one of those methods), and a busdma error when the address
// space cannot provide the memory (busdma.ErrNoMem and its kin, wrapped).
// On any error, everything done so far is undone in reverse order (iflib
// structures, IFDI_DETACH, IFDI_QUEUES_FREE), and nothing stays allocated
// or loaded.
//
// Two live contexts may share a name <DriverName><Unit> (test rigs build
// several machines in one process); each gets its own expvar key
// (ExpvarKey), so neither hides the other's counters.
//
// Register holds the context lock (CTX_LOCK) while it calls the IFDI
// methods, as FreeBSD does, so that a method may call back: Init returns
// ErrRegistering, Stop nil (nothing runs), Detach ErrDeferred (Register
// then fails with ErrDetached), and the counters and the sysctl tree
// answer with what exists so far.
func Register(a Attachment) (*Context, error) {
	if a.Driver == nil {
		return nil, cfgErr("Driver", nil, "nil")
	}
	if a.Bus == nil {
		return nil, cfgErr("Bus", nil, "a busdma device is required")
	}
	if a.Shared == nil {
		return nil, cfgErr("SharedCtx", nil, "nil")
	}
	if a.Config.Unit < 0 {
		return nil, cfgErr("Unit", a.Config.Unit, "must not be negative")
	}
	c := &Context{
		dev:        a.Driver,
		shared:     *a.Shared,
		cfg:        a.Config,
		bus:        a.Bus,
		space:      a.Bus.Space(),
		input:      a.Input,
		inputReady: a.InputReady,
		txqSelect:  a.TxQueueSelect,
		rxFilter:   a.RxFilter,
		alloc:      a.CPUs,
		name:       fmt.Sprintf("%s%d", a.Shared.DriverName, a.Config.Unit),
		detached:   make(chan struct{}),
	}
	c.link.Store(int32(LinkStateDown))
	if err := resolveShared(&c.shared); err != nil {
		return nil, err
	}
	if err := resetQValues(&c.shared, &c.cfg, &c.sc); err != nil {
		return nil, err
	}
	c.lock()
	defer c.unlock()
	var undo []func()
	fail := func(err error) (*Context, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		c.state.Store(int32(stateDetached))
		close(c.detached)
		return nil, err
	}
	// detached is the check after each IFDI method: the method called
	// Detach.
	detached := func() bool { return c.regDetach }
	errDetached := func(method string) error {
		return fmt.Errorf("iflib: %s: Detach called from %s during Register: %w", c.name, method, ErrDetached)
	}
	if err := c.dev.AttachPre(c, &c.sc); err != nil {
		return fail(c.ifdiErr("IFDI_ATTACH_PRE", err))
	}
	// iflib_device_register's failure path: IFDI_DETACH, then
	// IFDI_QUEUES_FREE (if queues were handed out).
	queuesHanded := false
	undo = append(undo, func() {
		_ = c.dev.Detach(c)
		if qf, ok := c.dev.(QueuesFreer); ok && queuesHanded {
			qf.QueuesFree(c)
		}
	})
	if detached() {
		return fail(errDetached("IFDI_ATTACH_PRE"))
	}
	if err := validateSoftc(&c.shared, &c.cfg, &c.sc); err != nil {
		return fail(err)
	}
	c.initCtl()
	if err := c.resolveConfig(); err != nil {
		return fail(err)
	}
	c.txrx = c.sc.TxRx
	if qi, ok := c.dev.(QueueIntrEnabler); ok {
		c.qIntr = qi
	}
	undo = append(undo, func() { _ = c.freeQueues() })
	if err := c.allocQueues(); err != nil {
		return fail(err)
	}
	c.setupTxSelect()
	queuesHanded = true
	if err := c.dev.TxQueuesAlloc(c.txRings, c.shared.NTxQs, c.sc.NTxQSets); err != nil {
		return fail(c.ifdiErr("IFDI_TX_QUEUES_ALLOC", err))
	}
	if detached() {
		return fail(errDetached("IFDI_TX_QUEUES_ALLOC"))
	}
	if err := c.dev.RxQueuesAlloc(c.rxRings, c.shared.NRxQs, c.sc.NRxQSets); err != nil {
		return fail(c.ifdiErr("IFDI_RX_QUEUES_ALLOC", err))
	}
	if detached() {
		return fail(errDetached("IFDI_RX_QUEUES_ALLOC"))
	}
	if qs, ok := c.dev.(QueueSetupper); ok {
		for i := range c.txqs {
			if err := qs.TxqSetup(c, i); err != nil {
				return fail(c.ifdiErr("IFDI_TXQ_SETUP", err))
			}
			if detached() {
				return fail(errDetached("IFDI_TXQ_SETUP"))
			}
		}
		for i := range c.rxqs {
			if err := qs.RxqSetup(c, i); err != nil {
				return fail(c.ifdiErr("IFDI_RXQ_SETUP", err))
			}
			if detached() {
				return fail(errDetached("IFDI_RXQ_SETUP"))
			}
		}
	}
	pl, err := placeQueues(c)
	if err != nil {
		return fail(err)
	}
	undo = append(undo, pl.release)
	c.placement = pl
	for i, q := range c.txqs {
		q.cpu = pl.txCPU(i)
	}
	for i, q := range c.rxqs {
		q.cpu = pl.rxCPU(i)
	}
	c.sysctl.Store(c.buildSysctl())
	if ap, ok := c.dev.(AttachPoster); ok {
		if err := ap.AttachPost(c); err != nil {
			return fail(c.ifdiErr("IFDI_ATTACH_POST", err))
		}
		if detached() {
			return fail(errDetached("IFDI_ATTACH_POST"))
		}
	}
	c.state.Store(int32(stateAttached))
	c.startAdmin()
	publishExpvar(c)
	return c, nil
}

// Name is the interface name, <driver><unit>.
func (c *Context) Name() string { return c.name }

// Softc returns the softc context as validated and clamped at attach.
// MaxFrameSize follows the MTU (SetMTU, IFDI_MTU_SET).
func (c *Context) Softc() SoftcCtx {
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	return c.sc
}

// Config returns the tunables in force, with every default resolved.
func (c *Context) Config() Config { return c.cfg }

// NumTxQueues is the TX queue-set count in use.
func (c *Context) NumTxQueues() int { return len(c.txqs) }

// NumRxQueues is the RX queue-set count in use.
func (c *Context) NumRxQueues() int { return len(c.rxqs) }

// Running reports IFF_DRV_RUNNING.
func (c *Context) Running() bool { return c.running.Load() }

// Detached returns a channel closed when Detach has finished (useful after
// a Detach that returned ErrDeferred).
func (c *Context) Detached() <-chan struct{} { return c.detached }

// LinkState returns ifc_link_state.
func (c *Context) LinkState() LinkState { return LinkState(c.link.Load()) }

// LinkStateChange is iflib_link_state_change: the driver reports the link,
// from IFDI_INIT, IFDI_UPDATE_ADMIN_STATUS or its link interrupt. While the
// link is down Transmit fails with ErrLinkDown and the queues do not drain
// (what is queued stays queued); the TX watchdog is disarmed (FreeBSD
// marks every queue IFLIB_QUEUE_IDLE). A link going up kicks every TX
// queue so that deferred work restarts.
//
// Each change of state or speed is delivered to the SubscribeLink
// subscribers, after this call returns and outside every iflib lock.
func (c *Context) LinkStateChange(s LinkState, baudrate uint64) {
	c.linkChangeMu.Lock()
	old := LinkState(c.link.Swap(int32(s)))
	oldBaud := c.baudrate.Swap(baudrate)
	if old != s || oldBaud != baudrate {
		c.notifyLink(LinkEvent{State: s, Baudrate: baudrate})
	}
	c.linkChangeMu.Unlock()
	if s == LinkStateUp && old != LinkStateUp {
		for _, q := range c.txqs {
			q.kick()
		}
	}
}

// allocQueues is iflib_queues_alloc: ring memory per hardware ring, TX
// tags and maps, the mp_rings (or buf_rings) and the RX free lists. On an
// error it leaves what it made in the tables for freeQueues.
func (c *Context) allocQueues() error {
	root := c.bus.Tag()
	low := busdma.LowAddrForWidth(c.sc.DMAWidth)
	ringTag := func(size int) (*busdma.Tag, error) {
		return busdma.NewTag(root, busdma.TagConfig{
			Alignment: c.shared.QAlign, LowAddr: low, HighAddr: busdma.MaxAddr,
			MaxSize: size, NSegments: 1, MaxSegSize: size, Flags: busdma.AllocNow,
		})
	}
	allocRing := func(size int) (RingMem, error) {
		t, err := ringTag(size)
		if err != nil {
			return RingMem{}, fmt.Errorf("iflib: %s: ring tag: %w", c.name, err)
		}
		mem, err := t.AllocMem()
		if err != nil {
			return RingMem{}, fmt.Errorf("iflib: %s: ring memory: %w", c.name, err)
		}
		return RingMem{Vaddr: mem.Vaddr, Paddr: mem.Paddr, mem: mem}, nil
	}
	for qs := 0; qs < c.sc.NTxQSets; qs++ {
		for j := 0; j < c.shared.NTxQs; j++ {
			r, err := allocRing(c.sc.TxQSizes[j])
			if err != nil {
				return err
			}
			c.txRings = append(c.txRings, r)
		}
		q, err := c.newTxq(qs, c.txRings[qs*c.shared.NTxQs], low)
		if err != nil {
			return err
		}
		c.txqs = append(c.txqs, q)
	}
	for qs := 0; qs < c.sc.NRxQSets; qs++ {
		for j := 0; j < c.shared.NRxQs; j++ {
			r, err := allocRing(c.sc.RxQSizes[j])
			if err != nil {
				return err
			}
			c.rxRings = append(c.rxRings, r)
		}
		q, err := c.newRxq(qs, c.rxRings[qs*c.shared.NRxQs:(qs+1)*c.shared.NRxQs], low)
		if err != nil {
			return err
		}
		c.rxqs = append(c.rxqs, q)
	}
	return nil
}

// newTxq is the TX half of iflib_queues_alloc and iflib_txsd_alloc.
func (c *Context) newTxq(id int, ring RingMem, low busdma.BusAddr) (*txq, error) {
	size := c.sc.NTxd[0]
	q := &txq{
		ctx: c, id: id, size: size, mask: size - 1, pad: c.sc.TxPad, ring: ring,
		maps: make([]*busdma.Map, size), sdM: make([]*Packet, size), sdFl: make([]uint8, size),
		segs: make([]busdma.Segment, 0, MaxTxSegs), bufs: make([][]byte, 0, MaxTxSegs),
		sdN:  make([]int32, size),
		wake: make(chan struct{}, 1),
		st:   newCounters[txCounter](int(numTxCounters)),
	}
	q.hold.Store(holdClosed) // opened by Init
	var err error
	q.tag, err = busdma.NewTag(c.bus.Tag(), busdma.TagConfig{
		Alignment: 1, LowAddr: low, HighAddr: busdma.MaxAddr,
		MaxSize: c.shared.TxMaxSize, NSegments: c.sc.TxNSegments, MaxSegSize: c.shared.TxMaxSegSize,
	})
	if err != nil {
		return nil, fmt.Errorf("iflib: %s: TX tag: %w", c.name, err)
	}
	if c.shared.TSOMaxSize > 0 && c.sc.TxTSOSegmentsMax > 0 {
		q.tsoTag, err = busdma.NewTag(c.bus.Tag(), busdma.TagConfig{
			Alignment: 1, LowAddr: low, HighAddr: busdma.MaxAddr,
			MaxSize: c.shared.TSOMaxSize, NSegments: c.sc.TxTSOSegmentsMax, MaxSegSize: c.shared.TSOMaxSegSize,
		})
		if err != nil {
			return nil, fmt.Errorf("iflib: %s: TSO tag: %w", c.name, err)
		}
		q.tsoMap = make([]*busdma.Map, size)
	}
	for i := range q.maps {
		if q.maps[i], err = q.tag.CreateMap(); err != nil {
			q.destroyMaps()
			return nil, fmt.Errorf("iflib: %s: Unable to create TX DMA map: %w", c.name, err)
		}
		if q.tsoTag != nil {
			if q.tsoMap[i], err = q.tsoTag.CreateMap(); err != nil {
				q.destroyMaps()
				return nil, fmt.Errorf("iflib: %s: Unable to create TSO TX DMA map: %w", c.name, err)
			}
		}
	}
	q.syncBufs = q.tag.SyncNeeded() || (q.tsoTag != nil && q.tsoTag.SyncNeeded())
	q.path, err = pathFor(c.cfg.TxMode).newPath(q)
	if err != nil {
		q.destroyMaps()
		return nil, fmt.Errorf("iflib: %s: TX ring: %w", c.name, err)
	}
	return q, nil
}

// destroyMaps is iflib_txsd_destroy. It returns how many maps were still
// loaded (they are unloaded first).
func (q *txq) destroyMaps() int {
	return destroyMaps(q.maps) + destroyMaps(q.tsoMap)
}

// destroyMaps destroys every map of ms (unloading it first if it is still
// loaded) and returns how many were loaded.
func destroyMaps(ms []*busdma.Map) int {
	loaded := 0
	for i, m := range ms {
		if m == nil {
			continue
		}
		if m.Loaded() {
			loaded++
			_ = m.Unload()
		}
		_ = m.Destroy()
		ms[i] = nil
	}
	return loaded
}

// freeQueues is iflib_tx_structures_free / iflib_rx_structures_free and
// iflib_dma_free of every ring, after the device stopped. It undoes exactly
// what allocQueues made (the tables may be partly filled after a failed
// Register) and reports what it found still in use: iflib maps still
// loaded, and RX zones with packets out (whose memory it then keeps).
// The queue tables themselves stay, for the counters.
func (c *Context) freeQueues() error {
	leak := &LeakError{}
	for _, q := range c.txqs {
		leak.Maps += q.destroyMaps()
	}
	for _, q := range c.rxqs {
		l := q.free()
		leak.Maps += l.Maps
		leak.Zones = append(leak.Zones, l.Zones...)
	}
	for _, r := range c.txRings {
		r.free()
	}
	for _, r := range c.rxRings {
		r.free()
	}
	c.txRings, c.rxRings = nil, nil
	if leak.Maps > 0 || len(leak.Zones) > 0 {
		return leak
	}
	return nil
}
