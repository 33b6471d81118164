// Package testutil is the test support shared by the module's tests: the
// one wait helper, with a condition named in its failure and a limit that
// counts progress, not wall-clock time alone. Tests of any package import
// it, and so may test-support packages (busdmatest, simnictest); library
// code must not (TestOnlyTestsImport checks), and, like every
// package under internal, it imports only the standard library.
//
// Why not require.Eventually everywhere: Eventually and Settle run cond on
// the caller's goroutine (require.Eventually runs it on another, so a cond
// that uses the test's state or calls require needs care), and Settle's
// limit is progress-based. Plain polling loops in tests use
// require.Eventually; a named wait uses these.
package testutil

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// The limits. A wait that fails was either stuck or far slower than any
// load this project's CI sees; none of them is a timing claim.
const (
	// EventuallyLimit bounds Eventually: the longest of the waits it
	// replaced (seedbench's 30 s; iflib's and simnic's were 10 and 20 s).
	EventuallyLimit = 30 * time.Second
	// SettleStall is how long Settle waits without progress: a system
	// that keeps moving may take longer, one that is stuck does not move.
	SettleStall = 20 * time.Second
	// SettleLimit bounds Settle in all.
	SettleLimit = 2 * time.Minute
	// SettleLooks is how many looks in a row (SettlePoll apart) Settle
	// wants cond true and progress unchanged.
	SettleLooks = 10
	// SettlePoll is Settle's polling period.
	SettlePoll = 2 * time.Millisecond
	// EventuallyPoll is Eventually's polling period (it yields too, so
	// that a cond waiting for a goroutine on this P lets it run).
	EventuallyPoll = 100 * time.Microsecond
)

// The limits as the functions read them (the package's own tests shorten
// them to test the failures).
var eventuallyLimit, settleStall, settleLimit = EventuallyLimit, SettleStall, SettleLimit

// Eventually polls cond on the caller's goroutine until it holds, and
// fails tb with "timed out waiting for WHAT" and a line from each describe
// (called then) after EventuallyLimit. Call it from the test's goroutine
// (it calls tb.Fatalf). It starts no goroutine, so cond may count them.
func Eventually(tb testing.TB, what string, cond func() bool, describe ...func() string) {
	tb.Helper()
	deadline := time.Now().Add(eventuallyLimit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s (%v)%s", what, eventuallyLimit, lines(describe))
		}
		runtime.Gosched()
		time.Sleep(EventuallyPoll)
	}
}

// Settle waits until cond holds and progress has not changed for
// SettleLooks looks in a row: the system drained and stays drained. It
// fails tb after SettleStall without progress (progress unchanged and cond
// not yet settled) or after SettleLimit in all, with "timed out waiting
// for WHAT" and a line from each describe. Call it from the test's
// goroutine.
func Settle(tb testing.TB, what string, cond func() bool, progress func() uint64, describe ...func() string) {
	tb.Helper()
	start := time.Now()
	moved := start
	var prev uint64
	for stable := 0; stable < SettleLooks; {
		if now := time.Now(); now.Sub(moved) > settleStall || now.Sub(start) > settleLimit {
			tb.Fatalf("timed out waiting for %s (%v without progress or %v in all)%s", what, settleStall, settleLimit, lines(describe))
		}
		time.Sleep(SettlePoll)
		cur := progress()
		if cur != prev {
			moved = time.Now()
		}
		if cond() && cur == prev {
			stable++
		} else {
			stable = 0
		}
		prev = cur
	}
}

// lines calls each describe and joins the results, each on a new line.
func lines(describe []func() string) string {
	var b strings.Builder
	for _, d := range describe {
		b.WriteString("\n" + d())
	}
	return b.String()
}
