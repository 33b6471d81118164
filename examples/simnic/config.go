package simnic

import (
	"fmt"
	"math"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/iflib"
)

// Config describes one simulated NIC. The zero value works: every zero
// field takes the default documented on it; a negative or impossible value
// is a *ConfigError from [New].
type Config struct {
	Name   string // busdma device name and driver unit name; default "simnic"
	Unit   int    // unit number (dev.simnic.<unit>); ≥ 0
	Queues int    // TX and RX queue sets; default 1, at most MaxQueues
	// NTxd and NRxd are the descriptors per ring; default 1024, between 2
	// and MaxRingSize. The device handles any size; iflib requires a power
	// of two and refuses others at Register.
	NTxd, NRxd int
	// RxBufSize is the RX cluster size; default 2048 (MCLBYTES). Between
	// 256 and 16384, the range of the legacy RCTL.BSIZE/BSEX encodings.
	RxBufSize int
	// MaxFrame is the largest frame the hardware takes, counting the
	// 4-byte FCS and not counting one 802.1Q tag, as isc_max_frame_size,
	// e1000's max_frame_size (MTU + ETHER_HDR_LEN + ETHER_CRC_LEN) and the
	// RLPML/MAXFRS.MFS registers count it ("VLAN tags are not included"):
	// default 9018, an MTU of 9000 (1518 is an MTU of 1500), between 64
	// and MaxFrameLimit. The model's frames carry no FCS, so the longest
	// frame on its wire is MaxFrame − 4 bytes, MaxFrame with a tag. It is
	// the ceiling of the max frame register the driver programs from the
	// MTU (NIC.SetMaxFrame; IFDI_MTU_SET). A received frame above the
	// register is dropped and counted (ROC: RxTooLong); a transmitted one
	// is refused by the driver and, if it reaches the device anyway,
	// dropped whole and counted (TxTooLong): never truncated.
	MaxFrame int
	// MAC is the station address the EEPROM holds (RAR 0 at power-up, the
	// address the driver gives iflib); default 02:00:00:00:00:02, the
	// destination of simnictest's frames. It must be unicast. Give NICs
	// that share a stack distinct addresses.
	MAC [6]byte
	// Abilities are the PHY's speeds and pause abilities (what
	// autonegotiation may advertise, and the media the driver lists);
	// default AbilitiesAll (10 Mb/s to 100 Gb/s, PAUSE and ASM_DIR). It
	// must hold a speed ability.
	Abilities Ability
	// FIFO is the receive FIFO in frames, a power of two; default 1024.
	// FIFO × MaxFrame bytes are allocated, at most MaxFIFOBytes.
	FIFO int
	// TxSegs is the segments per TX packet the driver allows
	// (isc_tx_nsegments); default 32, between 1 and 128 (IFLIB_MAX_TX_SEGS).
	TxSegs int
	// TSOSegs is the segments per TSO packet the driver allows
	// (isc_tx_tso_segments_max), reported only with Offload; default
	// TxSegs (em's rule: both are EM_MAX_SCATTER), between 1 and 128. Set
	// it above TxSegs for an ixl-like NIC (IXL_MAX_TX_SEGS 8,
	// IXL_MAX_TSO_SEGS 128), whose TSO packet may span more descriptors
	// than any other packet. iflib clamps both to NTxd/12.
	TSOSegs int
	Checker *busdma.Checker
	// LineRate is the wire speed in bits/s (with 20 bytes of preamble and
	// inter-frame gap and a 4-byte FCS per frame); 0 is unlimited, for
	// CPU-bound measurements. FrameRate caps frames/s likewise. Neither may
	// be negative, NaN or infinite.
	LineRate  float64
	FrameRate float64
	// ITR is the interrupt moderation interval: a queue raises at most one
	// interrupt per ITR (and stays masked until the driver re-enables it).
	// 0: no moderation; at most 1 s (an Intel ITR/EITR interval field
	// tops out at milliseconds).
	ITR time.Duration

	// The behaviour modes below make the device as hard on its driver as
	// real hardware can be; the package doc says what each models.

	// TxCompletion is how TX completions are reported and read: em's DD
	// bits with tx_rsq (default), the same with the historical under-report
	// by one, or ixl-style head write-back.
	TxCompletion TxCompletion
	// RxErrors is how the driver treats a frame flagged bad in its RX
	// descriptor: em's EBADMSG, which makes iflib reset (default), or the
	// Linux style, a discard iflib counts without a reset.
	RxErrors RxErrorStyle
	// WBThresh batches descriptor write-backs (TXDCTL/RXDCTL.WTHRESH): the
	// device writes completed descriptors back only when this many are
	// pending, or when the oldest has waited WBDelay. 0: at once.
	WBThresh int
	// WBDelay is how long a partial batch may wait (the TIDV/RDTR timers);
	// default 50µs when WBThresh is set. With WBThresh 0 and WBDelay > 0,
	// every write-back waits WBDelay (late but not batched).
	WBDelay time.Duration
	// DMALatency is added to every device DMA access (slow DMA: a busy
	// PCIe link or IOMMU walks). The device goroutine waits it out.
	DMALatency time.Duration
	// Schedule injects faults on a seeded, reproducible schedule (nil:
	// none). A Schedule belongs to one NIC.
	Schedule *Schedule
	// Offload turns on the checksum and segmentation offloads
	// (IFCAP_TXCSUM, IFCAP_RXCSUM, IFCAP_TSO4): the driver advertises
	// IPv4, TCP and UDP checksum insertion and TSO, writes context
	// descriptors for them, and reports the device's RX checksum results.
	// VLAN tagging (IFCAP_VLAN_HWTAGGING: CTRL.VME, stripping on RX into
	// the descriptor and insertion on TX) is on either way, as em's; it is
	// the power-up value of CTRL.VME only with Offload (NIC.SetVLANMode).
	Offload bool
}

