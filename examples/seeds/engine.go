package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/goiflib/goiflib/examples/seedbench"
)

// runner runs the sections: blocks of interleaved rounds, with the rigs
// rebuilt in a new order before each block, until each review's verdict
// is decided or its section reaches its caps.
type runner struct {
	o    Options
	rule Rule
	prog *progress
	full int        // GOMAXPROCS at start: "all of this machine's CPUs"
	rng  *rand.Rand // build and slice orders, from Options.Seed
}

func newRunner(o Options, prog *progress) *runner {
	return &runner{o: o, rule: newRule(o.Rounds, o.MaxRounds), prog: prog, full: runtime.GOMAXPROCS(0),
		rng: rand.New(rand.NewPCG(o.Seed, 0x5eed5))}
}

// progress prints one line per measured cell to stderr, with an estimate
// of the time left for what is planned so far (a section that adds rounds
// to decide adds to the plan).
type progress struct {
	w     io.Writer
	total int
	done  int
	start time.Time
}

func (p *progress) step(format string, args ...any) {
	p.done++
	el := time.Since(p.start)
	left := "?"
	if p.done > 0 && p.done <= p.total {
		left = (el / time.Duration(p.done) * time.Duration(p.total-p.done)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "[%3d/%d  %5.1fs, about %s left] %s\n", p.done, p.total, el.Seconds(), left, fmt.Sprintf(format, args...))
}

func (p *progress) note(format string, args ...any) {
	fmt.Fprintf(p.w, "[%3d/%d  %5.1fs] %s\n", p.done, p.total, time.Since(p.start).Seconds(), fmt.Sprintf(format, args...))
}

// plan adds n cells to the progress total.
func (p *progress) plan(n int) { p.total += n }

// cells is how many progress steps the first block of every section
// takes.
func (r *runner) cells(xdpOK bool) int {
	n, R := 0, r.o.Rounds
	for _, s := range r.o.Only {
		switch s {
		case SecDRBR:
			n += len(r.o.Procs) * R * len(seedbench.TxModes) * len(r.o.Senders)
		case SecD17901:
			n += R * len(d17901Cells())
		case SecD24094:
			if r.full >= 2 {
				n += R * 3
			}
		case SecD53674:
			n += R * 2 * len(prefetchSenders)
		case SecD27755:
			n += R * len(d27755Cells())
		case SecAFXDP:
			if xdpOK {
				n += R
			}
		}
	}
	return n
}

// acc collects the samples of a review's points, in the order first seen.
type acc struct {
	keys   []pkey
	data   map[pkey]map[string][]float64
	counts map[pkey][]Counts
}

type pkey struct {
	variant              string
	senders, batch, proc int
}

func (a *acc) add(k pkey, metric string, v float64) {
	if a.data == nil {
		a.data = map[pkey]map[string][]float64{}
		a.counts = map[pkey][]Counts{}
	}
	m, ok := a.data[k]
	if !ok {
		m = map[string][]float64{}
		a.data[k] = m
		a.keys = append(a.keys, k)
	}
	m[metric] = append(m[metric], v)
}

func (a *acc) addCounts(k pkey, c Counts) { a.counts[k] = append(a.counts[k], c) }

// samples are the per-round values of a metric of a point.
func (a *acc) samples(k pkey, metric string) []float64 { return a.data[k][metric] }

func (a *acc) points() []Point {
	var out []Point
	for _, k := range a.keys {
		p := Point{Variant: k.variant, Senders: k.senders, Batch: k.batch, GOMAXPROCS: k.proc, Metrics: map[string]Stat{}, Counts: a.counts[k]}
		for m, s := range a.data[k] {
			p.Metrics[m] = newStat(s)
		}
		out = append(out, p)
	}
	return out
}

// addForward records one round of a forwarding cell.
func (a *acc) addForward(k pkey, res seedbench.ForwardResult, unquiet int, raw bool) {
	a.add(k, MMpps, res.Mpps())
	a.add(k, MCPU, res.CPUNsPerPkt())
	a.add(k, MBusy, res.CPUsBusy())
	a.add(k, MInvol, float64(res.InvolSwitches)/max(res.Elapsed.Seconds(), 1e-9))
	a.add(k, MStalls, res.PerPacket(res.Stalls()))
	a.add(k, MDrops, res.PerPacket(res.Drops()))
	if !raw {
		a.add(k, MMapLoad, res.MapLoadsPerPacket())
	}
	a.addCounts(k, Counts{ElapsedNs: res.Elapsed.Nanoseconds(), CPUNs: res.CPU.Nanoseconds(), Packets: res.Packets(), Offered: res.Offered,
		Refused: res.Refused, Drops: res.Drops(), InvolSwitches: res.InvolSwitches, Unquiet: unquiet})
}

// addTx records one round of a transmit cell.
func (a *acc) addTx(k pkey, res seedbench.TxResult, unquiet int) {
	a.add(k, MGbps, res.Gbps())
	a.add(k, MMpps, res.PPS()/1e6)
	a.add(k, MCPU, res.CPUNsPerPkt())
	a.add(k, MBusy, res.CPUsBusy())
	a.add(k, MInvol, float64(res.InvolSwitches)/max(res.Elapsed.Seconds(), 1e-9))
	a.add(k, MDrop, res.DropPct())
	a.addCounts(k, Counts{ElapsedNs: res.Elapsed.Nanoseconds(), CPUNs: res.CPU.Nanoseconds(), Packets: res.Frames, Offered: res.Attempts,
		Refused: res.Drops, InvolSwitches: res.InvolSwitches, Unquiet: unquiet})
}

// withProcs runs f at GOMAXPROCS n and restores the previous value.
func withProcs(n int, f func() error) error {
	prev := runtime.GOMAXPROCS(n)
	defer runtime.GOMAXPROCS(prev)
	return f()
}

// build runs f on a goroutine of its own and waits for it: a rig built
// there carries its own simnictest label (inherited by every goroutine it
// starts), so that several rigs can be alive at once and each teardown
// checks only its own goroutines.
func build[T any](f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f()
		ch <- result{v, err}
	}()
	res := <-ch
	return res.v, res.err
}

