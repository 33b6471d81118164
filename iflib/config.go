package iflib

import (
	"fmt"
	"time"

	"github.com/goiflib/goiflib/bufring"
)

// SharedFlags are if_shared_ctx isc_flags (IFLIB_*). Only the flags this
// model acts on are defined.
type SharedFlags uint32

const (
	FlagHasRxCQ      SharedFlags = 0x01  // IFLIB_HAS_RXCQ (not modelled: rejected)
	FlagHasTxCQ      SharedFlags = 0x08  // IFLIB_HAS_TXCQ (not modelled: rejected)
	FlagNeedEtherPad SharedFlags = 0x100 // IFLIB_NEED_ETHER_PAD: pad runts to MinFrameSize
	// FlagTSOInitIP is IFLIB_TSO_INIT_IP: for IPv4 TSO, iflib zeroes the IP
	// header checksum and sets ip_len to one segment's length.
	FlagTSOInitIP     SharedFlags = 0x40
	FlagPreserveTxIdx SharedFlags = 0x200000 // IFLIB_PRESERVE_TX_INDICES: Stop keeps the TX ring indices
)

// SharedCtx is struct if_shared_ctx: what a driver declares about its
// hardware, the same for every device it drives.
//
// What a driver must set: DriverName. Every other field has a default
// (noted on the field) that suits a simple NIC with one descriptor ring
// per queue and one buffer per RX descriptor.
type SharedCtx struct {
	// DriverName names the device in sysctl paths (dev.<name>.<unit>) and
	// in the interface name <name><unit>.
	DriverName    string
	DriverVersion string // isc_driver_version: shown in the sysctl tree
	// QAlign is isc_q_align: the byte alignment of descriptor rings
	// (a power of two; 0: 4096).
	QAlign int
	// TxMaxSize is isc_tx_maxsize: the largest packet (all its buffers)
	// one TX descriptor chain may carry (0: 65535; else
	// MinTxMaxSize..MaxTxMaxSize).
	TxMaxSize int
	// TxMaxSegSize is isc_tx_maxsegsize: the most bytes one TX descriptor
	// may point at (0: 4096; else MinTxSegSize..MaxTxMaxSize).
	TxMaxSegSize int
	// TSOMaxSize is isc_tso_maxsize: the largest TSO packet (0: no TSO;
	// else MinTxMaxSize..MaxTxMaxSize).
	TSOMaxSize int
	// TSOMaxSegSize is isc_tso_maxsegsize: the most bytes per descriptor of
	// a TSO packet (0: TxMaxSegSize; else MinTxSegSize..MaxTxMaxSize).
	TSOMaxSegSize int
	// RxMaxSize, RxMaxSegSize and RxNSegments are isc_rx_maxsize,
	// isc_rx_maxsegsize and isc_rx_nsegments: the RX buffer tag; a buffer
	// must load as one segment (0: the cluster size, and 1 segment). A
	// size below the cluster size is raised to it; at most MaxTxMaxSize,
	// and RxNSegments at most MaxRxSegs.
	RxMaxSize    int
	RxMaxSegSize int
	RxNSegments  int
	// NTxdMin, NTxdMax and NTxdDefault are isc_ntxd_min/max/default: the
	// bounds and default of the TX descriptors per ring j
	// (0: 64, 4096 and 1024). The default must be a power of two.
	NTxdMin     [MaxQueuesPerSet]int
	NTxdMax     [MaxQueuesPerSet]int
	NTxdDefault [MaxQueuesPerSet]int
	// NRxdMin, NRxdMax and NRxdDefault are the same for RX rings.
	NRxdMin     [MaxQueuesPerSet]int
	NRxdMax     [MaxQueuesPerSet]int
	NRxdDefault [MaxQueuesPerSet]int
	// NFL is isc_nfl: free lists (buffer rings) per RX queue set (0: 1).
	NFL int
	// NTxQs and NRxQs are isc_ntxqs and isc_nrxqs: hardware rings per
	// queue set, 1..8 (0: 1). Ring 0 of a TX set carries descriptors; RX
	// rings beyond the free lists are the driver's own.
	NTxQs int
	NRxQs int
	Flags SharedFlags // isc_flags: IFLIB_* behaviour flags
}

