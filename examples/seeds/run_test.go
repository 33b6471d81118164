package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/internal/cputime"
)

// recompute rebuilds a comparison from the report alone: the points it
// names by variant, fan-in and batch at its GOMAXPROCS, the raw loop's
// for the iflib basis, and the rule's parameters.
func recompute(t *testing.T, rep *Report, rev *Review, c Comparison) Comparison {
	t.Helper()
	find := func(v string, senders, batch int) Point {
		p, ok := rev.find(v, senders, batch, c.CPUs)
		require.True(t, ok, "%s: point %s/%d/%d", c.Name, v, senders, batch)
		return p
	}
	b, w := find(c.Better, c.Senders, c.Batch), find(c.Worse, c.Senders, c.Batch)
	var raw []float64
	if c.Basis == "iflib" {
		raw = find(variantRaw, 0, 0).Metrics[MCPU].Samples
	}
	info := ""
	if !c.Decides && !(c.NeedCPUs > c.CPUs) {
		info = c.Why
	}
	return rep.Rule.judge(cmpSpec{name: c.Name, better: c.Better, worse: c.Worse, metric: c.Metric, senders: c.Senders, batch: c.Batch,
		basis: c.Basis, bound: c.Bound, freebsd: c.FreeBSD, freebsdNs: c.FreeBSDNs, need: c.NeedCPUs, cpus: c.CPUs, info: info},
		b.Metrics[c.Metric].Samples, w.Metrics[c.Metric].Samples, raw, b.Metrics[MBusy].Samples, w.Metrics[MBusy].Samples)
}

