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
const Schema = "goiflib.seeds/v1"

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
	Quick    bool    `json:"quick"`
	Rounds   int     `json:"rounds"`
	WindowMs float64 `json:"window_ms"` // measuring window of one cell
	WarmupMs float64 `json:"warmup_ms"` // warm-up of each rig once built
	Slices   int     `json:"slices"`    // slices of each window, taken in turn with the other variants
	SettleMs float64 `json:"settle_ms"` // run, unmeasured, before each slice
	Senders  []int   `json:"senders"`
	Procs    []int   `json:"procs"` // GOMAXPROCS values of the fan-in section
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
// round of each metric.
type Point struct {
	Variant    string          `json:"variant"`
	Senders    int             `json:"senders,omitempty"`
	Batch      int             `json:"batch,omitempty"`
	GOMAXPROCS int             `json:"gomaxprocs"`
	Metrics    map[string]Stat `json:"metrics"`
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
	MGbps    = "Gb/s"       // frames on the wire × frame length × 8, per second
	MMpps    = "Mpps"       // packets per second, millions
	MCPU     = "cpu-ns/pkt" // process CPU time (user+system) per packet
	MDrop    = "drop%"      // Transmit calls refused, percent of calls
	MLost    = "lost-Mpps"  // frames offered but not forwarded, millions per second
	MMapLoad = "maploads/pkt"
)

// Comparison is one ratio a claim rests on.
type Comparison struct {
	Name   string `json:"name"`
	Better string `json:"better"` // the variant the claim favours
	Worse  string `json:"worse"`
	Metric string `json:"metric"`
	// Kind is "gain" (Better beats Worse) or "bound" (Better costs at
	// most Bound more than Worse: a claim that a cost is small).
	Kind string `json:"kind"`
	// Advantage is Better's advantage over Worse in each round: the ratio
	// of the metric, taken so that above 1 means Better is better
	// (Worse/Better for cpu-ns/pkt). For a bound it is the cost ratio
	// Better/Worse of cpu-ns/pkt, above 1 meaning Better costs more.
	Advantage Stat `json:"advantage"`
	// FreeBSD is FreeBSD's advantage (or cost ratio) for the same
	// comparison, one value or a range; empty when FreeBSD has none.
	FreeBSD []float64 `json:"freebsd,omitempty"`
	Bound   float64   `json:"bound,omitempty"` // largest cost ratio a bound allows
	// NeedCPUs is how many CPUs the review's mechanism needs to show;
	// CPUs is the GOMAXPROCS of the measurement.
	NeedCPUs int `json:"need_cpus"`
	CPUs     int `json:"cpus"`
	// Decides is false for comparisons shown for information only.
	Decides bool `json:"decides"`
	// Agree is how many of Rounds favour Better (a bound: stay within
	// it). Holds: the median does, and Agree passes the sign test of the
	// verdict rule. SizeOK: the median effect is within a factor of two of
	// FreeBSD's (true when FreeBSD has no figure, and for bounds).
	Agree  int  `json:"agree"`
	Rounds int  `json:"rounds"`
	Holds  bool `json:"holds"`
	SizeOK bool `json:"size_ok"`
}

// Verdict results.
const (
	Reproduced          = "reproduced"
	DirectionReproduced = "direction reproduced"
	NotOnTheseCPUs      = "not reproducible on this many CPUs"
	NotReproduced       = "not reproduced"
	NotMeasured         = "not measured"
)

// Verdict is a review's result under the documented rule (decide).
type Verdict struct {
	Result string `json:"result"`
	Why    string `json:"why"`
}

// Placement is D24094's placement comparison: the review's machine before
// and after the change, and this machine.
type Placement struct {
	Fixture     string `json:"fixture"`      // the review's machine, rendered by cpumap.PlacementTable
	Here        string `json:"here"`         // this machine
	HereDiffers bool   `json:"here_differs"` // D24094 places this machine's queues differently
	Pinned      string `json:"pinned"`       // the CPUs of the pinned forwarding variants
}

// AFXDP is the AF_XDP forwarding section: a real kernel path (veth pairs
// in a private network namespace) through iflib and beside it through a
// hand-written loop.
type AFXDP struct {
	Skipped string  `json:"skipped,omitempty"` // why it did not run
	Setup   string  `json:"setup,omitempty"`
	Points  []Point `json:"points,omitempty"` // variant "<mode>/<forwarder>"
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
