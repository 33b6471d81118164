package cpumap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// synth builds a synthetic topology or fails the test.
func synth(t testing.TB, cfg SyntheticConfig) *Topology {
	t.Helper()
	tp, err := Synthetic(cfg)
	require.NoError(t, err, "Synthetic(%+v)", cfg)
	return tp
}

// fourByTwo is the usual example machine: 4 cores × 2 SMT threads.
func fourByTwo(t testing.TB, n SiblingNumbering) *Topology {
	return synth(t, SyntheticConfig{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: 2, SiblingNumbering: n})
}

func mustPlace(t testing.TB, a *Allocator, req Request) *Placement {
	t.Helper()
	pl, err := a.Place(req)
	require.NoError(t, err, "Place(%+v)", req)
	return pl
}

func setPtr(cpus ...int) *CPUSet {
	s := CPUSetOf(cpus...)
	return &s
}

func checkCPUs(t testing.TB, what string, got, want []int) {
	t.Helper()
	assert.Equal(t, want, got, what)
}

// checkNext asserts the registry entry for set.
func checkNext(t testing.TB, a *Allocator, set CPUSet, want int) {
	t.Helper()
	next, _, ok := a.Next(set)
	if want < 0 {
		assert.False(t, ok, "registry entry for %s exists (next %d), want none", set, next)
		return
	}
	assert.False(t, !ok || next != want, "next_cpuid for %s = %d (entry %v), want %d", set, next, ok, want)
}

var behaviors = []Behavior{Intended, FreeBSD}

// errOf returns the error of a two-result call, for require.ErrorIs.
func errOf(_ any, err error) error { return err }
