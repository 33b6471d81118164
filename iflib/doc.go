// Package iflib models FreeBSD's iflib (sys/net/iflib.c, sys/net/iflib.h,
// sys/net/ifdi_if.m): the framework under most FreeBSD NIC drivers.
//
// A driver implements two interfaces: [TxRx], the fast-path method table
// (struct if_txrx), and [Device], the IFDI methods. iflib owns everything
// between the network stack and those methods: the packet zones, the busdma
// tags and maps, the software rings, the transmit modes, completion and
// reclaim, the receive free lists, the per-queue tasks, the timer and
// watchdog, and the admin task. Example shows a complete driver.
//
// # Writing a driver
//
//  1. Declare a [SharedCtx] (only DriverName is required) and, in
//     Device.AttachPre, fill the [SoftcCtx]: TxRx, the queue-set counts,
//     the descriptor sizes and TxNSegments.
//  2. Take the ring memory iflib allocated in TxQueuesAlloc/RxQueuesAlloc.
//  3. Program the hardware in Device.Init and report the link with
//     [Context.LinkStateChange]: until the driver reports the link up,
//     Transmit fails with [ErrLinkDown].
//  4. From the interrupt handlers call [Context.TxIntr], [Context.RxIntr]
//     and [Context.AdminIntr] (link changes).
//  5. Register with an [Attachment] (its Input callback is the stack),
//     then Init, and send with [Context.Transmit] packets from a [Zone] on
//     the device's address space (Attachment.Bus.Space()).
//
// Required: the [TxRx] methods and the [Device] methods (IFDI_ATTACH_PRE,
// the queue allocations, IFDI_INIT, IFDI_STOP, IFDI_INTR_ENABLE/DISABLE,
// IFDI_DETACH). Every other IFDI method is optional, an interface the
// Device may implement; iflib's default when it does not:
//
//	AttachPoster        IFDI_ATTACH_POST             nothing
//	QueueSetupper       IFDI_TXQ_SETUP/RXQ_SETUP     nothing
//	QueueIntrEnabler    IFDI_{RX,TX}_QUEUE_INTR_ENABLE  IntrEnable for the whole device
//	AdminStatusUpdater  IFDI_UPDATE_ADMIN_STATUS     nothing: the driver reports its link itself
//	CounterGetter       IFDI_GET_COUNTER             iflib's counters
//	QueuesFreer         IFDI_QUEUES_FREE             nothing
//	TimerHandler        IFDI_TIMER                   nothing
//	WatchdogResetter    IFDI_WATCHDOG_RESET          nothing
//	MTUSetter           IFDI_MTU_SET                 SetMTU refused (ErrNotSupported)
//	PromiscSetter       IFDI_PROMISC_SET             SetFlags refused (ErrNotSupported)
//	MultiSetter         IFDI_MULTI_SET               the list is kept for IFDI_INIT
//	VLANRegisterer      IFDI_VLAN_{UN,}REGISTER      the set is kept for IFDI_INIT
//	RestartNeeder       IFDI_NEEDS_RESTART           false (no reinit on a VLAN change)
//	MediaStatuser       IFDI_MEDIA_STATUS            iflib's link state and Context.Media
//	MediaChanger        IFDI_MEDIA_CHANGE            SetMedia refused (ErrNotSupported)
//	LinkIntrEnabler     IFDI_LINK_INTR_ENABLE        nothing
//
// # The control plane
//
// The stack configures the interface through the Context, as
// iflib_if_ioctl does: [Context.SetMTU] (SIOCSIFMTU), [Context.SetFlags]
// (promiscuous and all-multicast), [Context.AddMulti] and
// [Context.DelMulti], [Context.SetMAC], [Context.RegisterVLAN] and
// [Context.UnregisterVLAN] (the vlan_config events),
// [Context.SetCapEnable] (SIOCSIFCAP), [Context.SetMedia] and
// [Context.MediaStatus] (ifmedia), [Context.SetRSS], and learns of link
// changes with [Context.SubscribeLink]. Each validates its argument (a
// [*ConfigError] for a bad value), calls the driver's IFDI method with the
// context lock held and reinitialises a running interface where iflib
// does; each is safe beside the data path and every lifecycle call, and
// shows in the sysctl tree (dev.<driver>.<unit>.mtu, .mac, .flags, …). In
// IFDI_INIT a driver programs its hardware from the context's view:
// [Context.MAC], [Context.MTU], [Context.Flags], [Context.Multicast],
// [Context.VLANs], [Context.CapEnabled], [Context.RSS], [Context.Media] and
// [Context.RxBufSize]. From AttachPre it reports its address
// ([Context.SetMAC], iflib_set_mac), its media ([Context.MediaAdd],
// [Context.MediaSetDefault]) and its capabilities (SoftcCtx.Capabilities
// and CapEnable), and from anywhere it may ask for a reset
// ([Context.RequestReset], iflib_request_reset). A control call made from
// the context's own task goroutines (the input callback, a TxRx method)
// returns [ErrReentrant]; from an IFDI method it runs and a reinit it
// needs is handed to the admin task, except that SetMTU and SetCapEnable,
// which must stop a running interface around the change, return
// ErrReentrant there.
//
// Outbound flow (one packet):
//
//	Transmit(pkt) ─▶ queue select (QIDX / driver selector)
//	   ├─ mpring: Ring.Enqueue ─▶ producer becomes consumer ─▶ drain (≤ TX_BATCH_SIZE)
//	   ├─ simple: txq lock ─▶ encap ─▶ doorbell ─▶ opportunistic reclaim
//	   └─ drbr:   lock free: send, or defer into buf_ring (≤ max producers) ─▶ drain quota
//	encap: busdma LoadMulti ─(EFBIG)▶ collapse ▶ defrag ─▶ TxdEncap ─▶ PREWRITE
//	doorbell: ring PREREAD|PREWRITE ─▶ TxdFlush (deferred by txq_max_db_deferred)
//	completion: POSTREAD ─▶ TxdCreditsUpdate ─▶ reclaim (whole packets the credits cover)
//	            ─▶ POSTWRITE + Unload ─▶ free to the zone
//
// # Ownership
//
// A packet passed to [Context.Transmit] or [Context.TransmitBatch] belongs
// to iflib from the call on, whatever the result; on an error it has
// already been freed and counted (except ErrNilPacket, ErrForeignPacket and
// ErrUseAfterFree, which take nothing). [Context.TransmitBatchErrs] reports
// each packet's outcome and leaves in the slice exactly the packets it did
// not take. Never touch a packet after passing it: the zone may already
// have handed the same pointer to someone else.
// Packets handed to the input callback belong to the stack, which frees
// them with [Packet.Free] or transmits them. A freed packet is marked: a
// second free is ignored and counted, and Transmit refuses it
// ([ErrUseAfterFree]) while it is still free. A zone's depot is LIFO, so a
// stale pointer is usually live again at once; debug mode ([Zone.SetDebug],
// on by default in race-detector builds: [DebugZonesByDefault]) quarantines
// freed packets (FIFO), so that the stale use is refused, and reports where
// the packet was freed.
//
// # Lifecycle and concurrency
//
// Register (attached) → Init (running) ⇄ Stop (attached) → Detach
// (detaching → detached), as FreeBSD's IFC_INIT_DONE, IFF_DRV_RUNNING and
// IFC_IN_DETACH. Every method of [Context] may be called from any goroutine
// at any time; the lifecycle methods serialize, and Transmit, the counters
// and the interrupt entry points run beside them:
//
//   - Init on a running context does nothing; after Detach has begun it
//     returns [ErrDetached].
//   - Stop is bounded in time: it never waits for the device, wakes senders
//     blocked in drbr mode, and counts what it discards (stop_discards,
//     rx_stop_discards). It never frees a TX queue a sender still uses: a
//     sender stuck in a driver method past Config.StopTimeout keeps its
//     queue, which is torn down when it leaves (Init then waits for it, or
//     returns [ErrBusy]). After Detach has begun it returns ErrDetached.
//   - Detach stops a running context first; a second Detach returns
//     ErrDetached. It returns a [LeakError] when the stack still holds
//     received packets or a map is still loaded.
//   - Stop or Detach called from the context's own goroutines (the input
//     callback, RxFilter, TxRx and IFDI methods) are handed to the admin
//     task and return [ErrDeferred]; [Context.Detached] tells when a
//     deferred Detach is done.
//   - From an IFDI method during Register (AttachPre, the queue setups,
//     AttachPost), which runs with the context lock held: Init returns
//     [ErrRegistering], Stop nil, Detach ErrDeferred (Register then fails
//     with ErrDetached), and the counters and the sysctl tree answer with
//     what exists so far.
//   - After Stop, Transmit fails with [ErrNotRunning]; after Detach too.
//     Counter, the queue stats and the sysctl tree keep their final values.
//
// A device that misbehaves is detected and recovered from: the timer
// (iflib_timer) finds a TX queue that holds work the device does not
// complete and resets the interface through the admin task (counted in
// WatchdogEvents and watchdog_timeouts), and recovers lost interrupts; an
// RX descriptor the driver cannot describe is counted and resets the
// interface; a refill that keeps failing backs off.
//
// # Counters
//
// Every counter is declared once (stats.go) and read through [Context.Counter],
// [Context.TxQueueStats], [Context.RxQueueStats], the sysctl tree
// ([Context.Sysctl], named as FreeBSD's dev.<driver>.<unit>.iflib.*) and the
// expvar variable "iflib". Queue consumers count in plain fields and publish
// once per pass, so the data path pays no locked instruction per event.
//
// The main hazard modelled here is the one every iflib bug in the founding
// reviews was about: a bus address given to the device must come from the
// current busdma mapping, every mapping must be unloaded exactly once, and
// the CPU and the device must each sync before touching what the other wrote.
// Every test of this package runs with busdma's checker on.
//
// docs/freebsd.md in the repository lists the FreeBSD versions modelled and
// the deliberate departures from them.
package iflib
