package simnic

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// FaultKind is one kind of misbehaviour the device can be scheduled to
// show. The package doc says what real hardware each models.
type FaultKind uint8

const (
	// FaultLinkDown: the link drops (TX DMA stops, RX drops at the wire)
	// and comes back after Len more link-status reads; both changes raise
	// the link interrupt (ICR.LSC). Stream: link-status reads.
	FaultLinkDown FaultKind = iota + 1
	// FaultTxHang: the queue stops consuming descriptors until the driver
	// reprograms it (a reset). Stream: TX descriptors of the queue.
	FaultTxHang
	// FaultLostWriteBack: the device processes an RS descriptor but never
	// writes its DD bit back (in head write-back mode: the head write is
	// lost, and the next one covers it). Stream: TX descriptors.
	FaultLostWriteBack
	// FaultTxDMA: the read of a TX buffer faults (as an IOMMU refusal
	// would): the frame is dropped whole and counted. Stream: TX
	// descriptors.
	FaultTxDMA
	// FaultRxCRC, FaultRxSymbol, FaultRxLength: the frame is received with
	// a CRC, symbol or length error flagged in its EOP descriptor (CE, SE,
	// LE). Stream: frames the device takes from its FIFO.
	FaultRxCRC
	FaultRxSymbol
	FaultRxLength
	// FaultRxDMA: a buffer write of the frame faults: RXE in its EOP
	// descriptor. Stream: frames.
	FaultRxDMA
	// FaultRxBadLength: a device bug: one descriptor of the frame is
	// written back with a length beyond its buffer. Stream: frames.
	FaultRxBadLength
	// FaultLostIntr: an interrupt is not delivered: the queue's cause is
	// consumed and its vector auto-masked, but the handler never runs
	// (a lost MSI-X message). Stream: interrupts raised.
	FaultLostIntr
	// FaultSpuriousIntr: a queue's handler runs with no cause. Stream:
	// interrupts raised (it follows the Nth one, on a queue the schedule
	// picks).
	FaultSpuriousIntr
	// FaultPause: the link partner sends an 802.3x XOFF (Len: its pause
	// quanta, 1..65535 of 512 bit times): counted (RxXoff) and, with
	// receive flow control resolved on, the transmitter stops every queue
	// for the quanta at the link speed (TxPauses); the driver's IFDI_TIMER
	// reports it to iflib (isc_pause_frames), whose watchdog then does not
	// take the stalled queues for hung. Stream: TX descriptors of the
	// queue (the XOFF arrives after the Nth).
	FaultPause
	numFaultKinds
)

var faultNames = [...]string{"", "link-down", "tx-hang", "lost-write-back", "tx-dma", "rx-crc", "rx-symbol",
	"rx-length", "rx-dma", "rx-bad-length", "lost-intr", "spurious-intr", "pause"}

