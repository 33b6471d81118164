package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// Schema names the layout of the -json file (docs/seeds.md describes
// every field). A change that renames or removes a field takes a new name.
const Schema = "goiflib.seeds/v2"

// ErrSchema is returned by readReport for a file that is not a report of
// this schema.
var ErrSchema = errors.New("seeds: not a " + Schema + " report")

// Report is everything one run measured: the -json file.
type Report struct {
	Schema   string    `json:"schema"`
	Command  string    `json:"command"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"` // wall time of the whole run
	Machine  Machine   `json:"machine"`
	Settings Settings  `json:"settings"`
	Rule     Rule      `json:"rule"`
	Reviews  []Review  `json:"reviews"`
	AFXDP    *AFXDP    `json:"afxdp,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPUs       int       `json:"cpus"`       // CPUs this process may run on (runtime.NumCPU)
	GOMAXPROCS int       `json:"gomaxprocs"` // at start; sections that use another value say so
	Go         string    `json:"go"`         // runtime.Version
	OS         string    `json:"os"`
	Arch       string    `json:"arch"`
	CPUModel   string    `json:"cpu_model,omitempty"`    // from /proc/cpuinfo where there is one
	LoadAvg    []float64 `json:"load_avg,omitempty"`     // 1, 5 and 15 minute load average at start (Linux)
	LoadAvgEnd []float64 `json:"load_avg_end,omitempty"` // the same at the end
}

// Settings are the options the run used.
type Settings struct {
	Quick     bool    `json:"quick"`
	Rounds    int     `json:"rounds"`     // rounds of a block: the rigs are rebuilt after each block
	MaxRounds int     `json:"max_rounds"` // the most rounds a deciding comparison gets
	CapS      float64 `json:"cap_s"`      // a section adds blocks only while it has run less than this (seconds)
	WindowMs  float64 `json:"window_ms"`  // measuring window of one cell in one round
	WarmupMs  float64 `json:"warmup_ms"`  // warm-up of each rig once built
	Slices    int     `json:"slices"`     // slices of each forwarding window, taken in turn with the other variants
	TxSlices  int     `json:"tx_slices"`  // the same for transmit windows
	SettleMs  float64 `json:"settle_ms"`  // run, unmeasured, before each slice
	Seed      uint64  `json:"seed"`       // seeds the build and slice orders (-seed); Review.blocks has them
	Senders   []int   `json:"senders"`
	Procs     []int   `json:"procs"` // GOMAXPROCS values of the fan-in section
}

// Rule is the verdict rule's parameters (docs/seeds.md, "How a verdict
// is reached"), so that a verdict can be recomputed from the file.
type Rule struct {
	// Level is the two-sided level of the interval of a comparison's
	// median advantage, over all the looks together.
	Level float64 `json:"level"`
	// Looks are the round counts at which the rule may decide; a section
	// whose time cap ends it between two looks decides where it stopped,
	// in place of the next look.
	Looks []int `json:"looks"`
	// LevelPerLook is Level / len(Looks): each look's interval.
	LevelPerLook float64 `json:"level_per_look"`
	// Refute: a gain is refuted when the interval's upper end is below
	// 1 + Refute × FreeBSD's smallest effect (1 when FreeBSD has none).
	Refute float64 `json:"refute"`
	// SizeLow and SizeHigh: a size agrees with FreeBSD's when the interval
	// reaches [SizeLow × smallest, SizeHigh × largest] of FreeBSD's
	// effects.
	SizeLow  float64 `json:"size_low"`
	SizeHigh float64 `json:"size_high"`
	// BoundFactor: a bound allows BoundFactor × FreeBSD's largest cost.
	BoundFactor float64 `json:"bound_factor"`
	// Power is the chance at which a minimum detectable effect is
	// detected.
	Power float64 `json:"power"`
	// BusyShare: a CPU excuse's premise (no idle CPU) holds for a
	// comparison when its favoured variant kept at least BusyShare × the
	// CPUs busy that the other variant kept.
	BusyShare float64 `json:"busy_share"`
}

// Review is one founding review: what FreeBSD measured, what this run
// measured, the comparisons its claim rests on, and the verdict.
type Review struct {
	ID          string       `json:"id"` // "drbr", "D17901", "D24094", "D53674", "D27755"
	Title       string       `json:"title"`
	Setup       string       `json:"setup"`   // what was run here, in one line
	FreeBSD     []Figure     `json:"freebsd"` // what FreeBSD measured
	Claim       string       `json:"claim"`
	Points      []Point      `json:"points"`
	Comparisons []Comparison `json:"comparisons"`
	Verdict     Verdict      `json:"verdict"`
	Notes       []string     `json:"notes,omitempty"`
	Placement   *Placement   `json:"placement,omitempty"` // D24094 only
	Blocks      []Block      `json:"blocks,omitempty"`    // how the rounds ran, in order
	Seconds     float64      `json:"seconds"`             // wall time of the section
}

// Block is a run of rounds between two rebuilds of the rigs.
type Block struct {
	GOMAXPROCS int      `json:"gomaxprocs"`
	Senders    int      `json:"senders,omitempty"` // the fan-in of a transmit block
	Rounds     int      `json:"rounds"`
	Built      []string `json:"built"` // the rigs, in the order they were built
	// Orders has one entry per slice, in time order: the rigs in the
	// order they were measured in that slice.
	Orders [][]string `json:"orders"`
}

// Figure is one FreeBSD figure from the review.
type Figure struct {
	Label   string  `json:"label"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Machine string  `json:"machine"`
}

