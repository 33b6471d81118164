package testutil

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTB records a Fatalf and ends the goroutine, as testing.T does.
type fakeTB struct {
	testing.TB
	failed atomic.Pointer[string]
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	f.failed.Store(&msg)
	runtime.Goexit()
}

// run calls wait with a fakeTB on its own goroutine and returns the
// failure message ("" when it returned).
func run(wait func(tb testing.TB)) string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(f)
	}()
	<-done
	if m := f.failed.Load(); m != nil {
		return *m
	}
	return ""
}

// short sets the limits small for one test.
func short(t *testing.T, ev, stall, all time.Duration) {
	e, s, l := eventuallyLimit, settleStall, settleLimit
	eventuallyLimit, settleStall, settleLimit = ev, stall, all
	t.Cleanup(func() { eventuallyLimit, settleStall, settleLimit = e, s, l })
}

func TestEventually(t *testing.T) {
	short(t, 200*time.Millisecond, 0, 0)
	var n atomic.Int32
	assert.Empty(t, run(func(tb testing.TB) { Eventually(tb, "three looks", func() bool { return n.Add(1) >= 3 }) }))
	assert.GreaterOrEqual(t, n.Load(), int32(3))

	start := time.Now()
	msg := run(func(tb testing.TB) {
		Eventually(tb, "never", func() bool { return false }, func() string { return "why: none" })
	})
	assert.Contains(t, msg, "timed out waiting for never")
	assert.Contains(t, msg, "\nwhy: none")
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "not before the limit")
}

// Settle wants cond true with progress unchanged for SettleLooks looks;
// it fails after the stall limit without progress, but not while progress
// keeps moving (only the overall limit ends that), and names what it
// waited for with the describe lines.
func TestSettle(t *testing.T) {
	short(t, 0, 100*time.Millisecond, 600*time.Millisecond)
	var p atomic.Uint64
	assert.Empty(t, run(func(tb testing.TB) {
		Settle(tb, "quiet", func() bool { return true }, func() uint64 { return p.Load() })
	}))

	// Stuck: no progress, cond false.
	start := time.Now()
	msg := run(func(tb testing.TB) {
		Settle(tb, "stuck", func() bool { return false }, func() uint64 { return 7 }, func() string { return "state: 7" })
	})
	assert.Contains(t, msg, "timed out waiting for stuck")
	assert.Contains(t, msg, "\nstate: 7")
	el := time.Since(start)
	assert.GreaterOrEqual(t, el, 100*time.Millisecond)
	assert.Less(t, el, 600*time.Millisecond, "a stall ends the wait before the overall limit")

	// Moving: progress changes at every look, so only the overall limit
	// ends the wait.
	start = time.Now()
	msg = run(func(tb testing.TB) {
		Settle(tb, "moving", func() bool { return true }, func() uint64 { return p.Add(1) })
	})
	assert.Contains(t, msg, "timed out waiting for moving")
	assert.GreaterOrEqual(t, time.Since(start), 600*time.Millisecond, "progress keeps the wait alive")

	// Progress that stops: settles.
	var looks atomic.Int32
	assert.Empty(t, run(func(tb testing.TB) {
		Settle(tb, "drains", func() bool { return looks.Load() > 20 }, func() uint64 {
			if looks.Add(1) <= 20 {
				return p.Add(1)
			}
			return p.Load()
		})
	}))
}

// Only tests and test-support packages (a directory named *test:
// busdmatest, simnictest) import testutil: library code never does.
func TestOnlyTestsImport(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	const me = "github.com/goiflib/goiflib/internal/testutil"
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(filepath.Dir(path), "test") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			assert.NotEqual(t, me, p, "%s: library code imports the test helpers", path)
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, checked, 50, "the walk found the module's code")
}
