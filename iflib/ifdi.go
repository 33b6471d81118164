package iflib

import "errors"

// Device is the required part of the IFDI kobj interface
// (sys/net/ifdi_if.m). iflib calls these methods with the context lock held
// (lifecycle) and never concurrently with each other; the per-queue
// interrupt methods may be called from the queue's task goroutine. A
// method may call Context.Stop or Context.Detach: the call is handed to the
// admin task (ErrDeferred).
//
// The link: iflib never assumes it. The driver reports it with
// Context.LinkStateChange, from Init (a device whose link is up at once),
// from IFDI_UPDATE_ADMIN_STATUS, or from its link interrupt through
// Context.AdminIntr; until it reports LinkStateUp every Transmit fails with
// ErrLinkDown.
type Device interface {
	// AttachPre is IFDI_ATTACH_PRE: allocate resources and fill the
	// SoftcCtx (queue counts, ring sizes, segment limits, TxRx).
	AttachPre(ic *Context, scctx *SoftcCtx) error
	// TxQueuesAlloc is IFDI_TX_QUEUES_ALLOC: take the TX ring memory iflib
	// allocated, indexed [qset*ntxqs + ring].
	TxQueuesAlloc(rings []RingMem, ntxqs, ntxqsets int) error
	// RxQueuesAlloc is IFDI_RX_QUEUES_ALLOC, likewise for RX.
	RxQueuesAlloc(rings []RingMem, nrxqs, nrxqsets int) error
	// Init is IFDI_INIT: program the hardware; called before the free lists
	// are filled. Report the link here (LinkStateChange) if it is known.
	Init(ic *Context) error
	// Stop is IFDI_STOP: stop the hardware. After Stop the device touches no
	// descriptor and no buffer.
	Stop(ic *Context)
	// IntrEnable and IntrDisable are IFDI_INTR_ENABLE / IFDI_INTR_DISABLE.
	IntrEnable(ic *Context)
	IntrDisable(ic *Context)
	// Detach is IFDI_DETACH: release what AttachPre took.
	Detach(ic *Context) error
}

// Optional IFDI methods. iflib uses a method when the Device implements the
// interface and the documented default otherwise.
type (
	// AttachPoster is IFDI_ATTACH_POST (default: nothing).
	AttachPoster interface{ AttachPost(ic *Context) error }
	// QueueIntrEnabler is IFDI_RX_QUEUE_INTR_ENABLE and
	// IFDI_TX_QUEUE_INTR_ENABLE (default: ENOTSUP, and iflib falls back to
	// IntrEnable for the whole device, as legacy interrupts do).
	QueueIntrEnabler interface {
		RxQueueIntrEnable(ic *Context, qid int) error
		TxQueueIntrEnable(ic *Context, qid int) error
	}
	// QueueSetupper is IFDI_TXQ_SETUP / IFDI_RXQ_SETUP (default: nothing):
	// called once per queue at Register, after the queues were handed out
	// (iflib_qset_structures_setup), not on every Init.
	QueueSetupper interface {
		TxqSetup(ic *Context, qid int) error
		RxqSetup(ic *Context, qid int) error
	}
	// AdminStatusUpdater is IFDI_UPDATE_ADMIN_STATUS: poll the link and call
	// Context.LinkStateChange. iflib calls it at the end of Init and on
	// every admin task pass (AdminIntr, resets, watchdog). Default: nothing,
	// and then the driver must report its link itself (LinkStateChange from
	// IFDI_INIT or its link interrupt): iflib never assumes the link is up.
	AdminStatusUpdater interface{ UpdateAdminStatus(ic *Context) }
	// CounterGetter is IFDI_GET_COUNTER (default: iflib's own counters).
	CounterGetter interface {
		GetCounter(ic *Context, c IfCounter) (uint64, bool)
	}
	// QueuesFreer is IFDI_QUEUES_FREE (default: nothing). Called after
	// IFDI_DETACH, as iflib_device_deregister does.
	QueuesFreer interface{ QueuesFree(ic *Context) }
	// TimerHandler is IFDI_TIMER (default: nothing): iflib's timer calls it
	// for each TX queue every Config.TimerInterval while running, without
	// the context lock. em calls iflib_admin_intr_deferred here
	// (Context.AdminIntr) to poll its link.
	TimerHandler interface{ Timer(ic *Context, qid int) }
	// WatchdogResetter is IFDI_WATCHDOG_RESET (default: nothing): the admin
	// task calls it when the TX watchdog found a hung queue, before it
	// resets the interface (stop + init).
	WatchdogResetter interface{ WatchdogReset(ic *Context) }
)

// ErrNotSupported is ENOTSUP, the default of optional IFDI methods.
var ErrNotSupported = errors.New("iflib: operation not supported (ENOTSUP)")

// ErrEncapTooBig is EFBIG from TxdEncap: iflib defragments the packet into
// fewer segments and retries once.
var ErrEncapTooBig = errors.New("iflib: driver encap needs fewer segments (EFBIG)")

// IfCounter is ift_counter (IFCOUNTER_*).
type IfCounter int

const (
	IfCounterIPackets IfCounter = iota // IFCOUNTER_IPACKETS
	IfCounterIErrors                   // IFCOUNTER_IERRORS
	IfCounterOPackets                  // IFCOUNTER_OPACKETS
	IfCounterOErrors                   // IFCOUNTER_OERRORS
	IfCounterIBytes                    // IFCOUNTER_IBYTES
	IfCounterOBytes                    // IFCOUNTER_OBYTES
	IfCounterOMcasts                   // IFCOUNTER_OMCASTS
	IfCounterIQDrops                   // IFCOUNTER_IQDROPS
	IfCounterOQDrops                   // IFCOUNTER_OQDROPS
)

// LinkState is LINK_STATE_*.
type LinkState int

const (
	LinkStateUnknown LinkState = iota // LINK_STATE_UNKNOWN
	LinkStateDown                     // LINK_STATE_DOWN
	LinkStateUp                       // LINK_STATE_UP
)

func (s LinkState) String() string {
	switch s {
	case LinkStateDown:
		return "down"
	case LinkStateUp:
		return "up"
	}
	return "unknown"
}