// SoftcCtx is struct if_softc_ctx: what one device instance has, filled by
// the driver in AttachPre. iflib has already put the ring sizes it chose
// (from the shared context and the overrides) in NTxd and NRxd.
//
// What a driver must set: TxRx; NTxQSetsMax and NRxQSetsMax; the size of
// its descriptors (TxdSize and RxdSize, from which iflib derives the ring
// bytes) or the ring bytes themselves (TxQSizes, RxQSizes); TxNSegments.
type SoftcCtx struct {
	// NTxQSets and NRxQSets are isc_ntxqsets and isc_nrxqsets: the queue
	// sets to use (0: the maximum).
	NTxQSets, NRxQSets int
	// NTxQSetsMax and NRxQSetsMax are isc_ntxqsets_max and
	// isc_nrxqsets_max: the queue sets the hardware has (required).
	NTxQSetsMax, NRxQSetsMax int
	NTxd                     [MaxQueuesPerSet]int // isc_ntxd: descriptors per TX ring (iflib sets; a power of two)
	NRxd                     [MaxQueuesPerSet]int // isc_nrxd: descriptors per RX ring
	// TxQSizes and RxQSizes are isc_txqsizes and isc_rxqsizes: the bytes
	// of ring memory iflib allocates per ring (0: NTxd × TxdSize).
	TxQSizes [MaxQueuesPerSet]int
	RxQSizes [MaxQueuesPerSet]int
	// TxdSize and RxdSize are isc_txd_size and isc_rxd_size: bytes per
	// descriptor; iflib checks the ring memory holds NTxd of them.
	TxdSize [MaxQueuesPerSet]int
	RxdSize [MaxQueuesPerSet]int
	// TxNSegments is isc_tx_nsegments: the most buffers (descriptors) one
	// packet may use; clamped to ntxd/12 and to MaxTxSegs (required). The
	// TX ring must hold one such packet and the pad.
	TxNSegments int
	// TxTSOSegmentsMax is isc_tx_tso_segments_max: the same for TSO
	// packets, clamped likewise (0: no TSO).
	TxTSOSegmentsMax int
	TxTSOSizeMax     int // isc_tx_tso_size_max: the largest TSO payload (informational; ≥ 0)
	TxTSOSegSizeMax  int // isc_tx_tso_segsize_max: the most bytes per TSO descriptor (informational; ≥ 0)
	// TxPad is isc_tx_pad: descriptors beyond nsegs a packet may use
	// (sentinels, context descriptors); iflib sets 2 before AttachPre, a
	// driver may change it (0..MaxTxSegs).
	TxPad       int
	TxCsumFlags CsumFlags // isc_tx_csum_flags: the checksum offloads the hardware does
	// RSSTableSize is isc_rss_table_size: the RSS indirection table size,
	// whose mask picks a TX queue from a flow id (0: 64).
	RSSTableSize int
	// RxdBufSize is isc_rxd_buf_size: the RX buffer (cluster) size of free
	// list j, 0..MJUM16BYTES, pulled up to MCLBYTES or, for anything
	// larger, MJUMPAGESIZE (iflib_get_mbuf_size_for: a jumbo frame spans
	// several buffers); 0: from MaxFrameSize likewise. The driver programs
	// its device with the size iflib chose (Context.RxBufSize, or
	// RxdUpdate.BufSize).
	RxdBufSize [MaxQueuesPerSet]int
	// MaxFrameSize is isc_max_frame_size: the largest frame on the wire,
	// counting the Ethernet header and the 4-byte FCS but not a VLAN tag
	// (0: 1518 = ETHERMTU + ETHER_HDR_LEN + ETHER_CRC_LEN; em_if_mtu_set
	// sets MTU + 18). The MTU is MaxFrameSize − 18 (Context.MTU). A frame
	// of MaxFrameSize plus a tag must fit in MaxRxSegs buffers.
	MaxFrameSize int
	// MinFrameSize is isc_min_frame_size: runts are padded to it with
	// IFLIB_NEED_ETHER_PAD (0..min(MaxFrameSize, MCLBYTES)).
	MinFrameSize int
	DMAWidth     int  // isc_dma_width: the device's DMA address bits (0: 64)
	TxRx         TxRx // isc_txrx: the fast-path methods (required)
	// Capabilities is isc_capabilities (if_capabilities): the IFCAP_* the
	// device offers. A capability it lacks cannot be enabled
	// (Context.SetCapEnable), and Transmit refuses a packet asking for an
	// offload that is not enabled.
	Capabilities Capabilities
	// CapEnable is isc_capenable: the capabilities enabled at attach, a
	// subset of Capabilities (else a *ConfigError).
	CapEnable Capabilities
}

// TxMode selects the transmit path of a context.
type TxMode int

