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
	if s.Count() != 4 || s.First() != 3 || s.Last() != 1023 || s.Empty() {
		t.Fatalf("count %d first %d last %d", s.Count(), s.First(), s.Last())
	}
	checkCPUs(t, "List", s.List(), []int{3, 64, 65, 1023})
	if s.Next(3) != 64 || s.Next(65) != 1023 || s.Next(1023) != -1 || s.Next(-5) != 3 {
		t.Errorf("Next: %d %d %d %d", s.Next(3), s.Next(65), s.Next(1023), s.Next(-5))
	}
	s.Clear(64)
	if s.Has(64) || !s.Has(65) || s.Has(-1) || s.Has(MaxCPUs) {
		t.Error("Clear/Has")
	}
	a, b := CPUSetOf(0, 1, 2), CPUSetOf(2, 3)
	if a.And(b) != CPUSetOf(2) || a.Or(b) != CPUSetOf(0, 1, 2, 3) || !CPUSetOf(1).SubsetOf(a) || b.SubsetOf(a) {
		t.Error("And/Or/SubsetOf")
	}
	var e CPUSet
	if !e.Empty() || e.First() != -1 || e.Last() != -1 || e.String() != "" || len(e.List()) != 0 {
		t.Error("empty set")
	}
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
		if want != nil && !slices.Equal(s.List(), want) {
			t.Errorf("ParseCPUList(%q) = %v, want %v", in, s.List(), want)
		}
		back, err := ParseCPUList(s.String())
		if err != nil || back != s {
			t.Errorf("round trip of %q via %q: %v", in, s.String(), err)
		}
	}
	if got := CPUSetOf(0, 1, 2, 3, 8, 10, 11).String(); got != "0-3,8,10-11" {
		t.Errorf("String = %q", got)
	}
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
			if !errors.Is(err, ErrBadCPUList) && !errors.Is(err, ErrCPURange) {
				t.Fatalf("unexpected error kind %v", err)
			}
			if !s.Empty() {
				t.Fatal("non-empty set with error")
			}
			return
		}
		if s.Last() >= MaxCPUs {
			t.Fatalf("member %d out of range", s.Last())
		}
		back, err := ParseCPUList(s.String())
		if err != nil || back != s {
			t.Fatalf("%q -> %q -> %v, %v", in, s.String(), back, err)
		}
		if len(s.List()) != s.Count() {
			t.Fatal("List and Count disagree")
		}
	})
}
