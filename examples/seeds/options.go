package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrUsage is returned for bad command-line arguments.
var ErrUsage = errors.New("seeds: bad arguments")

// Section ids, in the order they run.
const (
	SecDRBR   = "drbr"
	SecD17901 = "D17901"
	SecD24094 = "D24094"
	SecD53674 = "D53674"
	SecD27755 = "D27755"
	SecAFXDP  = "afxdp"
)

var allSections = []string{SecDRBR, SecD17901, SecD24094, SecD53674, SecD27755, SecAFXDP}

// Options are the command's settings.
type Options struct {
	Quick     bool
	Rounds    int           // rounds of a block (the rigs are rebuilt between blocks) and of the first look
	MaxRounds int           // the most rounds a deciding comparison gets
	Cap       time.Duration // a section adds blocks only while it has run less than this
	Seed      uint64        // build and slice orders
	Compare   []string      // -compare: JSON reports to set side by side instead of measuring
	Window    time.Duration // measuring window of one cell
	Warmup    time.Duration // warm-up of each rig once built
	Settle    time.Duration // run before each slice, not measured
	Slices    int           // a forwarding cell's window is measured in this many slices, alternating with the other variants
	TxSlices  int           // the same for a transmit cell (each slice starts and stops its senders)
	XDPDur    time.Duration // AF_XDP window per forwarder and mode
	Senders   []int
	Procs     []int    // GOMAXPROCS values of the fan-in section
	Only      []string // sections to run
	AFXDP     bool
	JSON      string
	SVG       string
	Args      []string // the arguments as given
}

// Defaults: a full run takes 3–5 minutes on 2 busy CPUs (docs/seeds.md,
// "Reruns"; a section that needs extra rounds runs up to Cap); -quick
// about 10 seconds (plus building).
const (
	defaultRounds    = 7
	defaultMaxRounds = 224 // 7 doubled five times: the rule looks 6 times at most
	defaultCap       = 90 * time.Second
	defaultWindow    = 150 * time.Millisecond
	quickWindow      = 20 * time.Millisecond
)

func (o Options) runs(sec string) bool { return slices.Contains(o.Only, sec) }