const (
	// TxModeMPRing is iflib_if_transmit: an mp_ring of 2048 per queue whose
	// consumer is the encap loop; a full ring drops. FreeBSD's default.
	TxModeMPRing TxMode = iota
	// TxModeSimple is iflib_simple_transmit: a mutex per queue, encap
	// directly, a doorbell per packet, opportunistic reclaim.
	TxModeSimple
	// TxModeDRBR is simple_tx with buf_ring (drbr) deferral, on
	// bufring.DRBR: a sender that finds the queue busy leaves its packet
	// in a buf_ring for the lock holder instead of waiting; a full
	// buf_ring blocks the sender instead of dropping.
	TxModeDRBR
)

func (m TxMode) String() string {
	switch m {
	case TxModeMPRing:
		return "mpring"
	case TxModeSimple:
		return "simple"
	case TxModeDRBR:
		return "drbr"
	}
	return fmt.Sprintf("TxMode(%d)", int(m))
}

// Config holds iflib's tunables for one context (the dev.<driver>.<unit>.iflib.*
// and net.iflib.* sysctls). The zero value is FreeBSD's defaults. Every
// field follows one convention, as net.Dialer does: 0 means the documented
// default, a negative value means off where a field can be off (and is a
// *ConfigError where it cannot). Register resolves the defaults once:
// Context.Config and the sysctl tree show the values in force.
//
// What a driver must set: nothing here. A driver sets its SharedCtx and,
// in IFDI_ATTACH_PRE, its SoftcCtx; Config is the operator's.
type Config struct {
	Unit int // the unit number in dev.<driver>.<unit>

	TxMode     TxMode // the transmit path (simple_tx and drbr); default mpring
	TxAbdicate bool   // tx_abdicate (mpring): the producer hands the drain to the TX task
	// DRBRMaxProducers is net.iflib.simple_max_producers in drbr mode: how
	// many senders may defer into the buf_ring while the lock is held
	// (0: bufring.DefaultMaxProducers, 1; negative: none, every sender
	// waits for the lock).
	DRBRMaxProducers int
	// DRBRDrainQuota is net.iflib.simple_drain_quota: the most packets one
	// pass of the TX task sends from the buf_ring (0: bufring.DefaultDrainQuota, 8).
	DRBRDrainQuota int
	// DRBRSize is the buf_ring size in drbr mode, a power of two
	// (0: DefaultDRBRSize, bufring's default).
	DRBRSize        int
	MinTxLatency    bool // net.iflib.min_tx_latency: ring the doorbell for every packet
	NoTxBatch       bool // net.iflib.no_tx_batch: request a completion report for every packet
	TxReclaimThresh int  // tx_reclaim_thresh: descriptors reclaim leaves (0..ntxd/2)
	// RxBudget is rx_budget: packets per rxeof pass (0: DefaultRxBudget, 16).
	RxBudget      int
	OverrideNTxQs int                  // override_ntxqs: fewer TX queue sets than the driver offers (0: the driver's)
	OverrideNRxQs int                  // override_nrxqs
	OverrideNTxds [MaxQueuesPerSet]int // override_ntxds: TX ring sizes (0: the driver's default)
	OverrideNRxds [MaxQueuesPerSet]int // override_nrxds

	// CoreOffset is core_offset: the CPU the queues' placement starts at.
	// 0: automatic (CORE_OFFSET_UNSPECIFIED: later devices continue where
	// earlier ones stopped, review D24094); n > 0: start at CPU n;
	// negative: start at CPU 0 without the shared registry (FreeBSD's
	// explicit core_offset=0).
	CoreOffset      int
	SeparateTxRx    bool // separate_txrx: TX queues on other CPUs than RX
	UseLogicalCores bool // use_logical_cores: use SMT siblings
	// PinTasks pins each queue task's OS thread to its placed CPU.
	PinTasks bool
	// Poll runs the queue tasks in poll mode every PollInterval instead of
	// waiting for the device's interrupts.
	Poll bool
	// PollInterval is the poll period (0: DefaultPollInterval, 20µs).
	PollInterval time.Duration
	// Prefetch is IFC_PREFETCH: the prefetch points of the drain and of RX.
	// Off by default: review D53674 removed TX prefetching after measuring
	// it cost bandwidth, and the RX ones are kept only where measured to
	// help. FreeBSD instead turns it on for links of 10 Gb/s and more
	// (iflib_link_state_change); here measurements decide.
	Prefetch bool
	// TimerInterval is iflib_timer's period (net.iflib.timer_default, hz/2):
	// the TX watchdog, IFDI_TIMER and the laggard kick
	// (0: DefaultTimerInterval, 500 ms).
	TimerInterval time.Duration
	// TxWatchdogPeriods is tx_watchdog_periods: timer periods a TX queue may
	// hold work the device does not complete, link up, before the
	// interface is reset (0: DefaultTxWatchdogPeriods, 4; negative: no
	// watchdog).
	TxWatchdogPeriods int
	// StopTimeout bounds Stop's wait for transmits in progress to leave
	// the TX queues, and Init's and Detach's wait for a queue a transmit
	// still held after Stop (0: DefaultStopTimeout, 1 s). A transmit ends in
	// bounded time unless a driver method or callback blocks against its
	// contract; whatever the timeout, no queue is freed while a sender
	// holds it.
	StopTimeout time.Duration
	// CopyThresh is IFLIB_RX_COPY_THRESH: frames of at most this many bytes
	// in one buffer are copied and their cluster reposted
	// (0: RxCopyThresh, 128; negative: never copy).
	CopyThresh int
	// NoRxReuse turns off the D17901 ifsd_ba reuse (for the comparison):
	// every refill loads its cluster anew.
	NoRxReuse bool
	// RxPerPacket delivers RX packets to the input callback one at a time
	// instead of one batch per rxeof pass (D27755's comparison): the pass
	// still takes its whole budget and refills first, then calls Input once
	// per packet.
	RxPerPacket bool
	// RxPerPacketInput delivers each received packet to the input callback
	// from inside the rxeof loop, as it is taken from the ring (a
	// one-element slice, no batch accumulation), before the next packet is
	// read and before the pass refills: if_input per mbuf, the delivery
	// that batching (D27755) replaces. Order and counts are those of
	// batched delivery; rx_if_input counts one call per packet. It takes
	// precedence over RxPerPacket, and cannot be combined with RxSortByFlow
	// (there is no batch to sort): a *ConfigError. Off by default (one Input
	// call per pass).
	RxPerPacketInput bool
	// RxSortByFlow sorts each batch by flow id, keeping order within a flow
	// (as tcp_lro_queue_mbuf's sort does).
	RxSortByFlow bool
	// RxZoneSize is the number of clusters in each free list's zone
	// (0: DefaultRxZoneSize(nrxd), 2 × nrxd + 1024).
	RxZoneSize int
}