// Point is one measured configuration: a variant (a TX mode, "reuse=on",
// ...) at a fan-in or batch size, at a GOMAXPROCS, with one sample per
// round of each metric and the raw counters each round's samples come
// from.
type Point struct {
	Variant    string          `json:"variant"`
	Senders    int             `json:"senders,omitempty"`
	Batch      int             `json:"batch,omitempty"`
	GOMAXPROCS int             `json:"gomaxprocs"`
	Metrics    map[string]Stat `json:"metrics"`
	Counts     []Counts        `json:"counts"` // one per round
}

// Counts are one round's raw counters of a point, summed over its slices.
type Counts struct {
	ElapsedNs     int64  `json:"elapsed_ns"`
	CPUNs         int64  `json:"cpu_ns"`
	Packets       uint64 `json:"packets"`        // forwarded frames, or frames on the wire
	Offered       uint64 `json:"offered"`        // frames the generator offered, or Transmit calls
	Refused       uint64 `json:"refused"`        // generator stalls, or Transmit calls refused
	Drops         uint64 `json:"drops"`          // packets iflib dropped on the way (forwarding)
	InvolSwitches uint64 `json:"invol_switches"` // involuntary context switches (ru_nivcsw)
	Unquiet       int    `json:"unquiet"`        // slices after which the rig did not go quiet in time
}

