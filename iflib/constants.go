package iflib

import (
	"time"

	"github.com/goiflib/goiflib/bufring"
)

// Specification constants: values fixed by FreeBSD's sys/net/iflib.c and
// sys/net/iflib.h (FreeBSD main of late 2025 unless noted; the sources are
// listed in docs/freebsd.md).
const (
	// MaxTxSegs is IFLIB_MAX_TX_SEGS: the size of txq->ift_segs.
	MaxTxSegs = 128
	// RxCopyThresh is IFLIB_RX_COPY_THRESH: frames of at most this many bytes
	// in one fragment are copied into a fresh packet and their cluster stays
	// mapped in its slot (the D17901 reuse path).
	RxCopyThresh = 128
	// MaxRxRefresh is IFLIB_MAX_RX_REFRESH: buffers per RxdRefill call.
	MaxRxRefresh = 32
	// MaxRxSegs is IFLIB_MAX_RX_SEGS: fragments per received packet.
	MaxRxSegs = 64
	// DefaultTxUpdateFreq is IFLIB_DEFAULT_TX_UPDATE_FREQ, used by
	// TXD_NOTIFY_COUNT = size/16 - 1.
	DefaultTxUpdateFreq = 16
	// TxBatchSize is TX_BATCH_SIZE: items per mp_ring drain and the enqueue
	// budget.
	TxBatchSize = 32
	// RestartBudget is IFLIB_RESTART_BUDGET: the check_drainage budget of the
	// admin task and resume.
	RestartBudget = 8
	// MaxSinglePacketFraction is MAX_SINGLE_PACKET_FRACTION: a packet may use
	// at most ntxd/12 descriptors (the segment clamp in iflib_device_register).
	MaxSinglePacketFraction = 12
	// MPRingSize is the fixed ifmp_ring_alloc size in iflib_queues_alloc.
	MPRingSize = 2048
	// DefaultRxBudget is the _task_fn_rx budget when rx_budget is 0.
	DefaultRxBudget = 16
	// InitialRxFill is the cap on buffers posted by iflib_fl_setup:
	// min(128, ifl_size-1).
	InitialRxFill = 128
	// TxPad is isc_tx_pad as forced by iflib_reset_qvalues: descriptors a
	// driver may use beyond nsegs (sentinels, context descriptors).
	TxPad = 2
	// DefaultRSSTableSize is the isc_rss_table_size default.
	DefaultRSSTableSize = 64
	// MaxQueuesPerSet is the bound on isc_ntxqs/isc_nrxqs (1..8).
	MaxQueuesPerSet = 8
	// BadDMA is IF_BAD_DMA, (bus_addr_t)-1.
	BadDMA = ^uint64(0)
)

// Implementation constants: knobs of this model, not of FreeBSD.
const (
	// pageSize is PAGE_SIZE on the machines iflib's sizes assume (4 KiB).
	pageSize = 4096
	// DefaultTimerInterval is iflib_timer's period: net.iflib.timer_default
	// is set to hz/2 at module load.
	DefaultTimerInterval = 500 * time.Millisecond
	// DefaultTxWatchdogPeriods is net.iflib.tx_watchdog_periods of the newer
	// watchdog design: timer periods a queue may sit with work handed to
	// the device and no completion before it is declared hung.
	DefaultTxWatchdogPeriods = 4
	// DefaultPollInterval is the queue tasks' period in poll mode.
	DefaultPollInterval = 20 * time.Microsecond
	// DefaultStopTimeout bounds how long Stop waits for transmits in
	// progress (each ends in bounded time; the bound covers a driver method
	// or callback that blocks against its contract).
	DefaultStopTimeout = time.Second
	// DefaultDRBRSize is the drbr-mode buf_ring size (net.iflib.simple_txbr_size
	// in the newest FreeBSD main, whose default could not be checked):
	// bufring's default. A deeper buf_ring only holds packets that wait
	// behind a full descriptor ring, cache-cold by the time the device
	// reads them (bufring.DefaultDRBRSize's doc has the measurement). The
	// other drbr defaults are bufring's too (bufring.DefaultMaxProducers,
	// bufring.DefaultDrainQuota).
	DefaultDRBRSize = bufring.DefaultDRBRSize
)
