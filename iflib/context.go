package iflib

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/bufring"
	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/mpring"
)

// Attachment is what a driver passes to Register: the arguments of
// iflib_device_register plus the stack's side of the ifnet.
type Attachment struct {
	Driver Device         // the IFDI methods
	Shared *SharedCtx     // DEVICE_REGISTER's if_shared_ctx
	Bus    *busdma.Device // the bus device; its root tag is bus_get_dma_tag(dev); the RX zones come from its space
	Config Config         // iflib's tunables
	// Input is if_input: it receives each RX batch (or each packet with
	// Config.RxPerPacket). The packets are the callee's: it must free or
	// transmit each. The slice is reused after the call returns. A nil
	// Input frees every received packet (counted as delivered).
	Input func(qid int, pkts []*Packet)
	// TxQueueSelect is ift_txq_select (optional): return the TX queue of a
	// packet; an out-of-range answer means queue 0.
	TxQueueSelect func(m *Packet) int
	// RxFilter is the early-drop hook (pfil_mem_in on the raw cluster,
	// PFIL_HOOKED_IN): it sees each received frame before a packet is
	// built and returns true to drop it. A dropped frame's cluster stays
	// mapped in its slot and is reposted without a reload. It runs on the
	// RX task and must not keep the slice.
	RxFilter func(qid int, frame []byte) bool
	// CPUs is the placement registry (nil: DefaultAllocator, shared by
	// every context of the process, like FreeBSD's cpu_offsets).
	CPUs *cpumap.Allocator
}

type ctxState int32

const (
	stateAttached ctxState = iota + 1
	stateRunning
	stateDetached
)

// Context is struct iflib_ctx: one attached device.
//
// Lifecycle: Register (attach) → Init (running) ⇄ Stop → Detach. The
// lifecycle methods serialize on mu (CTX_LOCK); Transmit and the queue
// tasks run concurrently with each other and are fenced off by running
// and inflight during Stop.
type Context struct {
	mu     sync.Mutex // CTX_LOCK: lifecycle
	state  ctxState   // guarded by mu
	name   string     // <driver><unit>
	dev    Device
	shared SharedCtx
	sc     SoftcCtx
	cfg    Config
	txrx   TxRx
	bus    *busdma.Device
	space  busdma.Space
	input  func(qid int, pkts []*Packet)

	txqSelect func(m *Packet) int
	rxFilter  func(qid int, frame []byte) bool
	alloc     *cpumap.Allocator

	adminWake chan struct{} // ifc_admin_task
	adminQuit chan struct{}
	adminDone chan struct{}
	resets    atomic.Uint64 // resets done by the admin task

	running  atomic.Bool  // IFF_DRV_RUNNING
	link     atomic.Int32 // ifc_link_state
	baudrate atomic.Uint64
	inflight atomic.Int64 // Transmit calls in progress

	txqs    []*txq
	rxqs    []*rxq
	txRings []RingMem
	rxRings []RingMem

	placement *placement
	tasks     sync.WaitGroup
	stopCh    chan struct{}
	sysctl    *Node

	qIntr QueueIntrEnabler // nil: whole-device IntrEnable
}

// Register is iflib_device_register: validate the shared context, read the
// tunables, call AttachPre, validate and clamp the softc context, create
// the tags, allocate the descriptor rings and software state of every
// queue, hand the rings to the driver and call AttachPost. Every parameter
// problem is a *ConfigError; on any error everything allocated is released.
func Register(a Attachment) (*Context, error) {
	if a.Driver == nil {
		return nil, cfgErr("Driver", nil, "nil")
	}
	if a.Bus == nil {
		return nil, cfgErr("Bus", nil, "a busdma device is required")
	}
	if err := validateShared(a.Shared); err != nil {
		return nil, err
	}
	c := &Context{
		dev:       a.Driver,
		shared:    *a.Shared,
		cfg:       a.Config,
		bus:       a.Bus,
		space:     a.Bus.Space(),
		input:     a.Input,
		txqSelect: a.TxQueueSelect,
		rxFilter:  a.RxFilter,
		alloc:     a.CPUs,
		name:      fmt.Sprintf("%s%d", a.Shared.DriverName, a.Config.Unit),
	}
	if c.shared.QAlign == 0 {
		c.shared.QAlign = 4096
	}
	if c.shared.NFL == 0 {
		c.shared.NFL = 1
	}
	if c.cfg.TimerInterval <= 0 {
		c.cfg.TimerInterval = 500 * time.Millisecond
	}
	if c.cfg.PollInterval <= 0 {
		c.cfg.PollInterval = 20 * time.Microsecond
	}
	if err := resetQValues(&c.shared, &c.cfg, &c.sc); err != nil {
		return nil, err
	}
	if err := c.dev.AttachPre(c, &c.sc); err != nil {
		return nil, fmt.Errorf("iflib: %s: IFDI_ATTACH_PRE: %w", c.name, err)
	}
	fail := func(err error) (*Context, error) {
		c.freeQueues()
		_ = c.dev.Detach(c)
		return nil, err
	}
	if err := validateSoftc(&c.shared, &c.cfg, &c.sc); err != nil {
		return fail(err)
	}
	c.txrx = c.sc.TxRx
	if qi, ok := c.dev.(QueueIntrEnabler); ok {
		c.qIntr = qi
	}
	if err := c.allocQueues(); err != nil {
		return fail(err)
	}
	if err := c.dev.TxQueuesAlloc(c.txRings, c.shared.NTxQs, c.sc.NTxQSets); err != nil {
		return fail(fmt.Errorf("iflib: %s: IFDI_TX_QUEUES_ALLOC: %w", c.name, err))
	}
	if err := c.dev.RxQueuesAlloc(c.rxRings, c.shared.NRxQs, c.sc.NRxQSets); err != nil {
		return fail(fmt.Errorf("iflib: %s: IFDI_RX_QUEUES_ALLOC: %w", c.name, err))
	}
	pl, err := placeQueues(c)
	if err != nil {
		return fail(err)
	}
	c.placement = pl
	for i, q := range c.txqs {
		q.cpu = pl.txCPU(i)
	}
	for i, q := range c.rxqs {
		q.cpu = pl.rxCPU(i)
	}
	if ap, ok := c.dev.(AttachPoster); ok {
		if err := ap.AttachPost(c); err != nil {
			pl.release()
			return fail(fmt.Errorf("iflib: %s: IFDI_ATTACH_POST: %w", c.name, err))
		}
	}
	c.link.Store(int32(LinkStateDown))
	c.state = stateAttached
	c.startAdmin()
	c.sysctl = c.buildSysctl()
	publishExpvar(c)
	return c, nil
}