// TestQuickSmoke runs the command as CI's smoke test: -quick with the
// JSON and the charts, AF_XDP off. Every section is there with a sample
// per round of every metric, no verdict is given, the schedule of every
// block is recorded, every comparison and verdict recomputes from the
// JSON alone, and the charts are written (TestChartsRender looks at them).
func TestQuickSmoke(t *testing.T) {
	dir := t.TempDir()
	jsonPath, svgDir := filepath.Join(dir, "out.json"), filepath.Join(dir, "charts")
	o, err := parseFlags([]string{"-quick", "-afxdp=false", "-senders", "1,2,8", "-json", jsonPath, "-svg", svgDir}, io.Discard)
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	rep, err := run(o, &stdout, &stderr)
	require.NoError(t, err, "stderr:\n%s", stderr.String())

	ids := []string{}
	for _, r := range rep.Reviews {
		ids = append(ids, r.ID)
		assert.NotEmpty(t, r.Verdict.Why, r.ID)
		assert.NotEmpty(t, r.FreeBSD, r.ID)
		if r.ID == SecD24094 && len(r.Points) == 0 {
			// One CPU, or no pinning: D24094 has nowhere to place a task
			// apart and measures nothing.
			assert.Contains(t, []string{NotMeasured, NotOnTheseCPUs}, r.Verdict.Result)
			continue
		}
		assert.Equal(t, SmokeTest, r.Verdict.Result, r.ID)
		assert.NotEmpty(t, r.Points, r.ID)
		assert.NotEmpty(t, r.Blocks, r.ID)
		for _, b := range r.Blocks {
			assert.NotEmpty(t, b.Built, r.ID)
			slices := o.Slices
			if b.Senders > 0 {
				slices = o.TxSlices
			}
			assert.Len(t, b.Orders, b.Rounds*slices, "%s: one order per slice", r.ID)
			for _, ord := range b.Orders {
				assert.ElementsMatch(t, b.Built, ord, "%s: every rig once per slice", r.ID)
			}
		}
		var packets uint64
		for _, p := range r.Points {
			for m, s := range p.Metrics {
				assert.Len(t, s.Samples, o.Rounds, "%s %s %s", r.ID, p.Variant, m)
			}
			assert.Len(t, p.Counts, o.Rounds, "%s %s counts", r.ID, p.Variant)
			for _, c := range p.Counts {
				packets += c.Packets
				if cputime.Supported {
					assert.Positive(t, c.CPUNs, "%s %s: CPU time", r.ID, p.Variant)
				}
			}
		}
		assert.Positive(t, packets, "%s: packets", r.ID)
		assert.NotEmpty(t, r.Comparisons, r.ID)
	}
	assert.Equal(t, []string{SecDRBR, SecD17901, SecD24094, SecD53674, SecD27755}, ids)
	assert.Nil(t, rep.AFXDP)
	assert.Equal(t, o.Seed, rep.Settings.Seed)
	assert.Equal(t, newRule(o.Rounds, o.MaxRounds), rep.Rule)

	out := stdout.String()
	for _, want := range []string{"machine: ", "GOMAXPROCS", "cpu-ns/pkt", "drop %", "stalls/pkt", "CPUs busy", "detects", "docs/seeds.md",
		"verdict: ", "== summary", "smoke test", "drbr never shows drops", "load: "} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "REPRODUCED", "-quick gives no verdict")
	for _, bad := range []string{"shared" + "/", "seed " + "00", "reference " + "§"} { // built so as not to match the repository's own check
		assert.NotContains(t, out, bad, "the output points outside the repository")
	}
	assert.Contains(t, stderr.String(), "about")
	assert.Greater(t, strings.Count(stderr.String(), "\n"), 20, "progress while it runs")

	f, err := os.Open(jsonPath)
	require.NoError(t, err)
	defer f.Close()
	got, err := readReport(f)
	require.NoError(t, err)
	assert.Equal(t, len(rep.Reviews), len(got.Reviews))
	assert.True(t, got.Settings.Quick)

	// Every comparison and verdict recomputes from the file alone.
	for i := range got.Reviews {
		rev := &got.Reviews[i]
		var cs []Comparison
		for _, c := range rev.Comparisons {
			again := recompute(t, got, rev, c)
			assert.Equal(t, c.Outcome, again.Outcome, "%s: %s", rev.ID, c.Name)
			if len(c.Advantage.Samples)+len(again.Advantage.Samples) > 0 { // nil and [] alike
				assert.Equal(t, c.Advantage.Samples, again.Advantage.Samples, "%s: %s", rev.ID, c.Name)
			}
			assert.Equal(t, c.Decides, again.Decides, "%s: %s", rev.ID, c.Name)
			cs = append(cs, again)
		}
		if len(cs) > 0 {
			v := got.Rule.decide(cs, got.Settings.Quick, reasons{cpu: rev.Verdict.CPUReason, here: rev.Verdict.HereReason, hereShort: rev.Verdict.Short})
			assert.Equal(t, rev.Verdict.Result, v.Result, rev.ID)
		}
	}

	for _, name := range []string{ChartFanIn, ChartReuse, ChartPlacement, ChartPrefetch, ChartBatching} {
		if name == ChartPlacement && len(rep.Reviews[2].Points) == 0 {
			continue // nothing measured to draw
		}
		b, err := os.ReadFile(filepath.Join(svgDir, name))
		require.NoError(t, err, name)
		assert.Contains(t, string(b), "<svg", name)
	}
}

// TestRunBadSVGDir: a chart directory that cannot be made is an error,
// after the measurements.
func TestRunBadSVGDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	o, err := parseFlags([]string{"-quick", "-only", "D17901", "-svg", filepath.Join(file, "sub")}, io.Discard)
	require.NoError(t, err)
	_, err = run(o, io.Discard, io.Discard)
	require.Error(t, err)
	assert.False(t, errors.Is(err, ErrUsage))
}