// Bounds of the numeric parameters (every one is checked at Register; a
// value outside its bound is a *ConfigError naming the field).
const (
	// MaxRingSize bounds every descriptor ring (ntxd, nrxd and their
	// min/max/default/override): FreeBSD's ring indices are qidx_t, a
	// uint16_t.
	MaxRingSize = 1 << 16
	// MaxRingBytes bounds one ring's memory (isc_txqsizes/isc_rxqsizes).
	MaxRingBytes = 1 << 30
	// MaxQueueSets bounds isc_ntxqsets_max and isc_nrxqsets_max: more
	// queue sets than any NIC has interrupt vectors for.
	MaxQueueSets = 1024
	// MaxQAlign bounds isc_q_align.
	MaxQAlign = 1 << 16
	// MaxRxBudget is the largest rx_budget (ifc_sysctl_rx_budget is a
	// uint16_t).
	MaxRxBudget = 1<<16 - 1
	// MinTxMaxSize is the smallest isc_tx_maxsize and isc_tso_maxsize: a
	// minimum Ethernet frame without its FCS (ETHER_MIN_LEN − ETHER_CRC_LEN).
	MinTxMaxSize = 60
	// MaxTxMaxSize bounds the TX and RX tag sizes and segment sizes: four
	// times a 64 KB TSO packet.
	MaxTxMaxSize = 1 << 18
	// MinTxSegSize is the smallest isc_tx_maxsegsize and
	// isc_tso_maxsegsize: below it a full-size frame needs more segments
	// than any descriptor budget (a 9000-byte frame in 256-byte pieces is
	// already 36 descriptors).
	MinTxSegSize = 256
	// MaxRSSTableSize bounds isc_rss_table_size: iflib keeps an RSS
	// indirection table of that many entries (RSSConfig.Table); the
	// largest NIC tables hold a few thousand.
	MaxRSSTableSize = 1 << 16
	// MaxDRBRSize is the largest drbr-mode buf_ring (the size of a
	// descriptor ring at most: a buf_ring deeper than the ring it feeds
	// only queues latency).
	MaxDRBRSize = MaxRingSize
	// etherVLANEncapLen is ETHER_VLAN_ENCAP_LEN: a VLAN tag's 4 bytes,
	// which isc_max_frame_size does not include.
	etherVLANEncapLen = 4
)