// Name is the interface name, <driver><unit>.
func (c *Context) Name() string { return c.name }

// Softc returns the softc context as validated and clamped at attach.
func (c *Context) Softc() SoftcCtx { return c.sc }

// Config returns the tunables in force.
func (c *Context) Config() Config { return c.cfg }

// NumTxQueues and NumRxQueues are the queue-set counts in use.
func (c *Context) NumTxQueues() int { return len(c.txqs) }

// NumRxQueues is the RX queue-set count in use.
func (c *Context) NumRxQueues() int { return len(c.rxqs) }

// Running reports IFF_DRV_RUNNING.
func (c *Context) Running() bool { return c.running.Load() }

// LinkState returns ifc_link_state.
func (c *Context) LinkState() LinkState { return LinkState(c.link.Load()) }

// LinkStateChange is iflib_link_state_change: the driver reports the link.
// A link going up kicks every TX queue so that deferred work restarts.
func (c *Context) LinkStateChange(s LinkState, baudrate uint64) {
	old := LinkState(c.link.Swap(int32(s)))
	c.baudrate.Store(baudrate)
	if s == LinkStateUp && old != LinkStateUp {
		for _, q := range c.txqs {
			q.kick()
		}
	}
}

// allocQueues is iflib_queues_alloc: ring memory per hardware ring, TX
// tags and maps, the mp_rings (or buf_rings) and the RX free lists.
func (c *Context) allocQueues() error {
	root := c.bus.Tag()
	low := lowAddrForWidth(c.sc.DMAWidth)
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
		wake: make(chan struct{}, 1), sentinel: new(Packet),
	}
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
	switch c.cfg.TxMode {
	case TxModeMPRing:
		q.mpr, err = mpring.New[*Packet](MPRingSize, q.txqDrain, q.txqCanDrain)
	case TxModeDRBR:
		maxp := DefaultSimpleMaxProducers
		if p := c.cfg.SimpleMaxProducers; p != nil {
			maxp = *p
		}
		n := c.cfg.DRBRSize
		if n == 0 {
			n = DefaultDRBRSize
		}
		q.drbr, err = bufring.NewDRBR[*Packet](n, maxp, q.drbrXmit)
	}
	if err != nil {
		q.destroyMaps()
		return nil, fmt.Errorf("iflib: %s: TX ring: %w", c.name, err)
	}
	return q, nil
}

// destroyMaps is iflib_txsd_destroy (after freeAll: no map is loaded).
func (q *txq) destroyMaps() {
	for i, m := range q.maps {
		if m != nil {
			_ = m.Destroy()
			q.maps[i] = nil
		}
	}
	for i, m := range q.tsoMap {
		if m != nil {
			_ = m.Destroy()
			q.tsoMap[i] = nil
		}
	}
}

// freeQueues is iflib_tx_structures_free / iflib_rx_structures_free and
// iflib_dma_free of every ring.
func (c *Context) freeQueues() {
	for _, q := range c.txqs {
		q.freeAll()
		q.destroyMaps()
	}
	for _, q := range c.rxqs {
		q.free()
	}
	for _, r := range c.txRings {
		r.Sync(busdma.PostRead | busdma.PostWrite)
		_ = r.mem.Free()
	}
	for _, r := range c.rxRings {
		r.Sync(busdma.PostRead | busdma.PostWrite)
		_ = r.mem.Free()
	}
	c.txqs, c.rxqs, c.txRings, c.rxRings = nil, nil, nil, nil
}

