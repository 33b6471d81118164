package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mod = "example.com/m"

// pkgs is a package list as .ci/apidiff writes it.
func pkgs(lines ...string) packages {
	p, err := parsePackages(mod, strings.Join(lines, "\n"))
	if err != nil {
		panic(err)
	}
	return p
}

var (
	oldP = pkgs(mod+"/iflib iflib", mod+"/bufring bufring", mod+"/cpumap cpumap",
		mod+"/examples/cpumap main", mod+"/examples/simnic simnic", mod+"/gone gone",
		mod+"/examples/tool tool")
	newP = pkgs(mod+"/iflib iflib", mod+"/bufring bufring", mod+"/cpumap cpumap",
		mod+"/examples/cpumap main", mod+"/examples/simnic simnic", mod+"/examples/tool main")
)

func TestParseReport(t *testing.T) {
	rep := strings.Join([]string{
		"- ./iflib.Config.CoreOffset: changed from *int to int",
		"- ./bufring.(*DRBR[T]).Drain: removed",
		"- ./examples/simnic.(*Generator).Start: changed from func(Endpoint) to func(Endpoint) error",
		"- ./iflib.Device.Foo, method set of *Bar: removed",
		"- package " + mod + "/gone: removed",
		"- ./examples/cpumap.Flag: removed", // a command: no API
		"",
	}, "\n")
	changes, err := parseReport(mod, rep, oldP, newP)
	require.NoError(t, err)
	var names []string
	for _, c := range changes {
		names = append(names, c.name())
	}
	assert.Equal(t, []string{
		"iflib.Config.CoreOffset",
		"bufring.DRBR.Drain",
		"examples/simnic.Generator.Start",
		"iflib.Device.Foo",
		"gone",
		"examples/tool", // importable at the baseline, a command now
	}, names)
}

func TestParseReportRefusesWhatItCannotRead(t *testing.T) {
	for _, rep := range []string{
		"Incompatible changes:",                    // a header: the script asks for -incompatible without one
		"- ./iflib.Config.CoreOffset changed",      // no ": "
		"- ./nowhere.X: removed",                   // a package in neither list
		"- ./iflib.(*Context).Foo bar: removed",    // not a name
		"- package example.org/other/x: removed",   // another module
		"- github.com/other/pkg.T: changed from X", // an object outside the module
	} {
		_, err := parseReport(mod, rep+"\n", oldP, newP)
		assert.Error(t, err, rep)
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"(*DRBR[T]).Drain":                         "DRBR.Drain",
		"(*bufring.DRBR).Drain(quota) (more, err)": "bufring.DRBR.Drain(quota) (more, err)",
		"bufring.DRBR[T].Drain":                    "bufring.DRBR.Drain",
		"bufring.(*DRBR).Drain":                    "bufring.DRBR.Drain",
		"(bufring.Ring[T]).Cap":                    "bufring.Ring.Cap",
		"(*iflib.Context).RxQueueStats(qid) RxStats → RxQueueStats(qid) (RxQueueStats, error)": "iflib.Context.RxQueueStats(qid) RxStats → RxQueueStats(qid) (RxQueueStats, error)",
		"f(x).M":                     "f(x).M", // a call's argument, not a receiver
		"func(v T) bool":             "func(v T) bool",
		"(*examples/simnic.NIC).Bus": "examples/simnic.NIC.Bus",
	} {
		assert.Equal(t, want, normalize(in), in)
	}
}

func TestListedIn(t *testing.T) {
	for _, c := range []struct {
		span, name string
		want       bool
	}{
		{"bufring.NewDRBR(size, n, xmit)", "bufring.NewDRBR", true},
		{"bufring.NewDRBRWith(cfg)", "bufring.NewDRBR", false},
		{"iflib.RxStats", "iflib.RxStats", true},
		{"iflib.RxStats.Packets", "iflib.RxStats", false},
		{"iflib.RxStats.", "iflib.RxStats", true}, // a full stop ends it
		{"xiflib.RxStats", "iflib.RxStats", false},
		{"examples/simnic.Driver.Teardown", "simnic.Driver.Teardown", false},
		{"examples/simnic.Driver.Teardown", "examples/simnic.Driver.Teardown", true},
		{"a iflib.RxStats b iflib.RxStats", "iflib.RxStats", true},
		{"myiflib.RxStats, then iflib.RxStats", "iflib.RxStats", true},
		{"bufring.DRBR[T]", "bufring.DRBR", true},
	} {
		assert.Equal(t, c.want, listedIn(c.span, c.name), "%q in %q", c.name, c.span)
	}
}

