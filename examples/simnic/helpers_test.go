package simnic_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// Helpers shared by simnic's tests.

// newRig is simnictest.New with a recording peer when record is set.
func newRig(t testing.TB, o simnictest.Options, record bool) (*simnictest.Rig, *simnictest.Recorder) {
	t.Helper()
	var rec *simnictest.Recorder
	if record {
		rec = &simnictest.Recorder{}
		o.Peer = rec
	}
	return simnictest.New(t, o), rec
}

// fillFrame is simnictest.FillFrame.
func fillFrame(data []byte, flow, seq uint32) { simnictest.FillFrame(data, flow, seq) }

// flatten is simnictest.Flatten.
func flatten(m *iflib.Packet) []byte { return simnictest.Flatten(m) }

// bounded runs f and fails the test if it has not returned within d (a
// hang guard, not a timing claim: d is far above what f needs). A hang
// panics with every goroutine's stack: the test's cleanup would hang too,
// and the failure would show only at the test binary's timeout.
func bounded(t testing.TB, what string, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		buf := make([]byte, 1<<20)
		panic(fmt.Sprintf("%s: %s did not return within %v\n%s", t.Name(), what, d, buf[:runtime.Stack(buf, true)]))
	}
}