// TestPrintAFXDP: rows in a fixed order whatever order the rounds ran
// in, and each iflib forwarder's per-round ratio to the hand loop as
// median [min..max].
func TestPrintAFXDP(t *testing.T) {
	pt := func(variant string, mpps float64, ratios ...float64) Point {
		p := Point{Variant: variant, Metrics: map[string]Stat{MMpps: stat(mpps), MCPU: stat(1000), MFwdCPU: stat(800), MOffered: stat(2)}}
		if len(ratios) > 0 {
			p.Metrics[MToHand] = stat(ratios...)
		}
		return p
	}
	var buf bytes.Buffer
	printAFXDP(&buf, &AFXDP{Setup: "s", Points: []Point{
		pt("generic/hand", 0.4), pt("native/hand", 1), pt("native/iflib-simple", 0.25, 0.2, 0.25, 0.3), pt("native/iflib", 0.5, 0.5, 0.4, 0.6),
		pt("generic/iflib", 0.3, 0.75, 0.7, 0.8),
	}})
	var order []string
	rows := map[string]string{}
	for _, l := range strings.Split(buf.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "/") && f[0] != "mode/forwarder" {
			rows[f[0]] = l
			order = append(order, f[0])
		}
	}
	assert.Equal(t, []string{"native/iflib", "native/iflib-simple", "native/hand", "generic/iflib", "generic/hand"}, order)
	for variant, ratio := range map[string]string{"native/iflib": "0.50 [0.40..0.60]", "native/iflib-simple": "0.25 [0.20..0.30]", "generic/iflib": "0.75 [0.70..0.80]"} {
		assert.True(t, strings.HasSuffix(rows[variant], " "+ratio), "%s: %q", variant, rows[variant])
	}
	assert.True(t, strings.HasSuffix(rows["native/hand"], "]"), "no ratio on the hand loop's row: %q", rows["native/hand"])
	assert.Contains(t, rows["native/hand"], "800 [800..800]", "forwarder-only CPU")
}

// TestCompareRuns: -compare sets the verdicts of saved runs side by side
// and tells whether they agree.
func TestCompareRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, results ...string) string {
		rep := fullReport()
		rep.Reviews = nil
		for i, r := range results {
			rep.Reviews = append(rep.Reviews, Review{ID: allSections[i], Verdict: Verdict{Result: r, Short: "s"}})
		}
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		require.NoError(t, err)
		require.NoError(t, writeReport(f, rep))
		require.NoError(t, f.Close())
		return p
	}
	a := write("a.json", Reproduced, NotOnTheseCPUs)
	b := write("b.json", Reproduced, NotOnTheseCPUs)
	c := write("c.json", Inconclusive, NotOnTheseCPUs)
	var buf bytes.Buffer
	agree, err := compareRuns([]string{a, b}, &buf)
	require.NoError(t, err)
	assert.True(t, agree)
	assert.Contains(t, buf.String(), "every review got the same verdict in all 2 runs")
	buf.Reset()
	agree, err = compareRuns([]string{a, b, c}, &buf)
	require.NoError(t, err)
	assert.False(t, agree)
	assert.Contains(t, buf.String(), "DIFFERS")
	_, err = compareRuns([]string{filepath.Join(dir, "none.json")}, io.Discard)
	assert.Error(t, err)
}

// TestPairAllocator: over a registry of two CPUs, iflib's placement with
// core_offset at the first puts queue pair 0 on the first CPU and pair 1
// on the second, whichever CPUs they are.
func TestPairAllocator(t *testing.T) {
	for _, pair := range [][]int{{0, 1}, {3, 5}, {2, 66}} {
		a, err := pairAllocator(pair)
		require.NoError(t, err)
		pl, err := a.Place(cpumap.Request{Device: "x", RxQueues: 2, TxQueues: 2, Policy: cpumap.Policy{CoreOffset: cpumap.Offset(0)}})
		require.NoError(t, err)
		assert.Equal(t, pair, pl.RxCPU, "%v", pair)
		assert.Equal(t, pair, pl.TxCPU, "%v", pair)
	}
}

// TestL2Pair: two CPUs sharing an L2 are chosen where they exist.
func TestL2Pair(t *testing.T) {
	shared, err := cpumap.Synthetic(cpumap.SyntheticConfig{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: 1, L2CoresPerGroup: 2})
	require.NoError(t, err)
	pair, l2 := l2Pair(shared, cpumap.CPUSetOf(1, 2, 3))
	assert.True(t, l2)
	assert.Equal(t, []int{2, 3}, pair, "CPU 1's neighbour 0 is not ours; 2 and 3 share")
	private, err := cpumap.Synthetic(cpumap.SyntheticConfig{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: 1})
	require.NoError(t, err)
	pair, l2 = l2Pair(private, cpumap.CPUSetOf(0, 1, 2, 3))
	assert.False(t, l2)
	assert.Equal(t, []int{0, 1}, pair)
}