// quickZone is the packet zone of -quick's rigs.
const quickZone = 4096

// quietLimit bounds the wait for a rig to drain after a slice; a rig
// that takes longer is counted (Counts.Unquiet) and the run goes on.
const quietLimit = 250 * time.Millisecond

// fwdCell is one forwarding configuration of a section.
type fwdCell struct {
	key  pkey
	opts seedbench.ForwardOpts
}

func (c fwdCell) label() string {
	if c.key.batch > 0 {
		return fmt.Sprintf("%s@%d", c.key.variant, c.key.batch)
	}
	return c.key.variant
}

// forwardBlock measures rounds rounds of the cells, each a block of its
// own: it builds one forwarding rig per cell (paused), in a random order,
// warms each up, measures the round and tears the rigs down. A round
// measures each cell for one window, cut into Slices slices; in each slice
// the cells take turns in a new random order: each resumes its rig, lets
// it settle, measures, pauses it and waits for it to drain before the
// next runs. Interleaving this finely puts the cells a comparison pairs
// within a fraction of a second of each other, so that what other
// processes do to the CPUs hits both alike. Rebuilding the rigs for every
// round (a build takes about 0.1 s) makes each round an independent
// replicate: what a rig's build leaves behind (its memory layout: one
// build of a cell can run several per cent slower than the next) becomes
// round-to-round noise, which the rule's interval sees, instead of a bias
// that every round of the build repeats.
func (r *runner) forwardBlock(procs int, cells []fwdCell, blk func() *Block, built func(c fwdCell, rig *seedbench.ForwardRig),
	record func(c fwdCell, round int, res seedbench.ForwardResult, unquiet int)) error {
	// -quick measures nothing and builds once, to stay quick under the
	// race detector.
	perBuild := 1
	if r.o.Quick {
		perBuild = r.o.Rounds
	}
	return withProcs(procs, func() error {
		for round := 0; round < r.o.Rounds; round += perBuild {
			b := blk()
			b.GOMAXPROCS, b.Rounds = procs, perBuild
			if err := r.forwardRounds(cells, perBuild, b, built, func(c fwdCell, i int, res seedbench.ForwardResult, unquiet int) {
				record(c, round+i, res, unquiet)
			}); err != nil {
				return err
			}
		}
		return nil
	})
}

// forwardRounds builds the cells' rigs, measures rounds rounds and closes
// them.
func (r *runner) forwardRounds(cells []fwdCell, rounds int, blk *Block, built func(c fwdCell, rig *seedbench.ForwardRig),
	record func(c fwdCell, round int, res seedbench.ForwardResult, unquiet int)) (err error) {
	rigs := make([]*seedbench.ForwardRig, len(cells))
	defer func() {
		for _, rig := range rigs {
			if rig == nil {
				continue
			}
			if cerr := rig.Close(); cerr != nil {
				err = errors.Join(err, fmt.Errorf("rig teardown: %w", cerr))
			}
		}
	}()
	for _, i := range r.rng.Perm(len(cells)) {
		c := cells[i]
		o := c.opts
		o.Paused = true
		if r.o.Quick && o.Config.RxZoneSize == 0 && !o.Raw {
			o.Config.RxZoneSize = quickZone
		}
		rig, err := build(func() (*seedbench.ForwardRig, error) { return seedbench.NewForwardRig(o) })
		if err != nil {
			return fmt.Errorf("%s: %w", c.label(), err)
		}
		rigs[i] = rig
		blk.Built = append(blk.Built, c.label())
		if built != nil {
			built(c, rig)
		}
		rig.Resume()
		time.Sleep(r.o.Warmup)
		rig.Pause()
		rig.WaitQuiet(quietLimit)
	}
	for round := range rounds {
		sums := make([]seedbench.ForwardResult, len(cells))
		unquiet := make([]int, len(cells))
		for range r.o.Slices {
			var names []string
			for _, i := range r.rng.Perm(len(cells)) {
				rig := rigs[i]
				names = append(names, cells[i].label())
				rig.Resume()
				time.Sleep(r.o.Settle)
				res := rig.Run(r.o.Window/time.Duration(r.o.Slices), time.Hour, nil)
				rig.Pause()
				if !rig.WaitQuiet(quietLimit) {
					unquiet[i]++
				}
				sums[i] = sums[i].Plus(res)
			}
			blk.Orders = append(blk.Orders, names)
		}
		for i, c := range cells {
			record(c, round, sums[i], unquiet[i])
		}
	}
	return nil
}

