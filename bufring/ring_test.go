package bufring

import (
	"errors"
	"math"
	"testing"
)

// newRingAt returns a ring whose indices (and cached copies) all start at
// start, to exercise the uint32 wrap near 2^32 (FreeBSD's overflow case).
func newRingAt[T any](t testing.TB, size int, start uint32) *Ring[T] {
	t.Helper()
	r, err := New[T](size)
	if err != nil {
		t.Fatal(err)
	}
	for _, idx := range []interface{ Store(uint32) }{&r.prodHead, &r.prodTail, &r.prodConsTail, &r.consHead, &r.consTail, &r.consProdTail} {
		idx.Store(start)
	}
	r.scProdTail = start
	return r
}

// starts are the initial index values every ring test runs from: zero, and
// just below the uint32 wrap so that the indices overflow mid-test.
var starts = []uint32{0, math.MaxUint32 - 5, math.MaxUint32}

// dequeuers are the four ways to take one item, as in buf_ring_test.c
// (dequeue_sc, dequeue_mc, peek+advance), plus the two burst forms.
var dequeuers = []struct {
	name string
	fn   func(*Ring[int]) (int, bool)
}{
	{"DequeueSC", (*Ring[int]).DequeueSC},
	{"DequeueMC", (*Ring[int]).DequeueMC},
	{"PeekAdvance", func(r *Ring[int]) (int, bool) {
		v, ok := r.Peek()
		if ok {
			r.Advance()
		}
		return v, ok
	}},
	{"DequeueBurstSC", func(r *Ring[int]) (int, bool) {
		var b [1]int
		return b[0], r.DequeueBurstSC(b[:]) == 1
	}},
	{"DequeueBurstMC", func(r *Ring[int]) (int, bool) {
		var b [1]int
		return b[0], r.DequeueBurstMC(b[:]) == 1
	}},
}

// TestBufRingCases is ported from FreeBSD's tests/sys/sys/buf_ring_test.c
// (MC_SC_TEST), run for each dequeue flavour and from each start index.
func TestBufRingCases(t *testing.T) {
	for _, dq := range dequeuers {
		for _, start := range starts {
			r := newRingAt[int](t, 4, start)
			check := func(step string, count int, full, empty bool) {
				t.Helper()
				if r.Count() != count || r.Full() != full || r.Empty() != empty {
					t.Fatalf("%s start %#x %s: count %d full %v empty %v, want %d %v %v",
						dq.name, start, step, r.Count(), r.Full(), r.Empty(), count, full, empty)
				}
			}
			want := func(v int, ok bool) {
				t.Helper()
				got, gotOK := dq.fn(r)
				if got != v || gotOK != ok {
					t.Fatalf("%s start %#x: dequeue = %d, %v; want %d, %v", dq.name, start, got, gotOK, v, ok)
				}
			}
			want(0, false)
			check("new", 0, false, true)
			for v := 1; v <= 3; v++ {
				if err := r.Enqueue(v); err != nil {
					t.Fatalf("%s: Enqueue(%d) = %v", dq.name, v, err)
				}
			}
			if err := r.Enqueue(4); !errors.Is(err, ErrFull) {
				t.Fatalf("%s: fourth Enqueue = %v, want ErrFull", dq.name, err)
			}
			if r.Drops() != 1 {
				t.Fatalf("Drops = %d, want 1", r.Drops())
			}
			check("filled", 3, true, false)
			want(1, true)
			want(2, true)
			check("partly emptied", 1, false, false)
			if err := r.Enqueue(5); err != nil {
				t.Fatal(err)
			}
			check("refilled", 2, false, false)
			want(3, true)
			want(5, true)
			want(0, false)
			check("emptied", 0, false, true)
			for i := 0; i < 8; i++ {
				for _, base := range []int{100, 200, 300} {
					if err := r.Enqueue(base + i); err != nil {
						t.Fatal(err)
					}
				}
				check("wrap fill", 3, true, false)
				want(100+i, true)
				want(200+i, true)
				want(300+i, true)
				check("wrap empty", 0, false, true)
			}
		}
	}
}

func TestNewBadSize(t *testing.T) {
	for _, size := range []int{0, 1, 3, 6, -1, -4, math.MaxInt} {
		r, err := New[int](size)
		if r != nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%d) = %v, %v; want nil, ErrInvalid", size, r, err)
		}
		var ae *ArgError
		if !errors.As(err, &ae) || ae.Value != size || ae.Arg != "size" {
			t.Errorf("New(%d): error %v is not an *ArgError for size", size, err)
		}
	}
	for _, size := range []int{2, 4, 1024} {
		r, err := New[int](size)
		if err != nil || r.Cap() != size-1 {
			t.Errorf("New(%d) = cap %v, %v; want cap %d", size, r.Cap(), err, size-1)
		}
	}
}

