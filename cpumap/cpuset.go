package cpumap

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MaxCPUs = 1024 is the number of CPUs a CPUSet can hold: glibc's
// CPU_SETSIZE (<sched.h>), the size of golang.org/x/sys/unix.CPUSet on
// Linux, and FreeBSD's CPU_MAXSIZE on amd64 since FreeBSD 14
// (sys/sys/_cpuset.h).
const MaxCPUs = 1024

const setWords = MaxCPUs / 64

// CPUSet is a set of CPU numbers, FreeBSD's cpuset_t (sys/sys/_cpuset.h).
// It is a comparable value: == is CPU_CMP, and it can key a map, which is
// how the cpu_offsets registry finds a device's entry.
//
// Methods taking a CPU number ignore numbers outside [0, MaxCPUs).
type CPUSet struct {
	w [setWords]uint64
}

// CPUSetOf returns the set of the given CPUs (CPU_SETOF for several).
// Numbers outside [0, MaxCPUs) are ignored.
func CPUSetOf(cpus ...int) CPUSet {
	var s CPUSet
	for _, c := range cpus {
		s.Set(c)
	}
	return s
}

// Set adds cpu (CPU_SET); a number outside [0, MaxCPUs) is ignored, as in
// CPUSetOf.
func (s *CPUSet) Set(cpu int) {
	if cpu >= 0 && cpu < MaxCPUs {
		s.w[cpu>>6] |= 1 << (cpu & 63)
	}
}

// Clear removes cpu (CPU_CLR); a number outside [0, MaxCPUs) is ignored.
func (s *CPUSet) Clear(cpu int) {
	if cpu >= 0 && cpu < MaxCPUs {
		s.w[cpu>>6] &^= 1 << (cpu & 63)
	}
}

// Has reports whether cpu is a member (CPU_ISSET); false outside [0,
// MaxCPUs).
func (s CPUSet) Has(cpu int) bool {
	return cpu >= 0 && cpu < MaxCPUs && s.w[cpu>>6]&(1<<(cpu&63)) != 0
}

// Count returns the number of members (CPU_COUNT).
func (s CPUSet) Count() int {
	n := 0
	for _, w := range s.w {
		n += bits.OnesCount64(w)
	}
	return n
}

// Empty reports whether the set has no member (CPU_EMPTY).
func (s CPUSet) Empty() bool { return s == CPUSet{} }

// First returns the lowest member, or -1 if empty (CPU_FFS − 1).
func (s CPUSet) First() int {
	for i, w := range s.w {
		if w != 0 {
			return i*64 + bits.TrailingZeros64(w)
		}
	}
	return -1
}

// Last returns the highest member, or -1 if empty (CPU_FLS − 1).
func (s CPUSet) Last() int {
	for i := setWords - 1; i >= 0; i-- {
		if w := s.w[i]; w != 0 {
			return i*64 + 63 - bits.LeadingZeros64(w)
		}
	}
	return -1
}

// Next returns the lowest member greater than cpu, or -1 if there is none.
func (s CPUSet) Next(cpu int) int {
	cpu++
	if cpu < 0 {
		cpu = 0
	}
	for cpu < MaxCPUs {
		w := s.w[cpu>>6] >> (cpu & 63)
		if w != 0 {
			return cpu + bits.TrailingZeros64(w)
		}
		cpu = (cpu | 63) + 1
	}
	return -1
}

// And returns the intersection (CPU_AND).
func (s CPUSet) And(o CPUSet) CPUSet {
	for i := range s.w {
		s.w[i] &= o.w[i]
	}
	return s
}

// Or returns the union (CPU_OR).
func (s CPUSet) Or(o CPUSet) CPUSet {
	for i := range s.w {
		s.w[i] |= o.w[i]
	}
	return s
}

// SubsetOf reports whether every member of s is in o (CPU_SUBSET(o, s)).
func (s CPUSet) SubsetOf(o CPUSet) bool {
	for i := range s.w {
		if s.w[i]&^o.w[i] != 0 {
			return false
		}
	}
	return true
}

// List returns the members in increasing order.
func (s CPUSet) List() []int {
	out := make([]int, 0, s.Count())
	for c := s.First(); c >= 0; c = s.Next(c) {
		out = append(out, c)
	}
	return out
}

// String formats the set as a Linux CPU list, e.g. "0-3,8,10-11"; the empty
// set is "".
func (s CPUSet) String() string {
	var b strings.Builder
	for c := s.First(); c >= 0; {
		end := c
		for s.Has(end + 1) {
			end++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c))
		if end > c {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(end))
		}
		c = s.Next(end)
	}
	return b.String()
}

// ParseCPUList parses a Linux CPU list as found in sysfs files such as
// /sys/devices/system/cpu/online and thread_siblings_list
// (Documentation/ABI/stable/sysfs-devices-system-cpu): comma-separated
// numbers and inclusive ranges "a-b", optionally ending in a newline. Blank
// text is the empty set. Errors match ErrBadCPUList, or ErrCPURange for a
// number not below MaxCPUs, and quote the offending part of the text.
func ParseCPUList(text string) (CPUSet, error) {
	var s CPUSet
	text = strings.TrimSpace(text)
	if text == "" {
		return s, nil
	}
	bad := func(err error, part string) error { return fmt.Errorf("%w: %q in %q", err, part, text) }
	for part := range strings.SplitSeq(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseCPUNumber(lo)
		if err != nil {
			return CPUSet{}, bad(err, part)
		}
		b := a
		if isRange {
			if b, err = parseCPUNumber(hi); err != nil {
				return CPUSet{}, bad(err, part)
			}
			if b < a {
				return CPUSet{}, bad(ErrBadCPUList, part)
			}
		}
		for c := a; c <= b; c++ {
			s.Set(c)
		}
	}
	return s, nil
}

// parseCPUNumber reads a decimal CPU number: digits only (else
// ErrBadCPUList), below MaxCPUs (else ErrCPURange, however many digits).
func parseCPUNumber(t string) (int, error) {
	if t == "" {
		return 0, ErrBadCPUList
	}
	n := 0
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return 0, ErrBadCPUList
		}
		if n < MaxCPUs { // once out of range, stay there without overflowing
			n = n*10 + int(t[i]-'0')
		}
	}
	if n >= MaxCPUs {
		return 0, ErrCPURange
	}
	return n, nil
}