// Stat is one metric of a point: the samples in round order and their
// median, min and max.
type Stat struct {
	Samples []float64 `json:"samples"`
	Median  float64   `json:"median"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
}

// Metric names used in Point.Metrics.
const (
	MGbps    = "Gb/s"         // frames on the wire × frame length × 8, per second
	MMpps    = "Mpps"         // packets per second, millions
	MCPU     = "cpu-ns/pkt"   // process CPU time (user+system) per packet
	MBusy    = "cpus-busy"    // process CPU time over elapsed time: CPUs kept busy
	MInvol   = "invol/s"      // involuntary context switches per second
	MDrop    = "drop%"        // Transmit calls refused, percent of calls
	MStalls  = "stalls/pkt"   // generator stalls (A's receive FIFO full) per forwarded packet
	MDrops   = "drops/pkt"    // packets iflib dropped, per forwarded packet
	MMapLoad = "maploads/pkt" // RX map loads per received packet
	MOffered = "offered-Mpps" // AF_XDP: frames the generator handed to the kernel, millions per second
	MFwdCPU  = "fwd-cpu-ns/pkt"
	MToHand  = "x-hand" // AF_XDP: Mpps over the hand loop's in the same round
)

// Comparison is one ratio a claim rests on.
type Comparison struct {
	Name    string `json:"name"`
	Better  string `json:"better"` // the variant the claim favours
	Worse   string `json:"worse"`
	Senders int    `json:"senders,omitempty"` // the fan-in of both points, where there is one
	Batch   int    `json:"batch,omitempty"`   // the rx budget of both points, where varied
	Metric  string `json:"metric"`
	// Basis is "total" (the metric as measured) or "iflib" (cpu-ns/pkt
	// less the raw loop's in the same round: iflib's own share, without
	// the simulated NICs' and the generator's work).
	Basis string `json:"basis"`
	// Kind is "gain" (Better beats Worse) or "bound" (Better costs at
	// most Bound times Worse: a claim that a cost is small).
	Kind string `json:"kind"`
	// Advantage is Better's advantage over Worse in each round: the ratio
	// of the metric, taken so that above 1 means Better is better
	// (Worse/Better for cpu-ns/pkt). For a bound it is the cost ratio
	// Better/Worse of cpu-ns/pkt, above 1 meaning Better costs more.
	Advantage Stat `json:"advantage"`
	// Lo and Hi are the interval of the median advantage at the rule's
	// per-look level (null when there are too few rounds for one).
	Lo Num `json:"lo"`
	Hi Num `json:"hi"`
	// FreeBSD is FreeBSD's advantage (or cost ratio) for the same
	// comparison, one value or a range; empty when it has none.
	FreeBSD []float64 `json:"freebsd,omitempty"`
	// FreeBSDNs is, where the claim is about CPU work per packet, the ns
	// per packet FreeBSD's figures save, one per machine.
	FreeBSDNs []float64 `json:"freebsd_ns,omitempty"`
	Bound     float64   `json:"bound,omitempty"` // largest cost ratio a bound allows
	// NeedCPUs is how many CPUs the review's mechanism needs to show;
	// CPUs is the GOMAXPROCS of the measurement.
	NeedCPUs int `json:"need_cpus"`
	CPUs     int `json:"cpus"`
	// Decides is false for comparisons shown for information only:
	// Why says why (for instance "needs 4 CPUs, had 2").
	Decides bool   `json:"decides"`
	Why     string `json:"why,omitempty"`
	// Agree is how many of Rounds favour Better (a bound: stay within
	// it).
	Agree  int `json:"agree"`
	Rounds int `json:"rounds"`
	// Outcome is "holds" (the interval is above 1; a bound: its upper
	// end is within Bound), "refuted" (the interval excludes the claim)
	// or "undecided".
	Outcome string `json:"outcome"`
	// Size is "agrees" or "differs" (the interval reaches FreeBSD's range
	// widened by the rule, or not); empty without FreeBSD figures and
	// for bounds.
	Size string `json:"size,omitempty"`
	// Sigma is the spread of one round's log advantage (its standard
	// deviation); MDE is the smallest effect (advantage − 1; a
	// bound: distance from the bound) these rounds detect with the rule's
	// power, null when they cannot.
	Sigma Num `json:"sigma"`
	MDE   Num `json:"mde"`
	// BusyBetter and BusyWorse are the medians of CPUs busy of the two
	// variants (the CPU excuse's test).
	BusyBetter Num `json:"busy_better"`
	BusyWorse  Num `json:"busy_worse"`
	// SavedNs is, for a cpu-ns/pkt gain, the median per-round ns per
	// packet the better variant saves.
	SavedNs Num `json:"saved_ns,omitempty"`
}

// Outcomes of a comparison.
const (
	Holds     = "holds"
	Refuted   = "refuted"
	Undecided = "undecided"
)

// Verdict results.
const (
	Reproduced          = "reproduced"
	DirectionReproduced = "direction reproduced"
	Inconclusive        = "inconclusive"
	NotReproduced       = "not reproduced"
	NotOnTheseCPUs      = "not measurable on this many CPUs"
	NotHere             = "not measurable here"
	NotMeasured         = "not measured"
	SmokeTest           = "smoke test: no verdict"
)

// Results are every verdict result, in the order docs/seeds.md gives them.
var Results = []string{Reproduced, DirectionReproduced, Inconclusive, NotReproduced, NotOnTheseCPUs, NotHere, NotMeasured, SmokeTest}

// Verdict is a review's result under the documented rule (decide).
type Verdict struct {
	Result string `json:"result"`
	// Short qualifies the result in a few words (the summary prints it).
	Short string `json:"short"`
	Why   string `json:"why"`
	// CPUReason is why the review's mechanism needs the CPUs its
	// comparisons ask for: the reason a comparison may be information
	// only on a small machine. Empty where none is claimed.
	CPUReason string `json:"cpu_reason,omitempty"`
	// HereReason is why the review cannot be decided on this machine or
	// in this model at all, when that is the result.
	HereReason string `json:"here_reason,omitempty"`
	// Rounds is the most rounds a deciding comparison had.
	Rounds int `json:"rounds"`
}

// Placement is D24094's placement comparison: the review's machine before
// and after the change, and this machine.
type Placement struct {
	Fixture     string `json:"fixture"`      // the review's machine, rendered by cpumap.PlacementTable
	Here        string `json:"here"`         // this machine
	HereDiffers bool   `json:"here_differs"` // D24094 places this machine's queues differently
	Pinned      string `json:"pinned"`       // the CPUs of the pinned forwarding variants
	// Pair is the two CPUs the queue pairs were pinned to, and L2 whether
	// they share an L2 cache (only then does the comparison decide).
	Pair []int `json:"pair,omitempty"`
	L2   bool  `json:"l2"`
}

// AFXDP is the AF_XDP forwarding section: a real kernel path (veth pairs
// in a private network namespace) through iflib and beside it through a
// hand-written loop.
type AFXDP struct {
	Skipped string  `json:"skipped,omitempty"` // why it did not run
	Setup   string  `json:"setup,omitempty"`
	Points  []Point `json:"points,omitempty"` // variant "<mode>/<forwarder>"
	// Orders is the order the forwarders ran in, per round.
	Orders [][]string `json:"orders,omitempty"`
}

// Num is a number that may be unknown (NaN) or infinite: JSON null.
type Num float64

// MarshalJSON writes NaN and infinities as null.
func (n Num) MarshalJSON() ([]byte, error) {
	if p := finite(float64(n)); p != nil {
		return json.Marshal(*p)
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads null as NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	var p *float64
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*n = Num(orNaN(p))
	return nil
}

// newStat summarises samples.
func newStat(samples []float64) Stat {
	s := Stat{Samples: samples}
	if len(samples) == 0 {
		s.Median, s.Min, s.Max = math.NaN(), math.NaN(), math.NaN()
		return s
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
	if n := len(sorted); n%2 == 1 {
		s.Median = sorted[n/2]
	} else {
		s.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return s
}

// find returns the point of a review with these coordinates.
func (r *Review) find(variant string, senders, batch, procs int) (Point, bool) {
	for _, p := range r.Points {
		if p.Variant == variant && p.Senders == senders && p.Batch == batch && p.GOMAXPROCS == procs {
			return p, true
		}
	}
	return Point{}, false
}

// writeReport writes the report as indented JSON. NaN (an empty
// statistic) is not JSON; it is written as null by Stat's encoding.
func writeReport(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// readReport reads a report written by writeReport and checks its schema.
func readReport(rd io.Reader) (*Report, error) {
	var r Report
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	if r.Schema != Schema {
		return nil, fmt.Errorf("%w: schema %q", ErrSchema, r.Schema)
	}
	return &r, nil
}

// jsonStat is Stat with NaN as null.
type jsonStat struct {
	Samples []float64 `json:"samples"`
	Median  *float64  `json:"median"`
	Min     *float64  `json:"min"`
	Max     *float64  `json:"max"`
}

func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// MarshalJSON writes NaN and infinities as null.
func (s Stat) MarshalJSON() ([]byte, error) {
	samples := make([]float64, len(s.Samples))
	for i, v := range s.Samples {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("seeds: sample %d is %v", i, v)
		}
		samples[i] = v
	}
	return json.Marshal(jsonStat{Samples: samples, Median: finite(s.Median), Min: finite(s.Min), Max: finite(s.Max)})
}

// UnmarshalJSON reads null as NaN.
func (s *Stat) UnmarshalJSON(b []byte) error {
	var j jsonStat
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Stat{Samples: j.Samples, Median: orNaN(j.Median), Min: orNaN(j.Min), Max: orNaN(j.Max)}
	return nil
}