// resolveConfig replaces every zero with its default and checks the
// ranges, once, at Register (after AttachPre: some bounds depend on the
// ring sizes).
func (c *Context) resolveConfig() error {
	cfg := &c.cfg
	for _, f := range []struct {
		name string
		v    int
	}{
		{"RxBudget", cfg.RxBudget}, {"RxZoneSize", cfg.RxZoneSize}, {"DRBRSize", cfg.DRBRSize},
		{"DRBRDrainQuota", cfg.DRBRDrainQuota}, {"OverrideNTxQs", cfg.OverrideNTxQs}, {"OverrideNRxQs", cfg.OverrideNRxQs},
		{"PollInterval", int(cfg.PollInterval)}, {"TimerInterval", int(cfg.TimerInterval)}, {"StopTimeout", int(cfg.StopTimeout)},
	} {
		if f.v < 0 {
			return cfgErr(f.name, f.v, "must not be negative")
		}
	}
	orDefault(&cfg.RxBudget, DefaultRxBudget)
	orDefault(&cfg.RxZoneSize, DefaultRxZoneSize(c.sc.NRxd[0]))
	orDefault(&cfg.DRBRSize, DefaultDRBRSize)
	orDefault(&cfg.DRBRDrainQuota, bufring.DefaultDrainQuota)
	orDefault(&cfg.DRBRMaxProducers, bufring.DefaultMaxProducers)
	orDefault(&cfg.TxWatchdogPeriods, DefaultTxWatchdogPeriods)
	orDefault(&cfg.CopyThresh, RxCopyThresh)
	orDefault(&cfg.PollInterval, DefaultPollInterval)
	orDefault(&cfg.TimerInterval, DefaultTimerInterval)
	orDefault(&cfg.StopTimeout, DefaultStopTimeout)
	switch {
	case cfg.RxBudget > MaxRxBudget:
		return cfgErr("RxBudget", cfg.RxBudget, fmt.Sprintf("must be at most %d (rx_budget is a uint16_t)", MaxRxBudget))
	case !isPow2(cfg.DRBRSize) || cfg.DRBRSize < 2 || cfg.DRBRSize > MaxDRBRSize:
		return cfgErr("DRBRSize", cfg.DRBRSize, fmt.Sprintf("must be a power of two in [2, %d]", MaxDRBRSize))
	case cfg.TxReclaimThresh < 0 || cfg.TxReclaimThresh > c.sc.NTxd[0]/2:
		return cfgErr("TxReclaimThresh", cfg.TxReclaimThresh, "must be 0..ntxd/2")
	case cfg.TxMode < TxModeMPRing || cfg.TxMode > TxModeDRBR:
		return cfgErr("TxMode", cfg.TxMode, "unknown mode")
	case cfg.RxPerPacketInput && cfg.RxSortByFlow:
		return cfgErr("RxPerPacketInput", true, "delivers each packet as it is taken: there is no batch for RxSortByFlow to sort")
	}
	return nil
}

