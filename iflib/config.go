package iflib

import (
	"fmt"
	"time"

	"github.com/goiflib/goiflib/busdma"
)

// SharedFlags are if_shared_ctx isc_flags (IFLIB_*). Only the flags this
// model acts on are defined.
type SharedFlags uint32

const (
	FlagHasRxCQ       SharedFlags = 0x01  // IFLIB_HAS_RXCQ (not modelled: rejected)
	FlagHasTxCQ       SharedFlags = 0x08  // IFLIB_HAS_TXCQ (not modelled: rejected)
	FlagNeedEtherPad  SharedFlags = 0x100 // IFLIB_NEED_ETHER_PAD: pad runts to MinFrameSize
	FlagPreserveTxIdx SharedFlags = 0x200000
)

// SharedCtx is struct if_shared_ctx: static per driver.
type SharedCtx struct {
	DriverName    string // device name used in sysctl paths (dev.<name>.<unit>)
	DriverVersion string // isc_driver_version
	QAlign        int    // isc_q_align: descriptor-ring alignment (default 4096)
	TxMaxSize     int    // isc_tx_maxsize
	TxMaxSegSize  int    // isc_tx_maxsegsize
	TSOMaxSize    int    // isc_tso_maxsize (0: no TSO tag)
	TSOMaxSegSize int    // isc_tso_maxsegsize
	RxMaxSize     int    // isc_rx_maxsize
	RxMaxSegSize  int    // isc_rx_maxsegsize
	RxNSegments   int    // isc_rx_nsegments
	NTxdMin       [MaxQueuesPerSet]int
	NTxdMax       [MaxQueuesPerSet]int
	NTxdDefault   [MaxQueuesPerSet]int
	NRxdMin       [MaxQueuesPerSet]int
	NRxdMax       [MaxQueuesPerSet]int
	NRxdDefault   [MaxQueuesPerSet]int
	NFL           int         // isc_nfl: free lists per RX queue set (0 → 1)
	NTxQs         int         // isc_ntxqs: rings per TX queue set (1..8)
	NRxQs         int         // isc_nrxqs: rings per RX queue set (1..8)
	Flags         SharedFlags // isc_flags
}