// TxCompletion selects how the device reports TX completions and how the
// driver reads them.
type TxCompletion uint8

const (
	// TxCompletionDD: the device sets DD in each descriptor that asked for
	// a report (RS); the driver walks its tx_rsq list and credits up to
	// the last RS descriptor with DD, as em_isc_txd_credits_update does
	// (tx_cidx_processed starts at ntxd-1, so the count is exact).
	TxCompletionDD TxCompletion = iota
	// TxCompletionDDUnderByOne is TxCompletionDD as em did before
	// tx_cidx_processed started at ntxd-1 (em_if_init's comment: "to avoid
	// an off-by-one error"): the credits stay one descriptor behind
	// forever, which iflib's reclaim (it frees only whole packets the
	// credits cover) and its watchdog (it never arms on an idle queue)
	// tolerate.
	TxCompletionDDUnderByOne
	// TxCompletionHeadWB: the device writes its head index into host
	// memory after the ring (TDWBAL head write-back) and sets no DD bits;
	// the driver credits head − tx_cidx_processed, as
	// ixl_isc_txd_credits_update_hwb does. The head can stop in the middle
	// of a packet whose later buffers the device has not read yet: iflib
	// must keep them mapped until it has (see the package doc on R2-A2).
	TxCompletionHeadWB
)

// RxErrorStyle selects how the driver treats a frame the device flagged
// with an error (CRC, symbol, length, data).
type RxErrorStyle uint8

const (
	// RxErrorsReset is em/igb: rxd_pkt_get returns EBADMSG ("Make sure bad
	// packets are discarded"), and iflib counts it and resets.
	RxErrorsReset RxErrorStyle = iota
	// RxErrorsDiscard is the Linux style (e1000e_clean_rx_irq drops a frame
	// with an error and reuses its buffers): the driver reports the frame
	// with RxdInfo.Discard, and iflib recycles its buffers and counts it in
	// ierrors without a reset.
	RxErrorsDiscard
)

// DefaultMAC is Config.MAC's default.
var DefaultMAC = [6]byte{0x02, 0, 0, 0, 0, 0x02}

// Limits of a Config.
const (
	MaxQueues     = 64      // queue sets
	MaxRingSize   = 1 << 16 // descriptors per ring (TDLEN/RDLEN are 20 bits of 16-byte units)
	MaxFrameLimit = 16384   // MaxFrame; 82599's MAXFRS.MFS tops out at 15.5 KB, and the RX descriptor length is 16 bits
	MaxFIFOBytes  = 256 << 20
	minRxBufSize  = 256
	maxRxBufSize  = 16384
	minFrame      = 60 // ETHER_MIN_LEN without the FCS
)

// ErrConfig is iflib.ErrInvalid (the same value), matched (errors.Is) by
// every *ConfigError.
var ErrConfig = iflib.ErrInvalid

// ConfigError reports an invalid Config field ("Config.NTxd") or argument
// ("queue", "mtu"): iflib.ConfigError, goiflib's one invalid-argument type,
// with Pkg "simnic".
type ConfigError = iflib.ConfigError

