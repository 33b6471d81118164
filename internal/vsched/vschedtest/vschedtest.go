// Package vschedtest drives the rings' interleaving explorations for their
// tests: one exhaustive driver and one random driver, with the environment
// knobs read in one place (VSCHED_PREEMPTIONS, VSCHED_SCHEDULES,
// VSCHED_RANDOM, VSCHED_SEED, VSCHED_REPLAY). Test support only: library
// code never imports it, and it imports only the standard library and
// vsched (so it reports with t.Fatal, not testify).
package vschedtest

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/goiflib/goiflib/internal/vsched"
)

// EnvInt returns the integer in environment variable name, or def when it
// is unset; a value that is not an integer fails the test.
func EnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}

// Exhaustive runs every schedule of setup with at most VSCHED_PREEMPTIONS
// (default preemptions) preemptions, capped at VSCHED_SCHEDULES (default
// 100000, 0 for no cap), and logs what it explored under label. With
// VSCHED_REPLAY set it instead replays that schedule with a trace of every
// step.
func Exhaustive(t *testing.T, label string, preemptions int, setup vsched.Setup) {
	t.Helper()
	if replay := os.Getenv("VSCHED_REPLAY"); replay != "" {
		pol, err := vsched.Replay(replay)
		if err == nil {
			_, err = vsched.Run(vsched.Config{MaxSteps: 100000, Trace: os.Stderr}, pol, setup)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	bound := EnvInt(t, "VSCHED_PREEMPTIONS", preemptions)
	limit := EnvInt(t, "VSCHED_SCHEDULES", 100000)
	start := time.Now()
	rep, err := vsched.Exhaustive(vsched.Config{MaxSteps: 100000}, bound, limit, setup)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d schedules (preemptions ≤ %d, complete=%v), %d steps, longest %d, in %v",
		label, rep.Schedules, bound, rep.Complete, rep.Steps, rep.MaxSteps, time.Since(start).Round(time.Millisecond))
}

// Random runs VSCHED_RANDOM (default n) seeded random schedules of setup,
// seeds from VSCHED_SEED (default 1), and logs what it explored under
// label. A failure names its seed, which replays it.
func Random(t *testing.T, label string, n int, setup vsched.Setup) {
	t.Helper()
	n = EnvInt(t, "VSCHED_RANDOM", n)
	seed := uint64(EnvInt(t, "VSCHED_SEED", 1))
	start := time.Now()
	rep, err := vsched.RandomSchedules(vsched.Config{MaxSteps: 1000000}, seed, n, 0.2, setup)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d random schedules (seeds %d..%d), %d steps, longest %d, in %v",
		label, rep.Schedules, seed, seed+uint64(n)-1, rep.Steps, rep.MaxSteps, time.Since(start).Round(time.Millisecond))
}
