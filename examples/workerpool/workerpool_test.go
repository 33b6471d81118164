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

func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-workers", "0"}, {"-items", "-1"}, {"-mode", "nope"}, {"-inbox", "3", "-items", "10"}, {"-unknown"},
	} {
		var out bytes.Buffer
		err := run(args, &out)
		assert.Error(t, err, "%v", args)
		assert.False(t, strings.Contains(out.String(), "processed"), "%v ran anyway", args)
	}
}