// defaults fills the zero fields. It does not validate.
func (c *Config) defaults() {
	if c.Name == "" {
		c.Name = "simnic"
	}
	if c.Queues == 0 {
		c.Queues = 1
	}
	if c.NTxd == 0 {
		c.NTxd = 1024
	}
	if c.NRxd == 0 {
		c.NRxd = 1024
	}
	if c.RxBufSize == 0 {
		c.RxBufSize = 2048
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = 9018
	}
	if c.MAC == ([6]byte{}) {
		c.MAC = DefaultMAC
	}
	if c.Abilities == 0 {
		c.Abilities = AbilitiesAll
	}
	if c.FIFO == 0 {
		c.FIFO = 1024
	}
	if c.TxSegs == 0 {
		c.TxSegs = 32
	}
	if c.TSOSegs == 0 {
		c.TSOSegs = c.TxSegs
	}
	if c.WBThresh > 0 && c.WBDelay == 0 {
		c.WBDelay = 50 * time.Microsecond
	}
}

// validate checks a Config after defaults.
func (c *Config) validate() error {
	bad := func(field string, v any, reason string) error {
		return &ConfigError{Pkg: "simnic", Field: "Config." + field, Value: v, Reason: reason}
	}
	rate := func(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
	switch {
	case c.Unit < 0:
		return bad("Unit", c.Unit, "negative")
	case c.Queues < 1 || c.Queues > MaxQueues:
		return bad("Queues", c.Queues, fmt.Sprintf("want 1..%d", MaxQueues))
	case c.NTxd < 2 || c.NTxd > MaxRingSize:
		return bad("NTxd", c.NTxd, fmt.Sprintf("want 2..%d", MaxRingSize))
	case c.NRxd < 2 || c.NRxd > MaxRingSize:
		return bad("NRxd", c.NRxd, fmt.Sprintf("want 2..%d", MaxRingSize))
	case c.RxBufSize < minRxBufSize || c.RxBufSize > maxRxBufSize:
		return bad("RxBufSize", c.RxBufSize, fmt.Sprintf("want %d..%d", minRxBufSize, maxRxBufSize))
	case c.MaxFrame < minFrame+4 || c.MaxFrame > MaxFrameLimit:
		return bad("MaxFrame", c.MaxFrame, fmt.Sprintf("want %d..%d", minFrame+4, MaxFrameLimit))
	case c.MAC[0]&1 != 0:
		return bad("MAC", fmt.Sprintf("% x", c.MAC[:]), "a group address")
	case c.Abilities&^AbilitiesAll != 0 || c.Abilities&AbilitySpeeds == 0:
		return bad("Abilities", c.Abilities, "unknown bits, or no speed ability")
	case c.FIFO < 1 || c.FIFO&(c.FIFO-1) != 0:
		return bad("FIFO", c.FIFO, "not a positive power of two")
	case c.FIFO > MaxFIFOBytes/(c.MaxFrame+4):
		return bad("FIFO", c.FIFO, fmt.Sprintf("FIFO × (MaxFrame+4) above %d bytes", MaxFIFOBytes))
	case c.TxSegs < 1 || c.TxSegs > 128:
		return bad("TxSegs", c.TxSegs, "want 1..128")
	case c.TSOSegs < 1 || c.TSOSegs > 128:
		return bad("TSOSegs", c.TSOSegs, "want 1..128")
	case !rate(c.LineRate):
		return bad("LineRate", c.LineRate, "negative, NaN or infinite")
	case !rate(c.FrameRate):
		return bad("FrameRate", c.FrameRate, "negative, NaN or infinite")
	case c.ITR < 0 || c.ITR > time.Second:
		return bad("ITR", c.ITR, "want 0..1s")
	case c.TxCompletion > TxCompletionHeadWB:
		return bad("TxCompletion", c.TxCompletion, "unknown")
	case c.RxErrors > RxErrorsDiscard:
		return bad("RxErrors", c.RxErrors, "unknown")
	case c.WBThresh < 0 || c.WBThresh > min(c.NTxd, c.NRxd)/2:
		return bad("WBThresh", c.WBThresh, "want 0..min(NTxd, NRxd)/2")
	case c.WBDelay < 0 || c.WBDelay > time.Second:
		return bad("WBDelay", c.WBDelay, "want 0..1s")
	case c.DMALatency < 0 || c.DMALatency > time.Millisecond:
		return bad("DMALatency", c.DMALatency, "want 0..1ms")
	}
	return nil
}
