package bufring

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// wire is a fake transmit side: it records what xmit accepted, and refuses
// when the descriptors it has (credits) are used up. credits < 0 means
// unlimited.
type wire struct {
	mu      sync.Mutex // taken inside xmit only to let the test read sent
	sent    []uint64
	credits atomic.Int64
	gate    chan struct{} // if non-nil, the first xmit blocks until it is closed
	entered chan struct{} // closed when the first xmit starts waiting on gate
	once    sync.Once
}

func newWire(credits int64) *wire {
	w := &wire{}
	w.credits.Store(credits)
	return w
}

func (w *wire) xmit(v uint64) bool {
	if w.gate != nil {
		w.once.Do(func() { close(w.entered); <-w.gate })
	}
	for {
		c := w.credits.Load()
		if c == 0 {
			return false
		}
		if c < 0 || w.credits.CompareAndSwap(c, c-1) {
			break
		}
	}
	w.mu.Lock()
	w.sent = append(w.sent, v)
	w.mu.Unlock()
	return true
}

func (w *wire) got() []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.sent)
}

// checkSent asserts that every item of n per producer arrived exactly once
// and in each producer's order.
func checkSent(t *testing.T, sent []uint64, producers, n int) {
	t.Helper()
	if len(sent) != producers*n {
		t.Fatalf("sent %d items, want %d", len(sent), producers*n)
	}
	next := make([]int, producers)
	for _, v := range sent {
		p, seq := int(v>>32), int(uint32(v))
		if p >= producers || seq != next[p] {
			t.Fatalf("item %#x: producer %d expected seq %d (duplicate, loss or reorder)", v, p, next[p])
		}
		next[p]++
	}
}

