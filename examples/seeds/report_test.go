package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullReport is a report with every field set, for the schema tests.
func fullReport() *Report {
	ru := newRule(7, 224)
	p := Point{Variant: "drbr", Senders: 2, Batch: 4, GOMAXPROCS: 2, Metrics: map[string]Stat{MGbps: stat(1, 2, 3), MCPU: stat(300, 310, 305)},
		Counts: []Counts{{ElapsedNs: 1, CPUNs: 2, Packets: 3, Offered: 4, Refused: 5, Drops: 6, InvolSwitches: 7, Unquiet: 8}}}
	c := ru.judge(cmpSpec{name: "drbr/mp_ring at 2 senders", better: "drbr", worse: "mpring", metric: MCPU, basis: "iflib", senders: 2, batch: 4,
		freebsd: []float64{2.05}, freebsdNs: []float64{11}, need: 4, cpus: 2},
		rounds(7, 100, 0, 0.01, 1), rounds(7, 200, 0, 0.01, 2), rounds(7, 50, 0, 0.01, 3), []float64{1, 2}, []float64{2, 1})
	b := ru.judge(cmpSpec{name: "cost", better: "batched", worse: "per-packet", metric: MCPU, bound: 1.03, freebsd: []float64{1.015}, need: 1, cpus: 1},
		rounds(3, 100, 0, 0.01, 1), rounds(3, 100, 0, 0.01, 2), nil, nil, nil)
	return &Report{
		Schema: Schema, Command: "go run ./examples/seeds -quick", Started: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Seconds: 12.5,
		Machine: Machine{CPUs: 2, GOMAXPROCS: 2, Go: "go1.26", OS: "linux", Arch: "amd64", CPUModel: "x", LoadAvg: []float64{1, 2, 3}, LoadAvgEnd: []float64{1, 2, 3}},
		Settings: Settings{Quick: true, Rounds: 3, MaxRounds: 3, CapS: 60, WindowMs: 20, WarmupMs: 10, Slices: 1, TxSlices: 1, SettleMs: 2, Seed: 42,
			Senders: []int{1, 2}, Procs: []int{1, 2}},
		Rule: ru,
		Reviews: []Review{{
			ID: SecD24094, Title: "t", Setup: "s", Claim: "c", Notes: []string{"n"}, Seconds: 1.5,
			FreeBSD:     []Figure{{Label: "l", Value: 3.67, Unit: "Mpps", Machine: "m"}},
			Points:      []Point{p},
			Comparisons: []Comparison{c, b},
			Verdict:     Verdict{Result: Reproduced, Short: "7 rounds", Why: "w", CPUReason: "c", HereReason: "h", Rounds: 7},
			Placement:   &Placement{Fixture: "f", Here: "h", HereDiffers: true, Pinned: "p", Pair: []int{0, 1}, L2: true},
			Blocks:      []Block{{GOMAXPROCS: 1, Senders: 2, Rounds: 3, Built: []string{"a", "b"}, Orders: [][]string{{"b", "a"}}}},
		}},
		AFXDP: &AFXDP{Skipped: "no", Setup: "s", Points: []Point{p}, Orders: [][]string{{"hand", "iflib"}}},
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
	for _, bad := range []string{`{"schema":"other"}`, `{"schema":"goiflib.seeds/v2","nosuch":1}`, `not json`} {
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