// DefaultRxZoneSize is Config.RxZoneSize's default for free lists of nrxd
// descriptors: enough clusters to fill the ring twice and lend the stack
// 1024 packets. A driver that provides the memory (a UMEM) sizes it with
// this.
func DefaultRxZoneSize(nrxd int) int { return 2*nrxd + 1024 }

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// orDefault sets *v to d when it is zero (the Config convention).
func orDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// resolveShared fills the shared context's defaults and checks it
// (_iflib_assert). FreeBSD asserts power-of-two ring defaults only; min
// and max need not be.
func resolveShared(s *SharedCtx) error {
	def := orDefault[int]
	def(&s.QAlign, pageSize)
	def(&s.NFL, 1)
	def(&s.NTxQs, 1)
	def(&s.NRxQs, 1)
	def(&s.TxMaxSize, 65535)
	def(&s.TxMaxSegSize, pageSize)
	def(&s.TSOMaxSegSize, s.TxMaxSegSize)
	def(&s.RxNSegments, 1)
	for _, f := range []struct {
		name string
		v    int
	}{
		{"TxMaxSize", s.TxMaxSize}, {"TxMaxSegSize", s.TxMaxSegSize}, {"TSOMaxSize", s.TSOMaxSize},
		{"TSOMaxSegSize", s.TSOMaxSegSize}, {"RxMaxSize", s.RxMaxSize}, {"RxMaxSegSize", s.RxMaxSegSize},
		{"RxNSegments", s.RxNSegments},
	} {
		if f.v < 0 {
			return cfgErr(f.name, f.v, "must not be negative")
		}
	}
	for _, f := range []struct {
		name     string
		v, lo    int
		zeroOK   bool
		loReason string
	}{
		{"TxMaxSize", s.TxMaxSize, MinTxMaxSize, false, "a minimum frame"},
		{"TSOMaxSize", s.TSOMaxSize, MinTxMaxSize, true, "a minimum frame"},
		{"TxMaxSegSize", s.TxMaxSegSize, MinTxSegSize, false, "MinTxSegSize"},
		{"TSOMaxSegSize", s.TSOMaxSegSize, MinTxSegSize, false, "MinTxSegSize"},
		{"RxMaxSize", s.RxMaxSize, 0, true, ""},
		{"RxMaxSegSize", s.RxMaxSegSize, 0, true, ""},
	} {
		if (f.v != 0 || !f.zeroOK) && (f.v < f.lo || f.v > MaxTxMaxSize) {
			return cfgErr(f.name, f.v, fmt.Sprintf("must be %d..%d (at least %s)", f.lo, MaxTxMaxSize, f.loReason))
		}
	}
	switch {
	case s.RxNSegments > MaxRxSegs:
		return cfgErr("RxNSegments", s.RxNSegments, fmt.Sprintf("must be 1..%d (IFLIB_MAX_RX_SEGS)", MaxRxSegs))
	case s.DriverName == "":
		return cfgErr("DriverName", "", "empty: the driver must name itself")
	case s.NTxQs < 1 || s.NTxQs > MaxQueuesPerSet:
		return cfgErr("NTxQs", s.NTxQs, "must be 1..8")
	case s.NRxQs < 1 || s.NRxQs > MaxQueuesPerSet:
		return cfgErr("NRxQs", s.NRxQs, "must be 1..8")
	case s.Flags&(FlagHasRxCQ|FlagHasTxCQ) != 0:
		return cfgErr("Flags", s.Flags, "completion-queue layouts (IFLIB_HAS_RXCQ/TXCQ) are not modelled")
	case !isPow2(s.QAlign) || s.QAlign > MaxQAlign:
		return cfgErr("QAlign", s.QAlign, fmt.Sprintf("must be a power of two up to %d", MaxQAlign))
	case s.NFL < 0 || s.NFL > s.NRxQs:
		return cfgErr("NFL", s.NFL, "more free lists than RX rings")
	}
	rings := func(dir string, n int, mins, maxs, defs *[MaxQueuesPerSet]int) error {
		for j := 0; j < n; j++ {
			def(&mins[j], 64)
			def(&maxs[j], 4096)
			def(&defs[j], 1024)
			if mins[j] < 0 || maxs[j] < mins[j] || maxs[j] > MaxRingSize {
				return cfgErr(fmt.Sprintf("N%sd{Min,Max}[%d]", dir, j), fmt.Sprint(mins[j], "..", maxs[j]),
					fmt.Sprintf("must be positive with min ≤ max ≤ %d", MaxRingSize))
			}
			if !isPow2(defs[j]) || defs[j] > MaxRingSize {
				return cfgErr(fmt.Sprintf("N%sdDefault[%d]", dir, j), defs[j], fmt.Sprintf("must be a power of two up to %d", MaxRingSize))
			}
		}
		return nil
	}
	if err := rings("Tx", s.NTxQs, &s.NTxdMin, &s.NTxdMax, &s.NTxdDefault); err != nil {
		return err
	}
	return rings("Rx", s.NRxQs, &s.NRxdMin, &s.NRxdMax, &s.NRxdDefault)
}

// resetQValues is iflib_reset_qvalues: ring sizes from the overrides or
// the defaults, clamped to [min, max]. Unlike FreeBSD, which silently falls
// back to the default for an override that is not a power of two, we
// reject it with a ConfigError: a user who asked for a size should learn it
// was not taken. An override beyond [min, max] is clamped, as FreeBSD does.
func resetQValues(s *SharedCtx, cfg *Config, sc *SoftcCtx) error {
	sc.TxPad = TxPad
	sizes := func(dir string, n int, defs, mins, maxs, overrides, out *[MaxQueuesPerSet]int) error {
		for j := 0; j < n; j++ {
			v := defs[j]
			if o := overrides[j]; o != 0 {
				if !isPow2(o) {
					return cfgErr(fmt.Sprintf("OverrideN%sds[%d]", dir, j), o, "not a power of two")
				}
				v = o
			}
			out[j] = min(max(v, mins[j]), maxs[j])
		}
		return nil
	}
	if err := sizes("Tx", s.NTxQs, &s.NTxdDefault, &s.NTxdMin, &s.NTxdMax, &cfg.OverrideNTxds, &sc.NTxd); err != nil {
		return err
	}
	return sizes("Rx", s.NRxQs, &s.NRxdDefault, &s.NRxdMin, &s.NRxdMax, &cfg.OverrideNRxds, &sc.NRxd)
}