// SoftcCtx is struct if_softc_ctx: per instance, filled by the driver in
// AttachPre (iflib has already put the ring sizes from the shared context
// and the overrides in NTxd/NRxd).
type SoftcCtx struct {
	NTxQSets, NRxQSets       int                  // isc_ntxqsets, isc_nrxqsets (0: the maximum)
	NTxQSetsMax, NRxQSetsMax int                  // isc_ntxqsets_max, isc_nrxqsets_max
	NTxd                     [MaxQueuesPerSet]int // isc_ntxd: descriptors per TX ring
	NRxd                     [MaxQueuesPerSet]int // isc_nrxd
	TxQSizes                 [MaxQueuesPerSet]int // isc_txqsizes: bytes per TX ring
	RxQSizes                 [MaxQueuesPerSet]int // isc_rxqsizes
	TxdSize                  [MaxQueuesPerSet]int // isc_txd_size: bytes per descriptor
	RxdSize                  [MaxQueuesPerSet]int // isc_rxd_size
	TxNSegments              int                  // isc_tx_nsegments (clamped to ntxd/12)
	TxTSOSegmentsMax         int                  // isc_tx_tso_segments_max (clamped likewise)
	TxTSOSizeMax             int                  // isc_tx_tso_size_max
	TxTSOSegSizeMax          int                  // isc_tx_tso_segsize_max
	TxPad                    int                  // isc_tx_pad: forced to TxPad (2)
	TxCsumFlags              CsumFlags            // isc_tx_csum_flags
	RSSTableSize             int                  // isc_rss_table_size (default 64)
	RxdBufSize               [MaxQueuesPerSet]int // isc_rxd_buf_size per free list (0: from MaxFrameSize)
	MaxFrameSize             int                  // isc_max_frame_size
	MinFrameSize             int                  // isc_min_frame_size (IFLIB_NEED_ETHER_PAD)
	DMAWidth                 int                  // isc_dma_width: address bits (0: no limit)
	TxRx                     TxRx                 // isc_txrx
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
	// TxModeDRBR is the producer-limited deferred simple_tx of seed 003, on
	// bufring.DRBR: blocks rather than drops.
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
// and net.iflib.* sysctls). The zero value is FreeBSD's defaults.
type Config struct {
	Unit int // the unit number in dev.<driver>.<unit>

	TxMode     TxMode // simple_tx (and the seed 003 drbr mode); default mpring
	TxAbdicate bool   // tx_abdicate (default 0)
	// SimpleMaxProducers is net.iflib.simple_max_producers for TxModeDRBR.
	// nil means DefaultSimpleMaxProducers (1); 0 means always take the lock.
	SimpleMaxProducers *int
	SimpleDrainQuota   int                  // net.iflib.simple_drain_quota (0: 8)
	DRBRSize           int                  // drbr ring size (0: DefaultDRBRSize)
	MinTxLatency       bool                 // net.iflib.min_tx_latency
	NoTxBatch          bool                 // net.iflib.no_tx_batch
	TxReclaimThresh    int                  // tx_reclaim_thresh (≤ ntxd/2)
	RxBudget           int                  // rx_budget (0: 16)
	OverrideNTxQs      int                  // override_ntxqs (0: driver)
	OverrideNRxQs      int                  // override_nrxqs (0: driver)
	OverrideNTxds      [MaxQueuesPerSet]int // override_ntxds (0: driver default)
	OverrideNRxds      [MaxQueuesPerSet]int // override_nrxds

	// CoreOffset is core_offset (nil: CORE_OFFSET_UNSPECIFIED, automatic).
	CoreOffset      *int
	SeparateTxRx    bool // separate_txrx
	UseLogicalCores bool // use_logical_cores
	// PinTasks pins each queue task's OS thread to its placed CPU.
	PinTasks bool
	// Poll runs the queue tasks in poll mode every PollInterval (default
	// 20µs) instead of waiting for the device's interrupts.
	Poll         bool
	PollInterval time.Duration
	// Prefetch is IFC_PREFETCH: the prefetch points of the drain and of RX.
	// Off by default (seed 002: measurements decide).
	Prefetch bool
	// TimerInterval is iflib_timer's period (net.iflib.timer_default, hz/2):
	// the laggard doorbell kick. Default 500ms.
	TimerInterval time.Duration
	// CopyThresh overrides IFLIB_RX_COPY_THRESH (0: 128; negative: never copy).
	CopyThresh int
	// NoRxReuse turns off the D17901 ifsd_ba reuse (for the comparison of
	// seed 000): every refill loads its cluster anew.
	NoRxReuse bool
	// RxPerPacket delivers RX packets to the input callback one at a time
	// instead of one batch per rxeof pass (seed 004's comparison).
	RxPerPacket bool
	// RxSortByFlow sorts each batch by flow id, keeping order within a flow
	// (as tcp_lro_queue_mbuf's sort does).
	RxSortByFlow bool
	// RxZoneSize is the number of clusters in each free list's zone
	// (0: 2 × nrxd + 1024).
	RxZoneSize int
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// lowAddrForWidth is DMA_WIDTH_TO_BUS_LOWADDR.
func lowAddrForWidth(width int) busdma.BusAddr {
	if width == 0 || width >= 64 {
		return busdma.MaxAddr
	}
	return busdma.BusAddr(1)<<uint(width) - 1
}

// validateShared is _iflib_assert.
func validateShared(s *SharedCtx) error {
	switch {
	case s == nil:
		return cfgErr("SharedCtx", nil, "nil")
	case s.DriverName == "":
		return cfgErr("DriverName", "", "empty")
	case s.TxMaxSize <= 0:
		return cfgErr("TxMaxSize", s.TxMaxSize, "must be positive")
	case s.TxMaxSegSize <= 0:
		return cfgErr("TxMaxSegSize", s.TxMaxSegSize, "must be positive")
	case s.RxMaxSize <= 0:
		return cfgErr("RxMaxSize", s.RxMaxSize, "must be positive")
	case s.RxNSegments <= 0:
		return cfgErr("RxNSegments", s.RxNSegments, "must be positive")
	case s.RxMaxSegSize <= 0:
		return cfgErr("RxMaxSegSize", s.RxMaxSegSize, "must be positive")
	case s.NTxQs < 1 || s.NTxQs > MaxQueuesPerSet:
		return cfgErr("NTxQs", s.NTxQs, "must be 1..8")
	case s.NRxQs < 1 || s.NRxQs > MaxQueuesPerSet:
		return cfgErr("NRxQs", s.NRxQs, "must be 1..8")
	case s.Flags&(FlagHasRxCQ|FlagHasTxCQ) != 0:
		return cfgErr("Flags", s.Flags, "completion-queue layouts (IFLIB_HAS_RXCQ/TXCQ) are not modelled")
	case s.QAlign < 0 || (s.QAlign != 0 && !isPow2(s.QAlign)):
		return cfgErr("QAlign", s.QAlign, "must be a power of two")
	}
	nfl := s.NFL
	if nfl == 0 {
		nfl = 1
	}
	if nfl > s.NRxQs {
		return cfgErr("NFL", s.NFL, "more free lists than RX rings")
	}
	for j := 0; j < s.NTxQs; j++ {
		for _, v := range []int{s.NTxdMin[j], s.NTxdMax[j], s.NTxdDefault[j]} {
			if !isPow2(v) {
				return cfgErr(fmt.Sprintf("NTxd{Min,Max,Default}[%d]", j), v, "must be a non-zero power of two")
			}
		}
	}
	for j := 0; j < s.NRxQs; j++ {
		for _, v := range []int{s.NRxdMin[j], s.NRxdMax[j], s.NRxdDefault[j]} {
			if !isPow2(v) {
				return cfgErr(fmt.Sprintf("NRxd{Min,Max,Default}[%d]", j), v, "must be a non-zero power of two")
			}
		}
	}
	return nil
}

// resetQValues is iflib_reset_qvalues: ring sizes from the overrides or
// the defaults, clamped to [min, max]. Unlike FreeBSD, which silently falls
// back to the default for an override that is not a power of two, we
// reject it with a ConfigError: a user who asked for a size should learn it
// was not taken.
func resetQValues(s *SharedCtx, cfg *Config, sc *SoftcCtx) error {
	sc.TxPad = TxPad
	for j := 0; j < s.NTxQs; j++ {
		v := s.NTxdDefault[j]
		if o := cfg.OverrideNTxds[j]; o != 0 {
			if !isPow2(o) {
				return cfgErr(fmt.Sprintf("OverrideNTxds[%d]", j), o, "not a power of two")
			}
			v = o
		}
		sc.NTxd[j] = min(max(v, s.NTxdMin[j]), s.NTxdMax[j])
	}
	for j := 0; j < s.NRxQs; j++ {
		v := s.NRxdDefault[j]
		if o := cfg.OverrideNRxds[j]; o != 0 {
			if !isPow2(o) {
				return cfgErr(fmt.Sprintf("OverrideNRxds[%d]", j), o, "not a power of two")
			}
			v = o
		}
		sc.NRxd[j] = min(max(v, s.NRxdMin[j]), s.NRxdMax[j])
	}
	return nil
}

// validateSoftc is _iflib_pre_assert plus the checks and clamps of
// iflib_device_register after IFDI_ATTACH_PRE.
func validateSoftc(s *SharedCtx, cfg *Config, sc *SoftcCtx) error {
	if sc.TxRx == nil {
		return cfgErr("TxRx", nil, "the driver must set isc_txrx")
	}
	if sc.NTxQSetsMax <= 0 || sc.NRxQSetsMax <= 0 {
		return cfgErr("N{Tx,Rx}QSetsMax", fmt.Sprint(sc.NTxQSetsMax, sc.NRxQSetsMax), "must be positive")
	}
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
		if !isPow2(sc.NTxd[j]) {
			return cfgErr(fmt.Sprintf("NTxd[%d]", j), sc.NTxd[j], "must be a power of two")
		}
		if sc.TxQSizes[j] <= 0 {
			return cfgErr(fmt.Sprintf("TxQSizes[%d]", j), sc.TxQSizes[j], "must be positive")
		}
	}
	for j := 0; j < s.NRxQs; j++ {
		if !isPow2(sc.NRxd[j]) {
			return cfgErr(fmt.Sprintf("NRxd[%d]", j), sc.NRxd[j], "must be a power of two")
		}
		if sc.RxQSizes[j] <= 0 {
			return cfgErr(fmt.Sprintf("RxQSizes[%d]", j), sc.RxQSizes[j], "must be positive")
		}
	}
	if sc.TxNSegments <= 0 {
		return cfgErr("TxNSegments", sc.TxNSegments, "must be positive")
	}
	// The segment clamp: one packet may never take more than 1/12 of the ring.
	clamp := max(1, sc.NTxd[0]/MaxSinglePacketFraction)
	sc.TxNSegments = min(sc.TxNSegments, clamp)
	if sc.TxTSOSegmentsMax > 0 {
		sc.TxTSOSegmentsMax = min(sc.TxTSOSegmentsMax, clamp)
	}
	if sc.RSSTableSize == 0 {
		sc.RSSTableSize = DefaultRSSTableSize
	}
	if !isPow2(sc.RSSTableSize) {
		return cfgErr("RSSTableSize", sc.RSSTableSize, "must be a power of two")
	}
	if sc.DMAWidth < 0 || sc.DMAWidth > 64 {
		return cfgErr("DMAWidth", sc.DMAWidth, "must be 0..64")
	}
	if sc.MaxFrameSize <= 0 {
		sc.MaxFrameSize = 1518
	}
	if r := cfg.TxReclaimThresh; r < 0 || r > sc.NTxd[0]/2 {
		return cfgErr("TxReclaimThresh", r, "must be 0..ntxd/2")
	}
	if cfg.RxBudget < 0 {
		return cfgErr("RxBudget", cfg.RxBudget, "must not be negative")
	}
	if cfg.SimpleDrainQuota < 0 {
		return cfgErr("SimpleDrainQuota", cfg.SimpleDrainQuota, "must not be negative")
	}
	if p := cfg.SimpleMaxProducers; p != nil && *p < 0 {
		return cfgErr("SimpleMaxProducers", *p, "must not be negative")
	}
	if n := cfg.DRBRSize; n != 0 && !isPow2(n) {
		return cfgErr("DRBRSize", n, "must be a power of two")
	}
	if cfg.TxMode < TxModeMPRing || cfg.TxMode > TxModeDRBR {
		return cfgErr("TxMode", cfg.TxMode, "unknown mode")
	}
	return nil
}

// rxBufSizeFor is iflib_get_mbuf_size_for: MCLBYTES if the frame fits,
// else MJUMPAGESIZE.
func rxBufSizeFor(frame int) int {
	if frame <= MCLBytes {
		return MCLBytes
	}
	return MJumPageSize
}