func TestPeekPutbackAdvance(t *testing.T) {
	for _, start := range starts {
		r := newRingAt[int](t, 4, start)
		if err := r.TryPutback(7); !errors.Is(err, ErrEmpty) {
			t.Fatalf("TryPutback on empty = %v, want ErrEmpty", err)
		}
		r.Putback(7) // FreeBSD asserts; here a no-op that must not corrupt
		r.Advance()  // no-op on empty, as in buf_ring_advance_sc
		if !r.Empty() || r.Count() != 0 {
			t.Fatalf("ring not empty after Putback/Advance on empty: count %d", r.Count())
		}
		if _, ok := r.Peek(); ok {
			t.Fatal("Peek on empty returned an item")
		}
		for v := 1; v <= 3; v++ {
			if err := r.Enqueue(v); err != nil {
				t.Fatal(err)
			}
		}
		if v, ok := r.Peek(); v != 1 || !ok {
			t.Fatalf("Peek = %d, %v; want 1", v, ok)
		}
		if v, ok := r.Peek(); v != 1 || !ok || r.Count() != 3 {
			t.Fatalf("second Peek = %d, %v, count %d; want 1, count 3", v, ok, r.Count())
		}
		r.Putback(10)
		if v, _ := r.Peek(); v != 10 {
			t.Fatalf("Peek after Putback = %d, want 10", v)
		}
		if v, _ := r.DequeueSC(); v != 10 {
			t.Fatalf("DequeueSC after Putback = %d, want 10", v)
		}
		r.Advance() // drops 2 from the head
		if v, ok := r.DequeueSC(); v != 3 || !ok {
			t.Fatalf("DequeueSC = %d, %v; want 3", v, ok)
		}
		if !r.Empty() || r.Full() || r.Count() != 0 {
			t.Fatal("ring not empty at the end")
		}
		if err := r.Enqueue(4); err != nil {
			t.Fatal(err)
		}
		if v, _ := r.DequeueMC(); v != 4 {
			t.Fatalf("ring unusable after misuse: got %d, want 4", v)
		}
	}
}

// TestBurstBoundaries checks partial bursts at the exact free count, bursts
// straddling the end of the slot array and the uint32 wrap, and drops.
func TestBurstBoundaries(t *testing.T) {
	for _, start := range starts {
		r := newRingAt[int](t, 8, start) // capacity 7
		if n := r.EnqueueBurst(nil); n != 0 {
			t.Fatalf("EnqueueBurst(nil) = %d", n)
		}
		if n := r.EnqueueBurst([]int{1, 2, 3}); n != 3 {
			t.Fatalf("EnqueueBurst 3 = %d", n)
		}
		// Exactly the free count: all taken, ring full, no drops.
		if n := r.EnqueueBurst([]int{4, 5, 6, 7}); n != 4 || !r.Full() || r.Drops() != 0 {
			t.Fatalf("EnqueueBurst at free count = %d, full %v, drops %d", n, r.Full(), r.Drops())
		}
		if n := r.EnqueueBurst([]int{8}); n != 0 || r.Drops() != 1 {
			t.Fatalf("EnqueueBurst on full = %d, drops %d; want 0, 1", n, r.Drops())
		}
		dst := make([]int, 5)
		if n := r.DequeueBurstSC(dst); n != 5 || !equal(dst, []int{1, 2, 3, 4, 5}) {
			t.Fatalf("DequeueBurstSC = %d %v", n, dst)
		}
		// Free is 5; offer 6: a prefix of 5 is taken, 1 dropped. These slots
		// wrap around the end of the slot array.
		if n := r.EnqueueBurst([]int{8, 9, 10, 11, 12, 13}); n != 5 || r.Drops() != 2 {
			t.Fatalf("partial EnqueueBurst = %d, drops %d; want 5, 2", n, r.Drops())
		}
		big := make([]int, 20)
		if n := r.DequeueBurstMC(big[:3]); n != 3 || !equal(big[:3], []int{6, 7, 8}) {
			t.Fatalf("DequeueBurstMC = %d %v", n, big[:3])
		}
		if n := r.DequeueBurstSC(big); n != 4 || !equal(big[:4], []int{9, 10, 11, 12}) {
			t.Fatalf("DequeueBurstSC rest = %d %v", n, big[:4])
		}
		if r.DequeueBurstSC(big) != 0 || r.DequeueBurstMC(big) != 0 || r.DequeueBurstSC(nil) != 0 || !r.Empty() {
			t.Fatal("burst dequeue from empty ring returned items")
		}
		// Slots are cleared after reading.
		for i, v := range r.slots {
			if v != 0 {
				t.Fatalf("slot %d holds %d after everything was dequeued", i, v)
			}
		}
	}
}

// TestClearsSlots checks that consumed slots release their references.
func TestClearsSlots(t *testing.T) {
	r, _ := New[*int](4)
	for i := 0; i < 3; i++ {
		v := i
		_ = r.Enqueue(&v)
	}
	r.DequeueSC()
	r.DequeueMC()
	r.Peek()
	r.Advance()
	for i, p := range r.slots {
		if p != nil {
			t.Fatalf("slot %d still references %d", i, *p)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
