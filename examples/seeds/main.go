// Command seeds reproduces, on the simulated NIC (examples/simnic) and on
// whatever machine runs it, the measurements of the five FreeBSD reviews
// goiflib was founded on:
//
//   - "simple_tx with buf_ring/drbr deferral": Gb/s and CPU per packet of
//     1–64 senders on one TX queue in each transmit mode;
//   - D17901: ifsd_ba reuse on and off, on the plain simulated space and
//     under the IOMMU model;
//   - D24094: the queue placement before and after the change, and
//     forwarding with B's TX task pinned beside A's RX task or away from it;
//   - D53674: transmit prefetch on and off;
//   - D27755: batched and per-packet input at batch 1, 4, 16 and 32;
//
// and, where the process may use AF_XDP, forwarding over a veth pair
// through iflib beside a hand-written loop.
//
// For each review it prints what FreeBSD measured and on which machine,
// what this run measured (median [min..max] of the interleaved rounds),
// the comparisons the review's claim rests on with the interval of each
// median advantage and the smallest effect the run can detect, and a
// verdict reached by a fixed rule: reproduced, direction reproduced,
// inconclusive, not reproduced, or not measurable (on this many CPUs, or
// here at all). A verdict still undecided after the first block of rounds
// gets more blocks, with the rigs rebuilt in a new order, until it is
// decided or its section reaches a round or time cap. Progress goes to
// stderr. docs/seeds.md explains every column, the verdict rule and the
// -json schema.
//
//	go run ./examples/seeds                          # 3–5 minutes on 2 busy CPUs
//	go run ./examples/seeds -json out.json -svg charts
//	go run ./examples/seeds -quick                   # seconds: a smoke test, no verdicts
//	go run ./examples/seeds -only drbr -rounds 5 -window 500ms
//	go run ./examples/seeds -compare run1.json run2.json run3.json
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if len(o.Compare) > 0 {
		agree, err := compareRuns(o.Compare, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "seeds:", err)
			os.Exit(1)
		}
		if !agree {
			os.Exit(3)
		}
		return
	}
	if _, err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "seeds:", err)
		os.Exit(1)
	}
}

// run measures every section the options name, printing each as it
// completes, then writes the JSON and the charts. It returns the report.
func run(o Options, stdout, stderr io.Writer) (*Report, error) {
	start := time.Now()
	rep := &Report{
		Schema:  Schema,
		Command: strings.TrimSpace("go run ./examples/seeds " + strings.Join(o.Args, " ")),
		Started: start.UTC().Round(time.Second),
		Machine: thisMachine(),
		Settings: Settings{Quick: o.Quick, Rounds: o.Rounds, MaxRounds: o.MaxRounds, CapS: o.Cap.Seconds(), WindowMs: ms(o.Window), WarmupMs: ms(o.Warmup),
			SettleMs: ms(o.Settle), Slices: o.Slices, TxSlices: o.TxSlices, Seed: o.Seed, Senders: o.Senders, Procs: o.Procs},
	}
	prog := &progress{w: stderr, start: start}
	r := newRunner(o, prog)
	rep.Rule = r.rule
	xdpOK := o.runs(SecAFXDP) && xdpAvailable() == nil
	prog.plan(r.cells(xdpOK))
	printHeader(stdout, rep)
	r.prog.note("measuring %d cells in blocks of %d rounds (more blocks where a verdict is undecided); results print on stdout as each section completes", r.prog.total, o.Rounds)

	sections := []struct {
		id  string
		run func() (Review, error)
	}{
		{SecDRBR, r.drbr}, {SecD17901, r.d17901}, {SecD24094, r.d24094}, {SecD53674, r.d53674}, {SecD27755, r.d27755},
	}
	for _, s := range sections {
		if !o.runs(s.id) {
			continue
		}
		rev, err := s.run()
		if err != nil {
			return rep, fmt.Errorf("%s: %w", s.id, err)
		}
		rep.Reviews = append(rep.Reviews, rev)
		printReview(stdout, &rep.Reviews[len(rep.Reviews)-1], o)
	}
	if o.runs(SecAFXDP) {
		rep.AFXDP = r.afxdpSection()
		printAFXDP(stdout, rep.AFXDP)
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.Machine.LoadAvgEnd = loadAvg()

	var files []string
	if o.JSON != "" {
		if err := saveJSON(o.JSON, rep); err != nil {
			return rep, err
		}
		files = append(files, o.JSON)
	}
	if o.SVG != "" {
		fs, err := writeCharts(o.SVG, rep)
		files = append(files, fs...)
		if err != nil {
			return rep, err
		}
	}
	printSummary(stdout, rep, files)
	return rep, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func saveJSON(path string, rep *Report) error {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeReport(f, rep); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