// Init is iflib_init_locked: IFDI_INIT, fill the free lists, start the
// queue tasks, set RUNNING, enable interrupts.
func (c *Context) Init() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.initLocked()
}

func (c *Context) initLocked() error {
	switch c.state {
	case stateRunning:
		return nil
	case stateAttached:
	default:
		return fmt.Errorf("%w: Init after detach", ErrState)
	}
	for i, q := range c.txqs {
		q.ring.Sync(busdma.PreRead | busdma.PreWrite)
		if qs, ok := c.dev.(QueueSetupper); ok {
			if err := qs.TxqSetup(c, i); err != nil {
				return fmt.Errorf("iflib: %s: IFDI_TXQ_SETUP: %w", c.name, err)
			}
		}
	}
	if err := c.dev.Init(c); err != nil {
		return fmt.Errorf("iflib: %s: IFDI_INIT: %w", c.name, err)
	}
	for i, q := range c.rxqs {
		if qs, ok := c.dev.(QueueSetupper); ok {
			if err := qs.RxqSetup(c, i); err != nil {
				c.dev.Stop(c)
				return fmt.Errorf("iflib: %s: IFDI_RXQ_SETUP: %w", c.name, err)
			}
		}
		q.setup()
	}
	c.running.Store(true)
	c.stopCh = make(chan struct{})
	for _, q := range c.txqs {
		c.tasks.Add(1)
		go q.task()
	}
	for _, q := range c.rxqs {
		c.tasks.Add(1)
		go q.task()
	}
	c.tasks.Add(1)
	go c.timer()
	c.state = stateRunning
	c.dev.IntrEnable(c)
	if u, ok := c.dev.(AdminStatusUpdater); ok {
		u.UpdateAdminStatus(c)
	}
	return nil
}

// Stop is iflib_stop: refuse new transmits, let the ones in progress
// finish while the device still runs, stop the tasks, purge what is still
// queued (counted as oqdrops), IFDI_STOP, then free every packet left on a
// descriptor ring and every posted RX buffer. After Stop no map is loaded
// and every packet is back in its zone.
func (c *Context) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopLocked()
}

func (c *Context) stopLocked() error {
	if c.state != stateRunning {
		return nil
	}
	c.running.Store(false)
	// Transmits in flight may be blocked in a full drbr ring: keep the TX
	// tasks draining until they are out.
	for c.inflight.Load() > 0 {
		for _, q := range c.txqs {
			q.kick()
		}
		runtime.Gosched()
		time.Sleep(50 * time.Microsecond)
	}
	c.dev.IntrDisable(c)
	close(c.stopCh)
	c.tasks.Wait()
	for _, q := range c.txqs {
		q.purge()
	}
	c.dev.Stop(c)
	for _, q := range c.txqs {
		q.freeAll()
	}
	for _, q := range c.rxqs {
		q.stop()
	}
	c.state = stateAttached
	return nil
}

// Detach is iflib_device_deregister: stop, free the queues and the rings,
// IFDI_DETACH, release the placement.
func (c *Context) Detach() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == stateDetached {
		return fmt.Errorf("%w: detached twice", ErrState)
	}
	if err := c.stopLocked(); err != nil {
		return err
	}
	c.stopAdmin()
	if qf, ok := c.dev.(QueuesFreer); ok {
		qf.QueuesFree(c)
	}
	c.freeQueues()
	err := c.dev.Detach(c)
	if c.placement != nil {
		c.placement.release()
	}
	unpublishExpvar(c)
	c.state = stateDetached
	return err
}

// purge is iflib_ifmp_purge (mpring) or drbr_flush: free what is still
// queued, counting each as an oqdrop.
// Preconditions: no transmit in flight and the TX task stopped.
func (q *txq) purge() {
	switch {
	case q.mpr != nil:
		q.purging.Store(true)
		q.mpr.CheckDrainage(MPRingSize)
		q.purging.Store(false)
	case q.drbr != nil:
		n := q.drbr.Flush(func(m *Packet) { m.Free() })
		q.st.oqDrops.Add(uint64(n))
	}
}

// TxIntr is iflib_fast_intr for a TX vector: the driver's interrupt
// handler calls it; iflib schedules the queue's task, which re-enables the
// interrupt when done.
func (c *Context) TxIntr(qid int) {
	if qid >= 0 && qid < len(c.txqs) {
		c.txqs[qid].kick()
	}
}

// RxIntr is iflib_fast_intr for an RX vector.
func (c *Context) RxIntr(qid int) {
	if qid >= 0 && qid < len(c.rxqs) {
		c.rxqs[qid].kick()
	}
}

// timer is iflib_timer's laggard kick: a TX queue with a deferred
// doorbell, or a stalled ring, gets its task scheduled.
func (c *Context) timer() {
	defer c.tasks.Done()
	t := time.NewTicker(c.cfg.TimerInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stopCh:
			return
		case <-t.C:
			for _, q := range c.txqs {
				q.kick()
			}
			for _, q := range c.rxqs {
				q.kick()
			}
		}
	}
}
