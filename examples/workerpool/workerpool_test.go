package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/race"
)

// TestRun runs the command with every fan-in at a few shapes (more
// producers than CPUs, fewer, one worker, a small inbox so producers wait)
// and checks its report: every job processed exactly once and in order
// (measure fails otherwise), split over the workers.
func TestRun(t *testing.T) {
	items := "20000"
	if testing.Short() || race.Enabled {
		items = "4000"
	}
	for _, args := range [][]string{
		{"-mode", "all", "-producers", "16", "-workers", "2", "-inbox", "16"},
		{"-mode", "all", "-producers", "1", "-workers", "1"},
		{"-mode", "mpsc", "-producers", "64", "-workers", "3", "-work", "0"},
	} {
		var out bytes.Buffer
		require.NoError(t, run(append(args, "-items", items), &out), "%v\n%s", args, out.String())
		report := out.String()
		for _, m := range modes {
			if args[1] == "all" || args[1] == m.name {
				assert.Contains(t, report, m.name+": "+items+" jobs processed exactly once, in order per flow", "%v", args)
			}
		}
		if args[1] == "all" || args[1] == "mpsc" {
			assert.Contains(t, report, "workers pinned", "%v: the mpsc pool reports its placement", args)
		}
	}
}

// Every flag out of its range, and every product of two that is, is a
// *flagError naming the flag and its value, before anything runs (issue 20
// §2 item 4); so is what the flag package cannot parse.
func TestRunBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"-workers", "0"}, "workers"}, {[]string{"-workers", "1025"}, "workers"}, {[]string{"-items", "-1"}, "items"},
		{[]string{"-mode", "nope"}, "mode"}, {[]string{"-inbox", "3", "-items", "10"}, "inbox"}, {[]string{"-inbox", "-1"}, "inbox"},
		{[]string{"-inbox", "2097152"}, "inbox"}, {[]string{"-producers", "0"}, "producers"}, {[]string{"-producers", "65537"}, "producers"},
		{[]string{"-work", "-1"}, "work"}, {[]string{"-work", "1048577"}, "work"},
		{[]string{"-workers", "1024", "-producers", "65536"}, "producers"}, {[]string{"-workers", "1024", "-inbox", "32768"}, "inbox"},
		{[]string{"-unknown"}, ""}, {[]string{"-workers", "x"}, ""}, {[]string{"-workers", "99999999999999999999"}, ""},
		{[]string{"extra"}, ""}, {[]string{"-inbox", "2", "-mode", "mpring"}, "inbox"}, {[]string{"-inbox", "131072", "-mode", "all"}, "inbox"},
	} {
		var out bytes.Buffer
		err := run(c.args, &out)
		require.ErrorIs(t, err, errFlag, "%v", c.args)
		var fe *flagError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, c.flag, fe.flag, "%v: %v", c.args, err)
		if c.flag != "" {
			assert.Contains(t, err.Error(), "-"+c.flag, "%v", c.args)
		}
		assert.False(t, strings.Contains(out.String(), "processed"), "%v ran anyway", c.args)
	}
}