func TestQualifiers(t *testing.T) {
	q := newQualifiers(oldP, newP)
	assert.Equal(t, "cpumap", q["cpumap"], "a whole path names its package, not examples/cpumap")
	assert.Equal(t, "examples/cpumap", q["examples/cpumap"])
	assert.Equal(t, "examples/simnic", q["simnic"], "a unique suffix")
	assert.Equal(t, "examples/simnic", q["examples/simnic"])
	_, ok := q["examples"]
	assert.False(t, ok, "a directory is no package")

	amb := newQualifiers(pkgs(mod+"/a/x x", mod+"/b/x x"), pkgs(mod+"/a/x x"))
	_, ok = amb["x"]
	assert.False(t, ok, "x names two packages: neither may be written as x")
	assert.Equal(t, "a/x", amb["a/x"])
}

const changelog = "# Changelog\n\n## Unreleased\n\n" +
	"### Breaking changes\n\n" +
	"Intro naming `iflib.Config.CoreOffset` outside any bullet.\n\n" +
	"#### bufring\n" +
	"- `(*bufring.DRBR).Drain(quota)` → `Restart()`,\n" +
	"  and `bufring.XmitFunc` →\n" +
	"  `DRBRConfig.Xmit`.\n" +
	"- `simnic.Generator.Start` now returns an error.\n" +
	"```\n- `iflib.RxStats` → inside a fence\n```\n" +
	"### iflib\n" +
	"- `iflib.RxStats` → `iflib.RxQueueStats` (after the section)\n" +
	"## Older release\n\n### Breaking changes\n" +
	"- `iflib.Config.CoreOffset` → an older release's bullet\n"

func TestBreakingBullets(t *testing.T) {
	bs, err := breakingBullets(changelog)
	require.NoError(t, err)
	require.Len(t, bs, 2)
	assert.Equal(t, 10, bs[0].line)
	assert.Equal(t, []string{"bufring.DRBR.Drain(quota)", "Restart()", "bufring.XmitFunc", "DRBRConfig.Xmit"}, bs[0].spans)
	assert.Equal(t, []string{"simnic.Generator.Start"}, bs[1].spans)

	_, err = breakingBullets("# Changelog\n\n- `iflib.X` → y\n")
	assert.ErrorContains(t, err, "Breaking changes")
}

// TestUnlistedBreakFails is the check's contract: every incompatible change
// needs a bullet with its name and an arrow, and the report names those that
// lack one.
func TestUnlistedBreakFails(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	report := write("report", strings.Join([]string{
		"- ./bufring.(*DRBR[T]).Drain: removed",
		"- ./bufring.XmitFunc: removed",
		"- ./examples/simnic.(*Generator).Start: changed from func(Endpoint) to func(Endpoint) error",
		"- ./iflib.RxStats: removed",
		"- ./iflib.Config.CoreOffset: changed from *int to int",
	}, "\n")+"\n")
	var list []string
	for rel, name := range oldP {
		list = append(list, mod+"/"+rel+" "+name)
	}
	oldF := write("old.pkgs", strings.Join(list, "\n"))
	newF := write("new.pkgs", strings.Join(list, "\n"))
	cl := write("CHANGELOG.md", changelog)

	res, err := run(mod, report, oldF, newF, cl)
	require.NoError(t, err)
	var missing []string
	for _, c := range res.missing {
		missing = append(missing, c.name())
	}
	// Drain and XmitFunc are listed; Start is named without an arrow;
	// RxStats only after the section and in a fence; CoreOffset only in
	// prose and in an older release's section.
	assert.Equal(t, []string{"examples/simnic.Generator.Start", "iflib.RxStats", "iflib.Config.CoreOffset"}, missing)

	var out bytes.Buffer
	res.print(&out, "CHANGELOG.md", "5f7e76a", false)
	assert.Contains(t, out.String(), "apidiff: 5 incompatible changes since 5f7e76a, 2 listed in CHANGELOG.md's Breaking changes, 3 not")
	assert.Contains(t, out.String(), "- `simnic.Generator.Start`: examples/simnic.(*Generator).Start: changed")
	assert.Contains(t, out.String(), "but that bullet has no →")

	// Listing them makes the check pass.
	fixed := strings.Replace(changelog, "#### bufring\n", "#### bufring\n"+
		"- `simnic.Generator.Start` → returns error; `iflib.RxStats` → `iflib.RxQueueStats`\n"+
		"- `iflib.Config.CoreOffset` `*int` → `int`\n", 1)
	write("CHANGELOG.md", fixed)
	res, err = run(mod, report, oldF, newF, cl)
	require.NoError(t, err)
	assert.Empty(t, res.missing)
}
