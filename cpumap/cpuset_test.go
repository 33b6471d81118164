package cpumap

import (
	"errors"
	"slices"
	"testing"
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
		if err != nil {
			t.Fatalf("ParseCPUList(%q): %v", in, err)
		}
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
	for _, bad := range []string{"a", "1-", "-1", "3-1", "1,,2", "1 2", "0x1", "+1", "1-2-3", "99999999"} {
		if _, err := ParseCPUList(bad); !errors.Is(err, ErrBadCPUList) {
			t.Errorf("ParseCPUList(%q) err %v, want ErrBadCPUList", bad, err)
		}
	}
	if _, err := ParseCPUList("1024"); !errors.Is(err, ErrCPURange) {
		t.Errorf("1024: %v", err)
	}
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
