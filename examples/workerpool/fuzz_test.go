package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/race"
	"github.com/goiflib/goiflib/internal/testutil"
	"github.com/goiflib/goiflib/mpring"
)

// FuzzFlags is the fuzzer over the command's flags (issue 20 §1): its
// input is a command line (split on spaces; the seed corpus has one per
// flag edge). parse must accept it or refuse it with a *flagError
// (errors.Is errFlag) that names the flag — never panic — and whatever it
// accepts must lie in the documented ranges. An accepted configuration is
// then run, shortened to a few thousand jobs on at most 8 workers and 64
// producers (the flags' shape, not their size), within a bound: every mode
// it names must process every job exactly once, in order per flow, and
// leave no goroutine behind. A failure prints the command line; go test
// saves it under testdata/fuzz/FuzzFlags and replays it with
//
//	go test -run '^FuzzFlags$/<name>' ./examples/workerpool/
//
// A long run (README): go test -run '^$' -fuzz '^FuzzFlags$' -fuzztime 1h -parallel 1 ./examples/workerpool/
func FuzzFlags(f *testing.F) {
	for _, s := range []string{
		"", "-h", "-mode all", "-mode nope", "-mode", "-workers 0", "-workers -1", "-workers 1024", "-workers 1025", "-workers 65535",
		"-workers 9223372036854775807", "-workers 99999999999999999999", "-producers 0", "-producers 65536 -workers 1",
		"-producers 65536 -workers 300", "-items 0", "-items -5", "-items 9223372036854775807 -workers 1 -producers 1",
		"-inbox 3", "-inbox 0", "-inbox 1", "-inbox 2", "-inbox 1048576", "-inbox 2097152", "-inbox 65536 -mode mpring",
		"-inbox 131072 -mode mpring", "-inbox 2 -mode mpring", "-inbox 4 -mode mpring", "-inbox 2 -mode all", "-work -1", "-work 1048577", "-work 0 -mode chan", "-unknown", "-workers=3 -producers=7 extra",
		"-mode drbr -workers 3 -producers 5 -inbox 4", "-mode mpsc -producers 64 -workers 2 -inbox 2", "--workers 2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		var out bytes.Buffer
		var c config
		var err error
		func() {
			defer func() {
				p := recover()
				require.Nil(t, p, "parse(%q) panicked: %v", line, p)
			}()
			c, err = parse(args, &out)
		}()
		if err != nil {
			require.False(t, !errors.Is(err, errFlag) && !errors.Is(err, flag.ErrHelp), "parse(%q): %v: not a flag error", line, err)
			var fe *flagError
			if errors.As(err, &fe) && fe.flag != "" {
				require.Contains(t, err.Error(), "-"+fe.flag, "parse(%q): %v does not name -%s", line, err, fe.flag)
			}
			return
		}
		require.GreaterOrEqual(t, c.workers, 1, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.LessOrEqual(t, c.workers, maxWorkers, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.GreaterOrEqual(t, c.producers, 1, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.LessOrEqual(t, c.producers, maxProducers, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.GreaterOrEqual(t, c.items, 1, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.GreaterOrEqual(t, c.inbox, 2, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.LessOrEqual(t, c.inbox, maxInbox, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.Zero(t, c.inbox&(c.inbox-1), "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.GreaterOrEqual(t, c.work, 0, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.LessOrEqual(t, c.work, maxWork, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.LessOrEqual(t, c.workers*c.producers, maxProduct, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.LessOrEqual(t, c.workers*c.inbox, maxProduct, "parse(%q) accepted %+v, outside the documented ranges", line, c)
		require.False(t, (c.mode == "mpring" || c.mode == "all") && (c.inbox < 4 || c.inbox > mpring.MaxSize), "parse(%q) accepted %+v, outside the documented ranges", line, c)
		// The short run.
		c.items, c.workers, c.producers, c.work = min(c.items, 3000), min(c.workers, 8), min(c.producers, 64), min(c.work, 4)
		if race.Enabled {
			c.items = min(c.items, 500)
		}
		before := runtime.NumGoroutine()
		done := make(chan error, 1)
		out.Reset()
		go func() { done <- runConfig(c, &out) }()
		select {
		case err = <-done:
		case <-time.After(60 * time.Second):
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("run of %q (%+v) did not end within 60 s\n%s", line, c, buf[:runtime.Stack(buf, true)]))
		}
		require.NoError(t, err, "run %q (%+v): %v\n%s", line, c, err, out.String())
		for _, m := range modes {
			require.False(t, (c.mode == "all" || c.mode == m.name) && !strings.Contains(out.String(), fmt.Sprintf("%s: %d jobs processed exactly once", m.name, c.items)), "run %q (%+v): mode %s did not report all jobs\n%s", line, c, m.name, out.String())
		}
		testutil.Eventually(t, fmt.Sprintf("run %q to leave no goroutine", line), func() bool { return runtime.NumGoroutine() <= before }, func() string {
			buf := make([]byte, 1<<20)
			return fmt.Sprintf("%d goroutines left\n%s", runtime.NumGoroutine()-before, buf[:runtime.Stack(buf, true)])
		})
	})
}
