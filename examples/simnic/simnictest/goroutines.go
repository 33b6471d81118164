package simnictest

import (
	"bytes"
	"fmt"
	"runtime/pprof"
	"strings"
	"time"
)

// labelKey is the profiler label an Env puts on the goroutine that made
// it, inherited by every goroutine started from there.
const labelKey = "simnictest"

// waitGoroutines waits up to grace for every goroutine labelled with the
// Env's label to end, and reports those left with their stacks. The
// goroutine calling it, test goroutines (testing.tRunner) and runtime-only
// goroutines that inherited the label by chance (the finalizer goroutine
// is created lazily by whoever first sets a finalizer) are not counted.
func waitGoroutines(label string, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	for {
		left := labelled(label)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("simnictest: %d goroutine group(s) still running after teardown:\n%s",
				len(left), strings.Join(left, "\n"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// labelled returns the goroutine profile records (debug=1 text, one per
// group of identical stacks) that carry the label.
func labelled(label string) []string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
	want := fmt.Sprintf("%q:%q", labelKey, label)
	var out []string
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		lines := strings.Split(rec, "\n")
		if len(lines) < 2 || !strings.HasPrefix(lines[1], "# labels:") || !strings.Contains(lines[1], want) {
			continue
		}
		own, test, onlyRuntime := false, false, true
		for _, l := range lines[2:] {
			f := frameFunc(l)
			switch {
			case f == "":
			case strings.HasPrefix(f, "runtime/pprof."):
				own = true
			case f == "testing.tRunner":
				test = true
			case !strings.HasPrefix(f, "runtime."):
				onlyRuntime = false
			}
		}
		if own || test || onlyRuntime {
			continue
		}
		out = append(out, rec)
	}
	return out
}

// frameFunc extracts the function name of a "#\t0xADDR\tfunc+0xOFF\tfile:line" line.
func frameFunc(l string) string {
	fs := strings.Fields(strings.TrimPrefix(l, "#"))
	if len(fs) < 2 || !strings.HasPrefix(fs[0], "0x") {
		return ""
	}
	f := fs[1]
	if i := strings.LastIndex(f, "+0x"); i > 0 {
		f = f[:i]
	}
	return f
}
