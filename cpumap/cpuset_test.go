package cpumap

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCPUSetOps(t *testing.T) {
	s := CPUSetOf(3, 64, 65, 1023, -1, 1024)
	require.Equal(t, 4, s.Count(), "count %d first %d last %d", s.Count(), s.First(), s.Last())
	require.Equal(t, 3, s.First(), "count %d first %d last %d", s.Count(), s.First(), s.Last())
	require.Equal(t, 1023, s.Last(), "count %d first %d last %d", s.Count(), s.First(), s.Last())
	require.False(t, s.Empty(), "count %d first %d last %d", s.Count(), s.First(), s.Last())
	checkCPUs(t, "List", s.List(), []int{3, 64, 65, 1023})
	assert.False(t, s.Next(3) != 64 || s.Next(65) != 1023 || s.Next(1023) != -1 || s.Next(-5) != 3, "Next: %d %d %d %d", s.Next(3), s.Next(65), s.Next(1023), s.Next(-5))
	s.Clear(64)
	assert.False(t, s.Has(64) || !s.Has(65) || s.Has(-1) || s.Has(MaxCPUs), "Clear/Has")
	a, b := CPUSetOf(0, 1, 2), CPUSetOf(2, 3)
	assert.False(t, a.And(b) != CPUSetOf(2) || a.Or(b) != CPUSetOf(0, 1, 2, 3) || !CPUSetOf(1).SubsetOf(a) || b.SubsetOf(a), "And/Or/SubsetOf")
	var e CPUSet
	assert.False(t, !e.Empty() || e.First() != -1 || e.Last() != -1 || e.String() != "" || len(e.List()) != 0, "empty set")
}

func TestCPUListRoundTrip(t *testing.T) {
	cases := map[string][]int{
		"0-3,8,10-11\n": {0, 1, 2, 3, 8, 10, 11},
		"0":             {0},
		" 5 ":           {5},
		"1,3,5":         {1, 3, 5},
		"0-1023":        nil,
		"":              {},
	}
	for in, want := range cases {
		s, err := ParseCPUList(in)
		require.NoError(t, err, "ParseCPUList(%q)", in)
		assert.False(t, want != nil && !slices.Equal(s.List(), want), "ParseCPUList(%q) = %v, want %v", in, s.List(), want)
		back, err := ParseCPUList(s.String())
		assert.False(t, err != nil || back != s, "round trip of %q via %q: %v", in, s.String(), err)
	}
	got := CPUSetOf(0, 1, 2, 3, 8, 10, 11).String()
	assert.Equal(t, "0-3,8,10-11", got, "String = %q", got)
	for _, bad := range []string{"a", "1-", "-1", "3-1", "1,,2", "1 2", "0x1", "+1", "1-2-3", "1a", "99999999x"} {
		_, err := ParseCPUList(bad)
		assert.ErrorIs(t, err, ErrBadCPUList, "ParseCPUList(%q)", bad)
	}
	// Numbers, however long, that are not below MaxCPUs are ErrCPURange as
	// documented (an 8-digit number used to be ErrBadCPUList).
	for _, big := range []string{"1024", "0-1024", "12345678", "99999999", "3,99999999", "00001024", "99999999999999999999999999"} {
		_, err := ParseCPUList(big)
		assert.ErrorIs(t, err, ErrCPURange, "ParseCPUList(%q)", big)
	}
	// The error names the offending part (issue 20: errors name the value).
	_, err := ParseCPUList("0-3,7-5,9")
	require.ErrorIs(t, err, ErrBadCPUList)
	assert.Contains(t, err.Error(), `"7-5"`)
	_, err = ParseCPUList("1,4096")
	require.ErrorIs(t, err, ErrCPURange)
	assert.Contains(t, err.Error(), `"4096"`)
	s, err := ParseCPUList("007,0-0001")
	require.NoError(t, err)
	assert.Equal(t, CPUSetOf(0, 1, 7), s)
}

// FuzzParseCPUList checks that anything ParseCPUList accepts formats to a
// list that parses back to the same set, with members in range.
func FuzzParseCPUList(f *testing.F) {
	for _, s := range []string{"0-3,8,10-11\n", "0", "", "1023", "5-5", "0-1023", "1,,2", "7-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseCPUList(in)
		if err != nil {
			require.False(t, !errors.Is(err, ErrBadCPUList) && !errors.Is(err, ErrCPURange), "unexpected error kind %v", err)
			require.True(t, s.Empty(), "non-empty set with error")
			return
		}
		require.Less(t, s.Last(), MaxCPUs, "member %d out of range", s.Last())
		back, err := ParseCPUList(s.String())
		require.NoError(t, err, "%q -> %q -> %v,", in, s.String(), back)
		require.Equal(t, s, back, "%q -> %q -> %v, %v", in, s.String(), back, err)
		require.Len(t, s.List(), s.Count(), "List and Count disagree")
	})
}