// validateSoftc is _iflib_pre_assert plus the checks and clamps of
// iflib_device_register after IFDI_ATTACH_PRE. The driver may have
// changed anything in AttachPre, so everything is checked again here.
func validateSoftc(s *SharedCtx, cfg *Config, sc *SoftcCtx) error {
	if sc.TxRx == nil {
		return cfgErr("TxRx", nil, "the driver must set isc_txrx")
	}
	switch {
	case sc.NTxQSetsMax <= 0 || sc.NTxQSetsMax > MaxQueueSets:
		return cfgErr("NTxQSetsMax", sc.NTxQSetsMax, fmt.Sprintf("must be 1..%d", MaxQueueSets))
	case sc.NRxQSetsMax <= 0 || sc.NRxQSetsMax > MaxQueueSets:
		return cfgErr("NRxQSetsMax", sc.NRxQSetsMax, fmt.Sprintf("must be 1..%d", MaxQueueSets))
	}
	// Documented clamps: 0, a negative count or one above the maximum is
	// the maximum; an override only lowers it.
	if sc.NTxQSets <= 0 || sc.NTxQSets > sc.NTxQSetsMax {
		sc.NTxQSets = sc.NTxQSetsMax
	}
	if sc.NRxQSets <= 0 || sc.NRxQSets > sc.NRxQSetsMax {
		sc.NRxQSets = sc.NRxQSetsMax
	}
	if o := cfg.OverrideNTxQs; o > 0 && o < sc.NTxQSets {
		sc.NTxQSets = o
	}
	if o := cfg.OverrideNRxQs; o > 0 && o < sc.NRxQSets {
		sc.NRxQSets = o
	}
	for j := 0; j < s.NTxQs; j++ {
		if err := ringBytes(&sc.TxQSizes[j], sc.TxdSize[j], sc.NTxd[j], "Tx", j); err != nil {
			return err
		}
	}
	for j := 0; j < s.NRxQs; j++ {
		if err := ringBytes(&sc.RxQSizes[j], sc.RxdSize[j], sc.NRxd[j], "Rx", j); err != nil {
			return err
		}
	}
	switch {
	case sc.TxNSegments <= 0:
		return cfgErr("TxNSegments", sc.TxNSegments, "must be positive")
	case sc.TxTSOSegmentsMax < 0:
		return cfgErr("TxTSOSegmentsMax", sc.TxTSOSegmentsMax, "must not be negative (0: no TSO)")
	case sc.TxTSOSizeMax < 0:
		return cfgErr("TxTSOSizeMax", sc.TxTSOSizeMax, "must not be negative")
	case sc.TxTSOSegSizeMax < 0:
		return cfgErr("TxTSOSegSizeMax", sc.TxTSOSegSizeMax, "must not be negative")
	case sc.TxPad < 0 || sc.TxPad > MaxTxSegs:
		return cfgErr("TxPad", sc.TxPad, fmt.Sprintf("must be 0..%d", MaxTxSegs))
	}
	// The segment clamps: one packet may never take more than 1/12 of the
	// ring (iflib_device_register), nor more than ift_segs holds
	// (IFLIB_MAX_TX_SEGS).
	clamp := min(max(1, sc.NTxd[0]/MaxSinglePacketFraction), MaxTxSegs)
	sc.TxNSegments = min(sc.TxNSegments, clamp)
	sc.TxTSOSegmentsMax = min(sc.TxTSOSegmentsMax, clamp)
	if n := sc.NTxd[0]; n-sc.TxPad <= max(sc.TxNSegments, sc.TxTSOSegmentsMax) {
		return cfgErr("NTxd[0]", n, fmt.Sprintf("too small to hold one packet of %d descriptors and the pad of %d",
			max(sc.TxNSegments, sc.TxTSOSegmentsMax), sc.TxPad))
	}
	if sc.RSSTableSize == 0 {
		sc.RSSTableSize = DefaultRSSTableSize
	}
	if !isPow2(sc.RSSTableSize) || sc.RSSTableSize > MaxRSSTableSize {
		return cfgErr("RSSTableSize", sc.RSSTableSize, fmt.Sprintf("must be a power of two up to %d", MaxRSSTableSize))
	}
	if sc.CapEnable&^sc.Capabilities != 0 {
		return cfgErr("CapEnable", sc.CapEnable, fmt.Sprintf("enables %v, which Capabilities %v does not offer",
			sc.CapEnable&^sc.Capabilities, sc.Capabilities))
	}
	if sc.DMAWidth < 0 || sc.DMAWidth > 64 {
		return cfgErr("DMAWidth", sc.DMAWidth, "must be 0..64")
	}
	if sc.MaxFrameSize < 0 {
		return cfgErr("MaxFrameSize", sc.MaxFrameSize, "must not be negative (0: 1518)")
	}
	if sc.MaxFrameSize == 0 {
		sc.MaxFrameSize = 1518
	}
	if sc.MinFrameSize < 0 || sc.MinFrameSize > min(sc.MaxFrameSize, MCLBytes) {
		return cfgErr("MinFrameSize", sc.MinFrameSize, "must be 0..min(MaxFrameSize, MCLBYTES)")
	}
	nfl := max(s.NFL, 1)
	for j := 0; j < nfl; j++ {
		b := sc.RxdBufSize[j]
		if b < 0 || b > MJum16Bytes {
			return cfgErr(fmt.Sprintf("RxdBufSize[%d]", j), b, fmt.Sprintf("must be 0..%d (MJUM16BYTES)", MJum16Bytes))
		}
		if b != 0 {
			// iflib_fl_setup: "pull it up to the selected mbuf size" with
			// iflib_get_mbuf_size_for: MCLBYTES, or MJUMPAGESIZE for
			// anything larger (a jumbo frame spans several buffers).
			sc.RxdBufSize[j] = rxBufSizeFor(b)
		}
		// The largest frame, with a VLAN tag (isc_max_frame_size does not
		// count it), must fit the buffers one packet may use.
		buf := sc.RxdBufSize[j]
		if buf == 0 {
			buf = rxBufSizeFor(sc.MaxFrameSize)
		}
		if sc.MaxFrameSize > MaxRxSegs*buf-etherVLANEncapLen {
			return cfgErr("MaxFrameSize", sc.MaxFrameSize, fmt.Sprintf(
				"a frame of %d bytes with a VLAN tag needs more than %d (IFLIB_MAX_RX_SEGS) buffers of %d bytes",
				sc.MaxFrameSize, MaxRxSegs, buf))
		}
	}
	return nil
}

