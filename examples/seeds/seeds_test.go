package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/cputime"
)

func TestParseFlagsDefaults(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.False(t, o.Quick)
	assert.Equal(t, defaultRounds, o.Rounds)
	assert.Equal(t, defaultWindow, o.Window)
	assert.Equal(t, []int{1, 2, 4, 8, 16, 32, 64}, o.Senders)
	want := []int{1}
	if g := runtime.GOMAXPROCS(0); g != 1 {
		want = append(want, g)
	}
	assert.Equal(t, want, o.Procs)
	assert.Equal(t, allSections, o.Only)
	assert.True(t, o.AFXDP)
	assert.Empty(t, o.JSON)
	assert.Empty(t, o.SVG)
	assert.Positive(t, o.Warmup)
	assert.Positive(t, o.Settle)
	assert.LessOrEqual(t, o.Settle, o.Window)
}

func TestParseFlagsQuick(t *testing.T) {
	o, err := parseFlags([]string{"-quick"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.Quick)
	assert.Equal(t, quickWindow, o.Window)
	assert.Equal(t, 3, o.Rounds)

	// An explicit window or round count wins over -quick's.
	o, err = parseFlags([]string{"-window", "50ms", "-quick", "-rounds", "4"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 50*time.Millisecond, o.Window)
	assert.Equal(t, 4, o.Rounds)
}

func TestParseFlagsLists(t *testing.T) {
	o, err := parseFlags([]string{"-senders", " 8, 2,8 ", "-procs", "2,1", "-only", "d27755,drbr,afxdp", "-afxdp=false",
		"-json", "x.json", "-svg", "charts"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{8, 2}, o.Senders, "order kept, duplicates dropped")
	assert.Equal(t, []int{2, 1}, o.Procs)
	assert.Equal(t, []string{SecDRBR, SecD27755}, o.Only, "documented order, case-insensitive, afxdp off")
	assert.Equal(t, "x.json", o.JSON)
	assert.Equal(t, "charts", o.SVG)
	assert.Equal(t, []string{"-senders", " 8, 2,8 ", "-procs", "2,1", "-only", "d27755,drbr,afxdp", "-afxdp=false",
		"-json", "x.json", "-svg", "charts"}, o.Args)
}

func TestParseFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-rounds", "2"}, {"-rounds", "101"}, {"-window", "0"}, {"-window", "2m"},
		{"-senders", "0"}, {"-senders", "x"}, {"-senders", ""}, {"-procs", "1,-1"},
		{"-only", "D99999"}, {"-nosuchflag"}, {"extra"},
	} {
		var stderr bytes.Buffer
		_, err := parseFlags(args, &stderr)
		assert.ErrorIs(t, err, ErrUsage, "%q", args)
	}
	_, err := parseFlags([]string{"-h"}, io.Discard)
	assert.ErrorIs(t, err, flag.ErrHelp)
}

func stat(xs ...float64) Stat { return newStat(xs) }

func TestNewStat(t *testing.T) {
	s := stat(3, 1, 2)
	assert.Equal(t, []float64{3, 1, 2}, s.Samples, "samples stay in round order")
	assert.Equal(t, 2.0, s.Median)
	assert.Equal(t, 1.0, s.Min)
	assert.Equal(t, 3.0, s.Max)
	assert.Equal(t, 2.5, stat(4, 1, 3, 2).Median)
	assert.True(t, math.IsNaN(stat().Median))
}

func TestSignTest(t *testing.T) {
	for _, tc := range []struct {
		k, n int
		want bool
	}{
		{3, 3, true}, {2, 3, false}, {4, 4, true}, {5, 5, true}, {4, 5, false},
		{6, 6, true}, {5, 6, true}, {4, 6, false}, {6, 7, true}, {5, 7, false}, {0, 0, false},
	} {
		assert.Equal(t, tc.want, agreeEnough(tc.k, tc.n), "%d of %d", tc.k, tc.n)
	}
}

func TestVerdictRule(t *testing.T) {
	// b is better than w by 10 % in every round (higher is better).
	b, w := stat(110, 220, 330), stat(100, 200, 300)
	c := compare("x", "b", "w", MMpps, b, w, []float64{1.08}, 1, 2)
	assert.True(t, c.Holds)
	assert.True(t, c.SizeOK)
	assert.InDelta(t, 1.1, c.Advantage.Median, 1e-9)
	assert.Equal(t, 3, c.Agree)
	assert.Equal(t, Reproduced, decide([]Comparison{c}, "cpu", "other").Result)

	// The same in cpu-ns/pkt, where lower is better.
	c = compare("x", "b", "w", MCPU, w, b, []float64{1.08}, 1, 2)
	assert.True(t, c.Holds)
	assert.InDelta(t, 1.1, c.Advantage.Median, 1e-9)

	// Too large an effect: direction only.
	c = compare("x", "b", "w", MMpps, b, w, []float64{1.02}, 1, 2)
	assert.False(t, c.SizeOK)
	assert.Equal(t, DirectionReproduced, decide([]Comparison{c}, "", "").Result)

	// One round against: with 3 rounds the direction does not hold.
	c = compare("x", "b", "w", MMpps, stat(110, 190, 330), w, nil, 1, 2)
	assert.False(t, c.Holds)
	assert.Equal(t, 2, c.Agree)
	v := decide([]Comparison{c}, "needs more", "other")
	assert.Equal(t, NotReproduced, v.Result, "enough CPUs: not reproduced")
	assert.Contains(t, v.Why, "too noisy", "the median favours the claim")

	// The opposite direction in the median: the review's reason is given.
	v = decide([]Comparison{compare("x", "b", "w", MMpps, w, b, nil, 1, 2)}, "needs more", "other")
	assert.Equal(t, NotReproduced, v.Result)
	assert.Contains(t, v.Why, "other")
	assert.NotContains(t, v.Why, "too noisy")

	// The same failure with too few CPUs.
	c.NeedCPUs = 8
	v = decide([]Comparison{c}, "needs more", "other")
	assert.Equal(t, NotOnTheseCPUs, v.Result)
	assert.Contains(t, v.Why, "needs more")

	// A failing comparison that does not decide is ignored.
	c.Decides = false
	ok := compare("y", "b", "w", MMpps, b, w, nil, 1, 2)
	assert.Equal(t, Reproduced, decide([]Comparison{c, ok}, "", "").Result)
	assert.Equal(t, NotMeasured, decide(nil, "", "").Result)

	// A bound: a cost of 1 % within a bound of 3 % holds; 5 % does not.
	bd := bound("z", "batched", "per", MCPU, stat(101, 202, 303), stat(100, 200, 300), []float64{1.015}, 1.03, 1, 1)
	assert.True(t, bd.Holds)
	assert.Equal(t, Reproduced, decide([]Comparison{bd}, "", "").Result)
	bd = bound("z", "batched", "per", MCPU, stat(105, 210, 315), stat(100, 200, 300), []float64{1.015}, 1.03, 1, 1)
	assert.False(t, bd.Holds)
	assert.Equal(t, NotReproduced, decide([]Comparison{bd}, "", "").Result)
}

func TestSizeOK(t *testing.T) {
	fb := []float64{1.015, 1.18} // effects 1.5 % .. 18 %
	assert.True(t, sizeOK(1.0075, fb))
	assert.False(t, sizeOK(1.007, fb))
	assert.True(t, sizeOK(1.36, fb))
	assert.False(t, sizeOK(1.37, fb))
	assert.True(t, sizeOK(0.5, nil))
}

// fullReport is a report with every field set, for the schema tests.
func fullReport() *Report {
	p := Point{Variant: "drbr", Senders: 2, Batch: 4, GOMAXPROCS: 2, Metrics: map[string]Stat{MGbps: stat(1, 2, 3), MCPU: stat(300, 310, 305)}}
	c := compare("drbr/mp_ring at 2 senders", "drbr", "mpring", MGbps, stat(2, 3, 4), stat(1, 1, 1), []float64{2.05}, 4, 2)
	b := bound("cost", "batched", "per-packet", MCPU, stat(1, 1, 1), stat(1, 1, 1), []float64{1.015}, 1.03, 1, 1)
	return &Report{
		Schema: Schema, Command: "go run ./examples/seeds -quick", Started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Seconds: 12.5,
		Machine:  Machine{CPUs: 2, GOMAXPROCS: 2, Go: "go1.26", OS: "linux", Arch: "amd64", CPUModel: "x", LoadAvg: []float64{1, 2, 3}, LoadAvgEnd: []float64{1, 2, 3}},
		Settings: Settings{Quick: true, Rounds: 3, WindowMs: 20, WarmupMs: 10, SettleMs: 2, Senders: []int{1, 2}, Procs: []int{1, 2}},
		Reviews: []Review{{
			ID: SecD24094, Title: "t", Setup: "s", Claim: "c", Notes: []string{"n"},
			FreeBSD:     []Figure{{Label: "l", Value: 3.67, Unit: "Mpps", Machine: "m"}},
			Points:      []Point{p},
			Comparisons: []Comparison{c, b},
			Verdict:     Verdict{Result: Reproduced, Why: "w"},
			Placement:   &Placement{Fixture: "f", Here: "h", HereDiffers: true, Pinned: "p"},
		}},
		AFXDP: &AFXDP{Skipped: "no", Setup: "s", Points: []Point{p}},
	}
}

// TestJSONRoundTrip writes a report with every field set and reads it
// back: nothing is lost, and a NaN becomes null and comes back NaN.
func TestJSONRoundTrip(t *testing.T) {
	rep := fullReport()
	rep.Reviews[0].Points = append(rep.Reviews[0].Points, Point{Variant: "empty", Metrics: map[string]Stat{MMpps: stat()}})
	var buf bytes.Buffer
	require.NoError(t, writeReport(&buf, rep))
	assert.Contains(t, buf.String(), `"median": null`)
	got, err := readReport(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.True(t, math.IsNaN(got.Reviews[0].Points[1].Metrics[MMpps].Median))
	var buf2 bytes.Buffer
	require.NoError(t, writeReport(&buf2, got))
	assert.Equal(t, buf.String(), buf2.String())

	// Wrong schema, unknown fields and garbage are typed errors.
	for _, bad := range []string{`{"schema":"other"}`, `{"schema":"goiflib.seeds/v1","nosuch":1}`, `not json`} {
		_, err := readReport(strings.NewReader(bad))
		assert.ErrorIs(t, err, ErrSchema, bad)
	}
	// A NaN sample is refused rather than written as something else.
	rep.Reviews[0].Points[0].Metrics[MMpps] = Stat{Samples: []float64{math.NaN()}}
	assert.Error(t, writeReport(io.Discard, rep))
}

// documentedSchema reads docs/seeds.md's "JSON schema" section: each
// "### Object" heading and the fields in its table.
func documentedSchema(t *testing.T) map[string][]string {
	f, err := os.Open(filepath.Join("..", "..", "docs", "seeds.md"))
	require.NoError(t, err)
	defer f.Close()
	doc := map[string][]string{}
	in, obj := false, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## "):
			in = l == "## JSON schema"
		case in && strings.HasPrefix(l, "### "):
			obj = strings.TrimPrefix(l, "### ")
			doc[obj] = nil
		case in && obj != "" && strings.HasPrefix(l, "| `"):
			field, _, _ := strings.Cut(strings.TrimPrefix(l, "| `"), "`")
			doc[obj] = append(doc[obj], field)
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, doc, "docs/seeds.md has no JSON schema section")
	return doc
}

// codeSchema lists the JSON fields of Report and every struct it holds,
// by type name.
func codeSchema() map[string][]string {
	out := map[string][]string{}
	var walk func(reflect.Type)
	walk = func(tp reflect.Type) {
		for tp.Kind() == reflect.Pointer || tp.Kind() == reflect.Slice || tp.Kind() == reflect.Map {
			tp = tp.Elem()
		}
		if tp.Kind() != reflect.Struct || tp.PkgPath() != reflect.TypeOf(Report{}).PkgPath() {
			return
		}
		if _, seen := out[tp.Name()]; seen {
			return
		}
		out[tp.Name()] = []string{}
		for i := range tp.NumField() {
			f := tp.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			out[tp.Name()] = append(out[tp.Name()], name)
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Report{}))
	return out
}

// TestSchemaDocumented: docs/seeds.md documents exactly the objects and
// fields the JSON has, and a full report uses only documented fields.
func TestSchemaDocumented(t *testing.T) {
	doc, code := documentedSchema(t), codeSchema()
	for obj := range code {
		sort.Strings(code[obj])
	}
	for obj := range doc {
		sort.Strings(doc[obj])
	}
	assert.Equal(t, code, doc, "docs/seeds.md's JSON schema and the code differ")

	// Every key of a marshalled full report is a documented field of the
	// object it is in.
	var buf bytes.Buffer
	require.NoError(t, writeReport(&buf, fullReport()))
	var generic map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &generic))
	all := map[string]bool{}
	for _, fs := range doc {
		for _, f := range fs {
			all[f] = true
		}
	}
	var check func(v any, metrics bool)
	check = func(v any, metrics bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if !metrics {
					assert.True(t, all[k], "field %q is not documented", k)
				}
				check(e, k == "metrics")
			}
		case []any:
			for _, e := range x {
				check(e, false)
			}
		}
	}
	check(generic, false)
}