// waitUntil yields until cond holds. It has no timeout: a condition that
// never comes true hangs the test, which go test's -timeout reports.
func waitUntil(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

func TestNewDRBRBadInput(t *testing.T) {
	ok := func(uint64) bool { return true }
	cases := []struct {
		size, maxProducers int
		xmit               XmitFunc[uint64]
		arg                string
	}{
		{0, 1, ok, "size"}, {3, 1, ok, "size"}, {-8, 1, ok, "size"},
		{8, -1, ok, "maxProducers"}, {8, 1, nil, "xmit"},
	}
	for _, c := range cases {
		d, err := NewDRBR(c.size, c.maxProducers, c.xmit)
		var ae *ArgError
		if d != nil || !errors.Is(err, ErrInvalid) || !errors.As(err, &ae) || ae.Arg != c.arg {
			t.Errorf("NewDRBR(%d, %d, xmit nil %v) = %v, %v; want an *ArgError for %s",
				c.size, c.maxProducers, c.xmit == nil, d, err, c.arg)
		}
	}
	d, err := NewDRBR(8, DefaultMaxProducers, ok)
	if err != nil || d.Cap() != 7 {
		t.Fatalf("NewDRBR(8, 1) = cap %d, %v", d.Cap(), err)
	}
	for _, q := range []int{0, -1} {
		if more, err := d.Drain(q); more || !errors.Is(err, ErrInvalid) {
			t.Errorf("Drain(%d) = %v, %v; want ErrInvalid", q, more, err)
		}
	}
	var zero DRBR[uint64]
	var nilD *DRBR[uint64]
	for _, z := range []*DRBR[uint64]{&zero, nilD} {
		if err := z.Transmit(1); !errors.Is(err, ErrUninitialized) {
			t.Errorf("Transmit on zero DRBR = %v", err)
		}
		if _, err := z.Drain(8); !errors.Is(err, ErrUninitialized) {
			t.Errorf("Drain on zero DRBR = %v", err)
		}
		if z.Pending() != 0 || z.Flush(nil) != 0 || z.Stats() != (DRBRStats{}) || z.Cap() != 0 {
			t.Error("zero DRBR reports state")
		}
	}
}

// TestDRBRRefusal walks the descriptor-shortage path step by step: a refused
// item stays at the head, later items queue behind it, Drain sends them in
// order within its quota.
func TestDRBRRefusal(t *testing.T) {
	w := newWire(2)
	d, _ := NewDRBR(16, DefaultMaxProducers, w.xmit)
	for v := uint64(0); v < 5; v++ {
		if err := d.Transmit(v); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.got(); !slices.Equal(got, []uint64{0, 1}) || d.Pending() != 3 {
		t.Fatalf("after 2 credits: sent %v, pending %d; want [0 1], 3", got, d.Pending())
	}
	// Items 3 and 4 found the head (2) refused and queued without calling
	// xmit for themselves.
	if s := d.Stats(); s.Direct != 2 || s.Deferred != 3 || s.Refused != 3 || s.Drained != 0 {
		t.Fatalf("stats %+v", s)
	}
	w.credits.Store(2)
	if more, err := d.Drain(8); !more || err != nil {
		t.Fatalf("Drain with 2 credits = %v, %v; want more", more, err)
	}
	w.credits.Store(-1)
	sent, more, _ := d.DrainSent(8)
	if sent != 1 || more || d.Pending() != 0 {
		t.Fatalf("final DrainSent = %d, %v, pending %d", sent, more, d.Pending())
	}
	if got := w.got(); !slices.Equal(got, []uint64{0, 1, 2, 3, 4}) {
		t.Fatalf("sent %v, want 0..4 in order", got)
	}
	if s := d.Stats(); s.Drained != 3 || s.Direct != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestDRBRDrainQuota(t *testing.T) {
	w := newWire(0)
	d, _ := NewDRBR(32, DefaultMaxProducers, w.xmit)
	for v := uint64(0); v < 20; v++ {
		_ = d.Transmit(v)
	}
	w.credits.Store(-1)
	for i, wantMore := range []bool{true, true, false} {
		sent, more, err := d.DrainSent(DefaultDrainQuota)
		if err != nil || more != wantMore || sent != min(8, 20-8*i) {
			t.Fatalf("DrainSent #%d = %d, %v, %v", i, sent, more, err)
		}
	}
	checkSent(t, w.got(), 1, 20)
}

func TestDRBRFlush(t *testing.T) {
	w := newWire(0)
	d, _ := NewDRBR(8, DefaultMaxProducers, w.xmit)
	for v := uint64(0); v < 5; v++ {
		_ = d.Transmit(v)
	}
	var freed []uint64
	if n := d.Flush(func(v uint64) { freed = append(freed, v) }); n != 5 || !slices.Equal(freed, []uint64{0, 1, 2, 3, 4}) {
		t.Fatalf("Flush = %d %v", n, freed)
	}
	if d.Pending() != 0 || d.Flush(nil) != 0 {
		t.Fatal("ring not empty after Flush")
	}
}

// TestDRBRStress: many senders, every item sent exactly once and in each
// sender's order, for MaxProducers 0, 1 and many. xmit never refuses, so
// once every Transmit has returned nothing may remain in the ring: the test
// calls no Drain, and a stranded item fails it.
func TestDRBRStress(t *testing.T) {
	for _, maxP := range []int{0, 1, 2, 1000} {
		for _, senders := range []int{2, 8, 32} {
			t.Run(strconv.Itoa(maxP)+"/"+strconv.Itoa(senders), func(t *testing.T) {
				w := newWire(-1)
				d, _ := NewDRBR(8, maxP, w.xmit)
				n := stressItems(senders) * 2
				var wg sync.WaitGroup
				for p := 0; p < senders; p++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for seq := 0; seq < n; seq++ {
							if err := d.Transmit(item(p, seq)); err != nil {
								t.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				if d.Pending() != 0 {
					t.Fatalf("%d items stranded in the ring after every Transmit returned", d.Pending())
				}
				checkSent(t, w.got(), senders, n)
				s := d.Stats()
				if s.Direct+s.Deferred != uint64(senders*n) || s.Drained != s.Deferred || s.Refused != 0 || d.ring.Drops() != 0 {
					t.Fatalf("stats %+v, drops %d", s, d.ring.Drops())
				}
				t.Logf("stats %+v", s)
				if maxP == 0 && s.Deferred != 0 {
					t.Fatalf("MaxProducers 0 deferred %d items", s.Deferred)
				}
			})
		}
	}
}

// TestDRBRStressRefusals: senders against a wire with 16 descriptors that a
// completion goroutine frees and then calls Drain, as a driver's reclaim
// path would. The small ring fills, so producers also sleep for space.
func TestDRBRStressRefusals(t *testing.T) {
	for _, maxP := range []int{1, 1000} {
		const senders = 8
		w := newWire(16)
		d, _ := NewDRBR(4, maxP, w.xmit)
		n := stressItems(senders) * 2
		var wg sync.WaitGroup
		var done atomic.Bool
		for p := 0; p < senders; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for seq := 0; seq < n; seq++ {
					_ = d.Transmit(item(p, seq))
				}
			}()
		}
		completions := make(chan struct{})
		go func() {
			defer close(completions)
			for !done.Load() || d.Pending() > 0 {
				w.credits.Store(16) // the hardware completed everything
				if _, err := d.Drain(DefaultDrainQuota); err != nil {
					t.Error(err)
					return
				}
				runtime.Gosched()
			}
		}()
		wg.Wait()
		done.Store(true)
		<-completions
		checkSent(t, w.got(), senders, n)
		t.Logf("maxProducers %d: stats %+v", maxP, d.Stats())
		if s := d.Stats(); s.Direct+s.Deferred != senders*uint64(n) || s.Drained != s.Deferred || d.ring.Drops() != 0 {
			t.Fatalf("maxProducers %d: stats %+v, drops %d", maxP, s, d.ring.Drops())
		}
	}
}

// TestDRBRFullRingWaits: with the lock holder stuck in xmit, deferring
// senders fill the ring and the next one sleeps instead of dropping; when
// the holder finishes, everything goes out.
func TestDRBRFullRingWaits(t *testing.T) {
	w := newWire(-1)
	w.gate, w.entered = make(chan struct{}), make(chan struct{})
	d, _ := NewDRBR(4, 1000, w.xmit) // capacity 3, unlimited deferral
	var wg sync.WaitGroup
	send := func(p int) {
		wg.Add(1)
		go func() { defer wg.Done(); _ = d.Transmit(item(p, 0)) }()
	}
	send(0)
	<-w.entered
	for p := 1; p <= 4; p++ {
		send(p)
	}
	waitUntil(func() bool { s := d.Stats(); return s.Deferred == 3 && s.FullWaits == 1 })
	close(w.gate)
	wg.Wait()
	if d.Pending() != 0 || d.ring.Drops() != 0 {
		t.Fatalf("pending %d, drops %d", d.Pending(), d.ring.Drops())
	}
	got := w.got()
	slices.Sort(got)
	if !slices.Equal(got, []uint64{item(0, 0), item(1, 0), item(2, 0), item(3, 0), item(4, 0)}) {
		t.Fatalf("sent %x", got)
	}
}

// TestDRBRMaxProducersOne: while one sender is deferring (asleep on a full
// ring), a second sender that finds the lock taken blocks on the lock.
func TestDRBRMaxProducersOne(t *testing.T) {
	w := newWire(-1)
	w.gate, w.entered = make(chan struct{}), make(chan struct{})
	d, _ := NewDRBR(2, 1, w.xmit) // capacity 1
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = d.Transmit(item(0, 0)) }()
	<-w.entered
	_ = d.Transmit(item(1, 0)) // deferred: fills the ring, returns
	wg.Add(2)
	go func() { defer wg.Done(); _ = d.Transmit(item(1, 1)) }() // admitted, sleeps for space
	waitUntil(func() bool { return d.Stats().FullWaits == 1 })
	go func() { defer wg.Done(); _ = d.Transmit(item(2, 0)) }() // over the limit: blocks on the lock
	waitUntil(func() bool { return d.Stats().LockWaits == 1 })
	close(w.gate)
	wg.Wait()
	if d.Pending() != 0 {
		t.Fatalf("pending %d", d.Pending())
	}
	got := w.got()
	if i, j := slices.Index(got, item(1, 0)), slices.Index(got, item(1, 1)); i < 0 || j < i || len(got) != 4 {
		t.Fatalf("sent %x: want 4 items with producer 1's in order", got)
	}
	if s := d.Stats(); s.Deferred != 2 || s.LockWaits != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestDRBRMaxProducersZero: every sender takes the lock; nothing is deferred.
func TestDRBRMaxProducersZero(t *testing.T) {
	w := newWire(-1)
	w.gate, w.entered = make(chan struct{}), make(chan struct{})
	d, _ := NewDRBR(8, 0, w.xmit)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = d.Transmit(1) }()
	<-w.entered
	go func() { defer wg.Done(); _ = d.Transmit(2) }()
	waitUntil(func() bool { return d.Stats().LockWaits == 1 })
	close(w.gate)
	wg.Wait()
	if s := d.Stats(); s.Deferred != 0 || s.Direct != 2 || !slices.Equal(w.got(), []uint64{1, 2}) {
		t.Fatalf("stats %+v, sent %v", s, w.got())
	}
}

// TestDRBRHolderFullRing: a lock holder whose own item is refused while the
// ring is full must not sleep holding the lock; it unlocks, sleeps for
// space, and the owner's Drain (which only try-locks) makes progress.
func TestDRBRHolderFullRing(t *testing.T) {
	w := newWire(0)
	d, _ := NewDRBR(2, DefaultMaxProducers, w.xmit) // capacity 1
	_ = d.Transmit(1)                               // refused: the ring holds 1
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Transmit(2) }() // refused head, full ring
	waitUntil(func() bool { return d.Stats().FullWaits == 1 })
	w.credits.Store(-1)
	for {
		more, err := d.Drain(DefaultDrainQuota)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
			if !more && d.Pending() == 0 {
				if got := w.got(); !slices.Equal(got, []uint64{1, 2}) {
					t.Fatalf("sent %v, want [1 2]", got)
				}
				return
			}
		default:
		}
		runtime.Gosched()
	}
}