// ringBytes checks ring j's descriptor count (a power of two up to
// MaxRingSize) and resolves and checks isc_{tx,rx}qsizes[j]: derived from
// the descriptor size when the driver left it 0, never smaller than the
// descriptors need, never above MaxRingBytes.
func ringBytes(bytes *int, descSize, ndesc int, dir string, j int) error {
	if !isPow2(ndesc) || ndesc > MaxRingSize {
		return cfgErr(fmt.Sprintf("N%sd[%d]", dir, j), ndesc, fmt.Sprintf("must be a power of two up to %d", MaxRingSize))
	}
	if descSize < 0 || descSize > MaxRingBytes/ndesc {
		return cfgErr(fmt.Sprintf("%sdSize[%d]", dir, j), descSize,
			fmt.Sprintf("must be 0..%d (%d descriptors in at most %d bytes)", MaxRingBytes/ndesc, ndesc, MaxRingBytes))
	}
	if *bytes == 0 && descSize > 0 {
		*bytes = descSize * ndesc
	}
	switch {
	case *bytes <= 0 || *bytes > MaxRingBytes:
		return cfgErr(fmt.Sprintf("%sQSizes[%d]", dir, j), *bytes,
			fmt.Sprintf("must be 1..%d (or set %sdSize[%d] and iflib derives it)", MaxRingBytes, dir, j))
	case *bytes < descSize*ndesc:
		return cfgErr(fmt.Sprintf("%sQSizes[%d]", dir, j), *bytes,
			fmt.Sprintf("ring memory too small for %d descriptors of %d bytes (%d needed)", ndesc, descSize, descSize*ndesc))
	}
	return nil
}

// rxBufSizeFor is iflib_get_mbuf_size_for: MCLBYTES if the size fits,
// else MJUMPAGESIZE (larger frames span several buffers). FreeBSD never
// uses the 9 KB and 16 KB cluster zones for its free lists.
func rxBufSizeFor(size int) int {
	if size <= MCLBytes {
		return MCLBytes
	}
	return MJumPageSize
}