// TestQuickSmoke runs the command as CI's smoke test: -quick with the
// JSON and the charts, AF_XDP off. Every section is there, every point
// has a sample per round, the verdicts are the documented ones, and the
// files are what -json and -svg promise.
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
		assert.Contains(t, []string{Reproduced, DirectionReproduced, NotOnTheseCPUs, NotReproduced, NotMeasured}, r.Verdict.Result, r.ID)
		assert.NotEmpty(t, r.Verdict.Why, r.ID)
		assert.NotEmpty(t, r.FreeBSD, r.ID)
		if r.ID == SecD24094 && len(r.Points) == 0 {
			// One CPU, or no pinning: D24094 has nowhere to place a task
			// apart and measures nothing.
			assert.Contains(t, []string{NotMeasured, NotOnTheseCPUs}, r.Verdict.Result)
			continue
		}
		assert.NotEmpty(t, r.Points, r.ID)
		for _, p := range r.Points {
			for m, s := range p.Metrics {
				assert.Len(t, s.Samples, o.Rounds, "%s %s %s", r.ID, p.Variant, m)
			}
			if cputime.Supported {
				assert.Positive(t, p.Metrics[MCPU].Median, "%s %s: cpu-ns/pkt", r.ID, p.Variant)
			}
		}
		assert.NotEmpty(t, r.Comparisons, r.ID)
	}
	assert.Equal(t, []string{SecDRBR, SecD17901, SecD24094, SecD53674, SecD27755}, ids)
	assert.Nil(t, rep.AFXDP)

	out := stdout.String()
	for _, want := range []string{"machine: ", "GOMAXPROCS", "cpu-ns/pkt", "drop %", "lost", "docs/seeds.md", "verdict: ", "== summary",
		"drbr never shows drops"} {
		assert.Contains(t, out, want)
	}
	for _, bad := range []string{"shared" + "/", "seed " + "00", "reference " + "§"} { // built so as not to match the repository's own check
		assert.NotContains(t, out, bad, "the output points outside the repository")
	}
	assert.Contains(t, stderr.String(), "about")
	lines := strings.Count(stderr.String(), "\n")
	assert.Greater(t, lines, 20, "progress while it runs")

	f, err := os.Open(jsonPath)
	require.NoError(t, err)
	defer f.Close()
	got, err := readReport(f)
	require.NoError(t, err)
	assert.Equal(t, len(rep.Reviews), len(got.Reviews))
	assert.True(t, got.Settings.Quick)

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

// TestPrintAFXDP: every iflib forwarder's row gives its Mpps over the
// hand loop's in the same XDP mode.
func TestPrintAFXDP(t *testing.T) {
	pt := func(variant string, mpps float64) Point {
		return Point{Variant: variant, Metrics: map[string]Stat{MMpps: stat(mpps), MCPU: stat(1000)}}
	}
	var buf bytes.Buffer
	printAFXDP(&buf, &AFXDP{Setup: "s", Points: []Point{
		pt("native/iflib", 0.5), pt("native/iflib-simple", 0.25), pt("native/hand", 1), pt("generic/iflib", 0.3), pt("generic/hand", 0.4),
	}})
	rows := map[string]string{}
	for _, l := range strings.Split(buf.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = l
		}
	}
	for variant, ratio := range map[string]string{"native/iflib": "0.50", "native/iflib-simple": "0.25", "generic/iflib": "0.75"} {
		assert.True(t, strings.HasSuffix(rows[variant], " "+ratio), "%s: %q", variant, rows[variant])
	}
	assert.True(t, strings.HasSuffix(rows["native/hand"], "]"), "no ratio on the hand loop's row: %q", rows["native/hand"])
}
