package main

import (
	"bytes"
	"flag"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlagsDefaults(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.False(t, o.Quick)
	assert.Equal(t, defaultRounds, o.Rounds)
	assert.Equal(t, defaultMaxRounds, o.MaxRounds)
	assert.Equal(t, defaultCap, o.Cap)
	assert.Equal(t, defaultWindow, o.Window)
	assert.Equal(t, []int{1, 2, 4, 8, 16, 32, 64}, o.Senders)
	want := []int{1}
	if g := runtime.GOMAXPROCS(0); g != 1 {
		want = append(want, g)
	}
	assert.Equal(t, want, o.Procs)
	assert.Equal(t, allSections, o.Only)
	assert.True(t, o.AFXDP)
	assert.Empty(t, o.JSON)
	assert.Empty(t, o.SVG)
	assert.Empty(t, o.Compare)
	assert.Positive(t, o.Warmup)
	assert.Positive(t, o.Settle)
	assert.LessOrEqual(t, o.Settle, o.Window)

	// Each run draws its own seed unless given one.
	o2, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.NotEqual(t, o.Seed, o2.Seed)
	o, err = parseFlags([]string{"-seed", "0x2a"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, uint64(42), o.Seed)
}

func TestParseFlagsQuick(t *testing.T) {
	o, err := parseFlags([]string{"-quick"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.Quick)
	assert.Equal(t, quickWindow, o.Window)
	assert.Equal(t, 3, o.Rounds)
	assert.Equal(t, 3, o.MaxRounds, "-quick runs one block")

	// An explicit window or round count wins over -quick's.
	o, err = parseFlags([]string{"-window", "50ms", "-quick", "-rounds", "4"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 50*time.Millisecond, o.Window)
	assert.Equal(t, 4, o.Rounds)
	assert.Equal(t, 4, o.MaxRounds)
}

func TestParseFlagsLists(t *testing.T) {
	o, err := parseFlags([]string{"-senders", " 8, 2,8 ", "-procs", "2,1", "-only", "d27755,drbr,afxdp", "-afxdp=false",
		"-json", "x.json", "-svg", "charts", "-max-rounds", "30", "-cap", "5s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{8, 2}, o.Senders, "order kept, duplicates dropped")
	assert.Equal(t, []int{2, 1}, o.Procs)
	assert.Equal(t, []string{SecDRBR, SecD27755}, o.Only, "documented order, case-insensitive, afxdp off")
	assert.Equal(t, "x.json", o.JSON)
	assert.Equal(t, "charts", o.SVG)
	assert.Equal(t, 30, o.MaxRounds)
	assert.Equal(t, 5*time.Second, o.Cap)
	assert.Equal(t, []string{"-senders", " 8, 2,8 ", "-procs", "2,1", "-only", "d27755,drbr,afxdp", "-afxdp=false",
		"-json", "x.json", "-svg", "charts", "-max-rounds", "30", "-cap", "5s"}, o.Args)

	o, err = parseFlags([]string{"-compare", "a.json", "b.json"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.json", "b.json"}, o.Compare)
}

func TestParseFlagsErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-rounds", "2"}, {"-rounds", "101"}, {"-window", "0"}, {"-window", "2m"},
		{"-senders", "0"}, {"-senders", "x"}, {"-senders", ""}, {"-procs", "1,-1"},
		{"-only", "D99999"}, {"-nosuchflag"}, {"extra"},
		{"-max-rounds", "5"}, {"-rounds", "9", "-max-rounds", "8"}, {"-cap", "-1s"}, {"-seed", "x"}, {"-compare"},
	} {
		var stderr bytes.Buffer
		_, err := parseFlags(args, &stderr)
		assert.ErrorIs(t, err, ErrUsage, "%q", args)
	}
	_, err := parseFlags([]string{"-h"}, io.Discard)
	assert.ErrorIs(t, err, flag.ErrHelp)
}
