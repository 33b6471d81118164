package simnictest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// SeedEnv is the environment variable that fixes a test's seed: a 64-bit
// number in decimal or 0x-hex. Unset, each run draws a fresh one.
const SeedEnv = "SIMNIC_SEED"

// Seed returns the seed of a seeded test: SIMNIC_SEED if set, else a fresh
// random one. If the test fails, its seed and the command that replays it
// are printed (with t.Log, shown on failure, and on standard error so CI
// logs have it whatever the verbosity):
//
//	SIMNIC_SEED=0x1234 go test -run '^TestX$' ./examples/simnic/
func Seed(tb testing.TB) uint64 {
	tb.Helper()
	seed, fromEnv := envSeed(tb)
	cmd := ReplayCommand(tb, seed)
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("seed %#x; replay with: %s", seed, cmd)
			fmt.Fprintf(os.Stderr, "--- %s failed with seed %#x; replay with:\n    %s\n", tb.Name(), seed, cmd)
		}
	})
	if fromEnv {
		tb.Logf("seed %#x from %s", seed, SeedEnv)
	}
	return seed
}

func envSeed(tb testing.TB) (uint64, bool) {
	s := strings.TrimSpace(os.Getenv(SeedEnv))
	if s == "" {
		return rand.Uint64(), false
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		tb.Fatalf("%s=%q: %v", SeedEnv, s, err)
	}
	return v, true
}

// ReplayCommand is the shell command that reruns tb (its top-level test
// and subtest path) with seed, from the module root.
func ReplayCommand(tb testing.TB, seed uint64) string {
	parts := strings.Split(tb.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexpQuote(p) + "$"
	}
	return fmt.Sprintf("%s=%#x go test -count=1 -run '%s' %s", SeedEnv, seed, strings.Join(parts, "/"), callerPackage())
}

// regexpQuote escapes what go test's -run would read as a pattern.
func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// callerPackage is the directory of the test that called Seed, relative to
// the module root (./examples/simnic/), or "." if it cannot be found.
func callerPackage() string {
	for skip := 2; skip < 12; skip++ {
		_, file, _, ok := runtime.Caller(skip)
		if !ok {
			break
		}
		if !strings.HasSuffix(file, "_test.go") {
			continue
		}
		dir := filepath.Dir(file)
		for root := dir; ; {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
				rel, err := filepath.Rel(root, dir)
				if err != nil {
					return "."
				}
				return "./" + filepath.ToSlash(rel) + "/"
			}
			up := filepath.Dir(root)
			if up == root {
				return "."
			}
			root = up
		}
	}
	return "."
}