// parseFlags parses the command line (without the program name).
func parseFlags(args []string, stderr io.Writer) (Options, error) {
	fs := flag.NewFlagSet("seeds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: go run ./examples/seeds [flags]

Reproduces the measurements of the five FreeBSD reviews goiflib was founded on
(D17901, D24094, D53674, "simple_tx with drbr deferral", D27755) on the
simulated NIC, and prints for each what FreeBSD measured, what this run
measured (median [min..max] of the rounds) and a verdict. docs/seeds.md
explains every column, the JSON schema and the verdict rule.

    go run ./examples/seeds -compare run1.json run2.json run3.json

sets the verdicts of earlier runs side by side and says whether they agree.

flags:
`)
		fs.PrintDefaults()
	}
	o := Options{Args: slices.Clone(args)}
	fs.BoolVar(&o.Quick, "quick", false, "a short run (every section, tiny windows): a smoke test, not a measurement")
	fs.IntVar(&o.Rounds, "rounds", defaultRounds, "rounds of a block (at least 3; 3 with -quick): every measurement runs one block, interleaved; "+
		"forwarding rigs are rebuilt for every round, transmit rigs for every block")
	fs.IntVar(&o.MaxRounds, "max-rounds", defaultMaxRounds, "the most rounds a comparison that decides a verdict gets: blocks are added while the verdict is inconclusive")
	fs.DurationVar(&o.Cap, "cap", defaultCap, "a section adds blocks only while it has run for less than this")
	seed := fs.String("seed", "", "seed of the build and slice orders, a number (default: a random one, printed and written to -json)")
	compare := fs.Bool("compare", false, "read the -json files named as arguments and set their verdicts side by side, instead of measuring")
	fs.DurationVar(&o.Window, "window", defaultWindow, "measuring window of one cell (default 20ms with -quick)")
	senders := fs.String("senders", "1,2,4,8,16,32,64", "sender counts of the simple_tx/drbr fan-in section")
	procs := fs.String("procs", "", "GOMAXPROCS values of the fan-in section (default 1 and this machine's GOMAXPROCS)")
	only := fs.String("only", strings.Join(allSections, ","), "sections to run: "+strings.Join(allSections, ", "))
	fs.BoolVar(&o.AFXDP, "afxdp", true, "run the AF_XDP section when this process can (Linux, root)")
	fs.StringVar(&o.JSON, "json", "", "write every result to this file (schema "+Schema+", see docs/seeds.md)")
	fs.StringVar(&o.SVG, "svg", "", "write charts (SVG) into this directory")
	var err error
	if err = fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if *compare {
		if fs.NArg() < 1 {
			return o, fmt.Errorf("%w: -compare needs the JSON files of one or more runs", ErrUsage)
		}
		o.Compare = fs.Args()
		return o, nil
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if *seed == "" {
		o.Seed = rand.Uint64()
	} else if o.Seed, err = strconv.ParseUint(*seed, 0, 64); err != nil {
		return o, fmt.Errorf("%w: -seed %q: want a number", ErrUsage, *seed)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.Quick && !set["window"] {
		o.Window = quickWindow
	}
	if o.Quick && !set["rounds"] {
		o.Rounds = 3
	}
	if o.Quick && !set["max-rounds"] {
		o.MaxRounds = o.Rounds
	}
	switch {
	case o.Rounds < 3 || o.Rounds > 100:
		return o, fmt.Errorf("%w: -rounds %d: want 3..100 (a median and a spread need at least 3)", ErrUsage, o.Rounds)
	case o.MaxRounds < o.Rounds || o.MaxRounds > 10000:
		return o, fmt.Errorf("%w: -max-rounds %d: want -rounds (%d)..10000", ErrUsage, o.MaxRounds, o.Rounds)
	case o.Cap < 0 || o.Cap > time.Hour:
		return o, fmt.Errorf("%w: -cap %v: want 0..1h", ErrUsage, o.Cap)
	case o.Window < time.Millisecond || o.Window > time.Minute:
		return o, fmt.Errorf("%w: -window %v: want 1ms..1m", ErrUsage, o.Window)
	}
	o.Warmup = min(max(o.Window/5, 10*time.Millisecond), 100*time.Millisecond)
	// Slices of about 20 ms (8 of the default window): the finer the
	// interleaving, the more alike the load the cells of a round meet,
	// for a settle of 2 ms more per slice.
	// A transmit slice starts and stops its senders, up to 64 goroutines:
	// slices of about 40 ms there (4 of the default window).
	o.Slices = min(max(int((o.Window+10*time.Millisecond)/(20*time.Millisecond)), 1), 16)
	o.TxSlices = min(max(int((o.Window+20*time.Millisecond)/(40*time.Millisecond)), 1), 16)
	o.Settle = min(max(o.Window/time.Duration(o.Slices)/10, 2*time.Millisecond), 20*time.Millisecond)
	o.XDPDur = min(max(o.Window*4, 100*time.Millisecond), 10*time.Second)
	if o.Senders, err = parseInts("senders", *senders, 1, 1024); err != nil {
		return o, err
	}
	if *procs == "" {
		*procs = "1," + strconv.Itoa(runtime.GOMAXPROCS(0))
	}
	if o.Procs, err = parseInts("procs", *procs, 1, 1024); err != nil {
		return o, err
	}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		i := slices.IndexFunc(allSections, func(a string) bool { return strings.EqualFold(a, s) })
		if i < 0 {
			return o, fmt.Errorf("%w: -only: unknown section %q (want %s)", ErrUsage, s, strings.Join(allSections, ", "))
		}
		if !slices.Contains(o.Only, allSections[i]) {
			o.Only = append(o.Only, allSections[i])
		}
	}
	if !o.AFXDP {
		o.Only = slices.DeleteFunc(o.Only, func(s string) bool { return s == SecAFXDP })
	}
	// Run in the documented order whatever order -only gave.
	slices.SortFunc(o.Only, func(a, b string) int {
		return slices.Index(allSections, a) - slices.Index(allSections, b)
	})
	return o, nil
}

// parseInts parses a comma-separated list of distinct integers in
// [lo, hi], keeping the order given.
func parseInts(name, s string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%w: -%s: %q is not a number in %d..%d", ErrUsage, name, f, lo, hi)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}