func (k FaultKind) String() string {
	if k > 0 && k < numFaultKinds {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// FaultKinds lists every kind, in order.
func FaultKinds() []FaultKind {
	ks := make([]FaultKind, 0, numFaultKinds-1)
	for k := FaultKind(1); k < numFaultKinds; k++ {
		ks = append(ks, k)
	}
	return ks
}

// Profile sets how often a schedule injects each kind of fault: the mean
// gap, in events of the fault's stream, between two faults of that kind
// (0: never). Gaps are drawn uniformly from [1, 2×mean], so faults neither
// cluster nor come at a fixed period. Every value of a uint64 is legal: a
// mean above MaxMean is taken as MaxMean (2^62 events: at a billion events
// a second, once in 146 years), so 2×mean never overflows. Keys that are
// not a FaultKinds value are ignored.
type Profile struct {
	Every map[FaultKind]uint64
	// LinkDownFor is the mean length of a link loss in link-status reads
	// (default 4; clamped to MaxMean likewise). A loss lasts until that
	// many reads, or until SetLink.
	LinkDownFor uint64
	// PauseQuanta is the mean quanta of a scheduled XOFF (FaultPause;
	// default 4096: 2 ms at 1 Gb/s, 21 µs at 100 Gb/s; at most 65535).
	PauseQuanta uint64
}

// MaxMean is the largest mean gap a Profile takes; larger values are
// clamped to it.
const MaxMean = 1 << 62

// DefaultProfile has every kind of fault, rarely enough that traffic keeps
// flowing between them (iflib resets on a hang, a lost write-back and, with
// an em-style driver, a frame error).
func DefaultProfile() Profile {
	return Profile{
		Every: map[FaultKind]uint64{
			FaultLinkDown:      60,
			FaultTxHang:        40_000,
			FaultLostWriteBack: 40_000,
			FaultTxDMA:         5_000,
			FaultRxCRC:         4_000,
			FaultRxSymbol:      8_000,
			FaultRxLength:      8_000,
			FaultRxDMA:         8_000,
			FaultRxBadLength:   30_000,
			FaultLostIntr:      500,
			FaultSpuriousIntr:  300,
			FaultPause:         20_000,
		},
		LinkDownFor: 4,
	}
}

// stream is one sequence of device events the schedule counts.
type stream uint8

const (
	streamTx   stream = iota // TX descriptors processed (per queue)
	streamRx                 // frames taken from the FIFO
	streamIntr               // interrupts raised
	streamLink               // link-status reads
)

func (k FaultKind) stream() stream {
	switch k {
	case FaultLinkDown:
		return streamLink
	case FaultTxHang, FaultLostWriteBack, FaultTxDMA, FaultPause:
		return streamTx
	case FaultLostIntr, FaultSpuriousIntr:
		return streamIntr
	}
	return streamRx
}

// Fault is one fault that fired: its kind, the queue (TX faults and
// interrupt faults), and the position in its stream (the event count at
// which it fired, from 1).
type Fault struct {
	Kind  FaultKind
	Queue int
	At    uint64
	Len   uint64 // FaultLinkDown: link-status reads until the link returns
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s@%d", f.Kind, f.At)
	if f.Kind.stream() == streamTx || f.Kind == FaultSpuriousIntr {
		s += fmt.Sprintf("/q%d", f.Queue)
	}
	if f.Len != 0 {
		s += fmt.Sprintf("+%d", f.Len)
	}
	return s
}

// Schedule is a reproducible fault schedule: given its seed and profile,
// the faults and their positions in each stream of device events are the
// same on every run. Positions are counts of events (the Nth TX descriptor
// of queue q, the Nth frame, the Nth interrupt, the Nth link-status read),
// never wall-clock times, so a run replays; what Go's scheduler decides
// (which goroutine runs when) still varies, so the faults land at the same
// points of each stream, not at the same instants.
//
// Each (kind, queue) has its own generator, seeded from the schedule's
// seed and the pair, so that how far one stream has advanced never shifts
// another's faults. A Schedule belongs to one NIC (Config.Schedule); its
// methods other than Seed, Fired and Counts are the device's.
type Schedule struct {
	seed uint64
	prof Profile

	mu    sync.Mutex // fired, counts (read by tests while the device runs)
	fired []Fault
	count [numFaultKinds]uint64

	bound atomic.Bool
	// gens is filled by bind and read-only afterwards; each generator is
	// used by one goroutine at a time: the device goroutine, or the
	// driver's status reads under the NIC's linkMu (FaultLinkDown).
	gens map[genKey]*faultGen
}

type genKey struct {
	kind  FaultKind
	queue int
}

type faultGen struct {
	rng  *rand.Rand
	mean uint64
	next uint64 // the stream position of the next fault
}

// maxFired bounds the log Fired returns (Counts keeps counting).
const maxFired = 4096

// NewSchedule returns the schedule of seed under p.
func NewSchedule(seed uint64, p Profile) *Schedule {
	if p.LinkDownFor == 0 {
		p.LinkDownFor = 4
	}
	if p.PauseQuanta == 0 {
		p.PauseQuanta = 4096
	}
	return &Schedule{seed: seed, prof: p, gens: map[genKey]*faultGen{}}
}

// bind ties the schedule to a NIC with the given queues and creates every
// generator, so that the map is read-only afterwards (the device goroutine
// and the driver's status reads use different generators). It reports
// false if the schedule is already bound.
func (s *Schedule) bind(queues int) bool {
	if !s.bound.CompareAndSwap(false, true) {
		return false
	}
	for _, k := range FaultKinds() {
		nq := 1
		if k.stream() == streamTx {
			nq = queues
		}
		for q := 0; q < nq; q++ {
			s.gen(k, q)
		}
	}
	return true
}

// Seed returns the schedule's seed.
func (s *Schedule) Seed() uint64 { return s.seed }

// gen returns the generator of (k, q), creating it on first use.
func (s *Schedule) gen(k FaultKind, q int) *faultGen {
	key := genKey{k, q}
	g := s.gens[key]
	if g == nil {
		mean := min(s.prof.Every[k], MaxMean)
		// splitmix-style derivation: a distinct, well-mixed stream per key.
		g = &faultGen{rng: rand.New(rand.NewPCG(s.seed, uint64(k)<<32|uint64(q)+0x9e3779b97f4a7c15)), mean: mean}
		g.advance(0)
		s.gens[key] = g
	}
	return g
}

func (g *faultGen) advance(from uint64) {
	if g.mean == 0 {
		g.next = ^uint64(0)
		return
	}
	gap := 1 + g.rng.Uint64N(2*g.mean) // mean ≤ MaxMean: no overflow
	if from > math.MaxUint64-gap {
		g.next = math.MaxUint64 // past the end of any stream: never
		return
	}
	g.next = from + gap
}

// hit reports whether a fault of kind k on queue q fires at position pos
// of its stream, and records it. Positions must be presented in order,
// each once.
func (s *Schedule) hit(k FaultKind, q int, pos uint64) bool {
	if s == nil {
		return false
	}
	g := s.gen(k, q)
	if pos < g.next {
		return false
	}
	g.advance(pos)
	s.record(Fault{Kind: k, Queue: q, At: pos})
	return true
}

// draw returns a number in [1, 2×mean] from the generator of (k, q) (for a
// fault's own parameters, e.g. how long a link loss lasts, or which queue a
// spurious interrupt hits).
func (s *Schedule) draw(k FaultKind, q int, mean uint64) uint64 {
	return 1 + s.gen(k, q).rng.Uint64N(2*min(max(mean, 1), MaxMean))
}

func (s *Schedule) record(f Fault) {
	s.mu.Lock()
	s.count[f.Kind]++
	if len(s.fired) < maxFired {
		s.fired = append(s.fired, f)
	}
	s.mu.Unlock()
}

// setLen fills in the length of the last fault recorded of kind k.
func (s *Schedule) setLen(k FaultKind, n uint64) {
	s.mu.Lock()
	for i := len(s.fired) - 1; i >= 0; i-- {
		if s.fired[i].Kind == k {
			s.fired[i].Len = n
			break
		}
	}
	s.mu.Unlock()
}

// Fired returns the faults fired so far (the first 4096), in the order they
// fired.
func (s *Schedule) Fired() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Fault(nil), s.fired...)
}

// Counts returns how many faults of each kind fired.
func (s *Schedule) Counts() map[FaultKind]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[FaultKind]uint64{}
	for k, n := range s.count {
		if n != 0 {
			m[FaultKind(k)] = n
		}
	}
	return m
}

// FormatCounts renders counts as "kind=n" pairs in kind order.
func FormatCounts(m map[FaultKind]uint64) string {
	ks := make([]FaultKind, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	var b strings.Builder
	for i, k := range ks {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}