// addBlock returns a function that appends a Block to rev and returns it
// (valid until the next call).
func (r *runner) addBlock(rev *Review) func() *Block {
	return func() *Block {
		rev.Blocks = append(rev.Blocks, Block{})
		return &rev.Blocks[len(rev.Blocks)-1]
	}
}

// txCell is one transmit rig of a section.
type txCell struct {
	name string
	opts seedbench.TxOptions
}

// txBlock builds one transmit rig per cell in a random order, each on its
// own goroutine, warms each up with two senders, measures rounds rounds of
// each fan-in in fanins (the cells in a new random order in every slice,
// each rig drained before the next runs), and closes them.
func (r *runner) txBlock(procs int, cells []txCell, fanins []int, blk func(senders int) *Block,
	record func(c txCell, senders, round int, res seedbench.TxResult, unquiet int)) error {
	return withProcs(procs, func() (err error) {
		rigs := make([]*seedbench.TxRig, len(cells))
		defer func() {
			for _, rig := range rigs {
				if rig == nil {
					continue
				}
				if cerr := rig.Close(); cerr != nil {
					err = errors.Join(err, fmt.Errorf("rig teardown: %w", cerr))
				}
			}
		}()
		var builtOrder []string
		for _, i := range r.rng.Perm(len(cells)) {
			o := cells[i].opts
			if r.o.Quick && o.ZonePkts == 0 {
				o.ZonePkts = quickZone // smaller rigs build faster; -quick measures nothing
			}
			rig, err := build(func() (*seedbench.TxRig, error) { return seedbench.NewTxRig(o) })
			if err != nil {
				return err
			}
			rigs[i] = rig
			builtOrder = append(builtOrder, cells[i].name)
			rig.RunSenders(2, r.o.Warmup)
			rig.WaitQuiet(quietLimit)
		}
		for _, n := range fanins {
			b := blk(n)
			b.GOMAXPROCS, b.Senders, b.Rounds, b.Built = procs, n, r.o.Rounds, slices.Clone(builtOrder)
			for round := range r.o.Rounds {
				sums := make([]seedbench.TxResult, len(cells))
				unquiet := make([]int, len(cells))
				for range r.o.TxSlices {
					var names []string
					for _, i := range r.rng.Perm(len(cells)) {
						names = append(names, cells[i].name)
						sums[i] = sums[i].Plus(rigs[i].RunSendersWarm(n, r.o.Settle, r.o.Window/time.Duration(r.o.TxSlices)))
						if !rigs[i].WaitQuiet(quietLimit) {
							unquiet[i]++
						}
					}
					b.Orders = append(b.Orders, names)
				}
				for i, c := range cells {
					record(c, n, round, sums[i], unquiet[i])
				}
			}
		}
		return nil
	})
}

// sequential runs a section's blocks: block(first, cells) measures a
// block of the given cells (all of them for the first); after each block
// at one of the rule's looks, look(n) judges the n rounds so far and
// returns the cells still needed to decide, none when the verdict is
// decided. It stops there, at Options.MaxRounds, or once the section has
// run for Options.Cap (then it looks where it stopped, in place of the
// next look; the block running when the cap passes is finished, so a
// section may overrun it by one block). -quick runs one block and does
// not look.
func (r *runner) sequential(all []int, block func(first bool, cells []int) error, look func(n int) []int) error {
	start := time.Now()
	cells := all
	for n := 0; ; {
		if err := block(n == 0, cells); err != nil {
			return err
		}
		n += r.o.Rounds
		if r.o.Quick {
			return nil
		}
		capped := n+r.o.Rounds > r.o.MaxRounds || time.Since(start) >= r.o.Cap
		if r.rule.isLook(n) || capped {
			cells = look(n)
			if len(cells) == 0 || capped {
				return nil
			}
		}
		r.prog.note("undecided after %d rounds: %d more rounds of %d cell(s), rigs rebuilt in a new order", n, r.o.Rounds, len(cells))
	}
}
