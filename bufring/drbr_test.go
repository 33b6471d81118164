package bufring

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wire is a fake transmit side: it records what xmit accepted, and refuses
// when the descriptors it has (credits) are used up. credits < 0 means
// unlimited.
type wire struct {
	mu      sync.Mutex // taken inside xmit only to let the test read sent
	sent    []uint64
	credits atomic.Int64
	bells   atomic.Int64  // Doorbell calls
	gate    chan struct{} // if non-nil, the first xmit blocks until it is closed
	entered chan struct{} // closed when the first xmit starts waiting on gate
	once    sync.Once
}

func newWire(credits int64) *wire {
	w := &wire{}
	w.credits.Store(credits)
	return w
}

func (w *wire) xmit(v *uint64) bool {
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
	w.sent = append(w.sent, *v)
	w.mu.Unlock()
	return true
}

func (w *wire) doorbell() { w.bells.Add(1) }

func (w *wire) got() []uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.sent)
}

// newTestDRBR is a DRBR on w with the given size and producer limit.
func newTestDRBR(t testing.TB, w *wire, size, maxProducers int) *DRBR[uint64] {
	t.Helper()
	d, err := NewDRBRWith(DRBRConfig[uint64]{Size: size, MaxProducers: maxProducers, Xmit: asXmit(w.xmit), Doorbell: w.doorbell})
	require.NoError(t, err)
	return d
}

// checkSent asserts that every item of n per producer arrived exactly once
// and in each producer's order.
func checkSent(t *testing.T, sent []uint64, producers, n int) {
	t.Helper()
	require.Len(t, sent, producers*n)
	next := make([]int, producers)
	for _, v := range sent {
		p, seq := int(v>>32), int(uint32(v))
		require.Less(t, p, producers, "item %#x", v)
		require.Equal(t, next[p], seq, "item %#x: duplicate, loss or reorder", v)
		next[p]++
	}
}

// checkBalance asserts DRBRStats' two equations once every call returned.
func checkBalance(t *testing.T, d *DRBR[uint64], offered uint64) {
	t.Helper()
	s := d.Stats()
	assert.Equal(t, offered, s.Direct+s.Deferred+s.Returned, "offered = Direct+Deferred+Returned; %+v", s)
	assert.Equal(t, s.Deferred, s.Drained+s.Flushed+uint64(d.Pending()), "Deferred = Drained+Flushed+Pending; %+v pending %d", s, d.Pending())
}

// waitUntil yields until cond holds. It has no timeout: a condition that
// never comes true hangs the test, which go test's -timeout reports.
func waitUntil(cond func() bool) {
	for !cond() {
		runtime.Gosched()
	}
}

func TestNewDRBRWithConfig(t *testing.T) {
	ok := func(*uint64) bool { return true }
	for _, c := range []struct {
		cfg DRBRConfig[uint64]
		arg string
	}{
		{DRBRConfig[uint64]{Size: 3, Xmit: asXmit(ok)}, "Size"},
		{DRBRConfig[uint64]{Size: -8, Xmit: asXmit(ok)}, "Size"},
		{DRBRConfig[uint64]{Size: 1, Xmit: asXmit(ok)}, "Size"},
		{DRBRConfig[uint64]{}, "Xmit"},
	} {
		d, err := NewDRBRWith(c.cfg)
		var ae *ConfigError
		require.ErrorIs(t, err, ErrInvalid, "%+v", c.cfg)
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "DRBRConfig."+c.arg, ae.Field)
		assert.Nil(t, d)
	}

	d, err := NewDRBRWith(DRBRConfig[uint64]{Xmit: asXmit(ok)})
	require.NoError(t, err)
	got := d.Config()
	assert.Equal(t, DefaultDRBRSize, got.Size)
	assert.Equal(t, DefaultMaxProducers, got.MaxProducers)
	assert.Equal(t, DefaultDrainQuota, got.DrainQuota)
	assert.Equal(t, DefaultDRBRSize, d.Cap())

	d, err = NewDRBRWith(DRBRConfig[uint64]{Size: 8, MaxProducers: -5, DrainQuota: -3, Xmit: asXmit(ok)})
	require.NoError(t, err)
	assert.Equal(t, -1, d.Config().MaxProducers, "negative MaxProducers resolves to -1 (no deferral)")
	assert.Equal(t, -1, d.Config().DrainQuota, "negative DrainQuota resolves to -1 (no limit)")
}

func TestDRBRZeroValue(t *testing.T) {
	var zero DRBR[uint64]
	var nilD *DRBR[uint64]
	for _, z := range []*DRBR[uint64]{&zero, nilD} {
		assert.ErrorIs(t, z.Transmit(1), ErrUninitialized)
		_, err := z.TransmitBurst([]uint64{1})
		assert.ErrorIs(t, err, ErrUninitialized)
		_, _, err = z.Restart()
		assert.ErrorIs(t, err, ErrUninitialized)
		assert.ErrorIs(t, z.Do(func() {}), ErrUninitialized)
		assert.False(t, z.TryDo(func() {}))
		assert.Zero(t, z.Pending())
		assert.Zero(t, z.Flush(nil))
		assert.Equal(t, DRBRStats{}, z.Stats())
		assert.Zero(t, z.Cap())
		assert.False(t, z.Stalled())
		assert.Equal(t, DRBRConfig[uint64]{}, z.Config())
		z.Close(nil)
		z.Reopen()
	}
}

// TestDRBRStallRemembered walks the descriptor-shortage path: a refused
// item stalls the queue, later senders defer without calling xmit, and
// Restart sends them in order within its quota once descriptors are back.
func TestDRBRStallRemembered(t *testing.T) {
	w := newWire(2)
	d := newTestDRBR(t, w, 16, DefaultMaxProducers)
	for v := uint64(0); v < 5; v++ {
		require.NoError(t, d.Transmit(v))
	}
	assert.Equal(t, []uint64{0, 1}, w.got())
	assert.Equal(t, 3, d.Pending())
	assert.True(t, d.Stalled())
	// Items 3 and 4 found the queue stalled and deferred without an xmit.
	s := d.Stats()
	assert.Equal(t, DRBRStats{Direct: 2, Deferred: 3, Refused: 1, Stalls: 1, Doorbells: 2}, s)

	// Still no descriptors: Restart retries the head once, stalls again,
	// and says not to call again (no spinning while stalled).
	sent, more, err := d.Restart()
	require.NoError(t, err)
	assert.Zero(t, sent)
	assert.False(t, more)
	assert.True(t, d.Stalled())

	w.credits.Store(2)
	sent, more, err = d.Restart()
	require.NoError(t, err)
	assert.Equal(t, 2, sent)
	assert.False(t, more, "stalled again after 2")
	w.credits.Store(-1)
	sent, more, err = d.Restart()
	require.NoError(t, err)
	assert.Equal(t, 1, sent)
	assert.False(t, more)
	assert.False(t, d.Stalled())
	assert.Zero(t, d.Pending())
	assert.Equal(t, []uint64{0, 1, 2, 3, 4}, w.got())
	s = d.Stats()
	assert.Equal(t, uint64(3), s.Drained)
	assert.Equal(t, uint64(2), s.Direct)
	assert.Equal(t, uint64(3), s.Refused)
	checkBalance(t, d, 5)
}

func TestDRBRRestartQuota(t *testing.T) {
	w := newWire(0)
	d := newTestDRBR(t, w, 32, DefaultMaxProducers)
	for v := uint64(0); v < 20; v++ {
		require.NoError(t, d.Transmit(v))
	}
	w.credits.Store(-1)
	for i, wantMore := range []bool{true, true, false} {
		sent, more, err := d.Restart()
		require.NoError(t, err)
		assert.Equal(t, wantMore, more, "Restart #%d", i)
		assert.Equal(t, min(8, 20-8*i), sent, "Restart #%d", i)
	}
	checkSent(t, w.got(), 1, 20)
	checkBalance(t, d, 20)
}

func TestDRBRFlush(t *testing.T) {
	w := newWire(0)
	d := newTestDRBR(t, w, 8, DefaultMaxProducers)
	for v := uint64(0); v < 5; v++ {
		require.NoError(t, d.Transmit(v))
	}
	var freed []uint64
	n := d.Flush(func(v uint64) { freed = append(freed, v) })
	assert.Equal(t, 5, n)
	assert.Equal(t, []uint64{0, 1, 2, 3, 4}, freed)
	assert.Zero(t, d.Pending())
	assert.Zero(t, d.Flush(nil))
	assert.Equal(t, uint64(5), d.Stats().Flushed)
	checkBalance(t, d, 5)
}

// TestDRBRXmitReplaces: xmit replaces the item (m_defrag) and then
// refuses; the replacement is what stays queued and goes out later.
func TestDRBRXmitReplaces(t *testing.T) {
	var sent []uint64
	credits := 0
	d, err := NewDRBRWith(DRBRConfig[uint64]{Size: 4, Xmit: asXmit(func(v *uint64) bool {
		if *v < 100 {
			*v += 100 // defragmented into a new packet
		}
		if credits == 0 {
			return false
		}
		credits--
		sent = append(sent, *v)
		return true
	})})
	require.NoError(t, err)
	require.NoError(t, d.Transmit(1)) // refused after replacement: stash holds 101
	require.NoError(t, d.Transmit(2)) // stalled: deferred as is
	credits = 10
	_, _, err = d.Restart()
	require.NoError(t, err)
	assert.Equal(t, []uint64{101, 102}, sent)
}

// TestDRBRDoorbellPerRun: one Doorbell per run of xmits under one lock
// hold, not one per item, and none for a run that sent nothing.
func TestDRBRDoorbellPerRun(t *testing.T) {
	w := newWire(0)
	d := newTestDRBR(t, w, 64, DefaultMaxProducers)
	for v := uint64(0); v < 10; v++ {
		require.NoError(t, d.Transmit(v)) // all deferred behind a stall
	}
	assert.Zero(t, w.bells.Load())
	w.credits.Store(-1)
	sent, _, err := d.Restart()
	require.NoError(t, err)
	assert.Equal(t, 8, sent)
	assert.Equal(t, int64(1), w.bells.Load(), "one doorbell for the run of 8")
	n, err := d.TransmitBurst([]uint64{10, 11, 12})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, int64(2), w.bells.Load(), "one doorbell for the 2 deferred and the 3 direct")
	assert.Equal(t, uint64(2), d.Stats().Doorbells)
	checkSent(t, w.got(), 1, 13)
}

// TestDRBRDo: the owner's work runs under the same lock as xmit, and items
// deferred meanwhile go out before Do returns.
func TestDRBRDo(t *testing.T) {
	w := newWire(-1)
	d := newTestDRBR(t, w, 8, DefaultMaxProducers)
	inside := make(chan struct{})
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		require.NoError(t, d.Do(func() { close(inside); <-release }))
	}()
	<-inside
	assert.False(t, d.TryDo(func() { assert.Fail(t, "TryDo ran while Do held the lock") }))
	require.NoError(t, d.Transmit(7)) // lock held: deferred
	assert.Empty(t, w.got())
	close(release)
	<-done
	assert.Equal(t, []uint64{7}, w.got())
	assert.Zero(t, d.Pending())
	ran := false
	assert.True(t, d.TryDo(func() { ran = true }))
	assert.True(t, ran)
}

// TestDRBRCanRestart: a sender that defers into a stalled queue restarts
// it itself when CanRestart says the descriptors are back.
func TestDRBRCanRestart(t *testing.T) {
	w := newWire(1)
	d, err := NewDRBRWith(DRBRConfig[uint64]{Size: 8, Xmit: asXmit(w.xmit), CanRestart: func() bool { return w.credits.Load() != 0 }})
	require.NoError(t, err)
	require.NoError(t, d.Transmit(0))
	require.NoError(t, d.Transmit(1)) // refused: stalled
	require.NoError(t, d.Transmit(2)) // CanRestart false: deferred
	assert.True(t, d.Stalled())
	w.credits.Store(-1)
	require.NoError(t, d.Transmit(3)) // CanRestart true: this sender restarts
	assert.False(t, d.Stalled())
	assert.Equal(t, []uint64{0, 1, 2, 3}, w.got())
	checkBalance(t, d, 4)
}

// TestDRBRStress: many senders, every item sent exactly once and in each
// sender's order, for MaxProducers none, 1, 2 and unlimited. xmit never
// refuses, so once every Transmit has returned nothing may be left in the
// ring with the lock free: the test calls no Restart, and a stranded item
// fails it.
func TestDRBRStress(t *testing.T) {
	for _, maxP := range []int{-1, 1, 2, 1000} {
		for _, senders := range []int{2, 8, 32} {
			for _, burst := range []int{1, 3} {
				t.Run(strconv.Itoa(maxP)+"/"+strconv.Itoa(senders)+"/burst"+strconv.Itoa(burst), func(t *testing.T) {
					w := newWire(-1)
					d := newTestDRBR(t, w, 8, maxP)
					n := stressItems(senders) * 2 / burst * burst
					var wg sync.WaitGroup
					for p := 0; p < senders; p++ {
						wg.Go(func() {
							buf := make([]uint64, burst)
							for seq := 0; seq < n; seq += burst {
								for k := range buf {
									buf[k] = item(p, seq+k)
								}
								k, err := d.TransmitBurst(buf)
								if !assert.False(t, err != nil || k != burst, "TransmitBurst = %d, %v", k, err) {
									return
								}
							}
						})
					}
					wg.Wait()
					require.Zero(t, d.Pending(), "items stranded in the ring after every Transmit returned")
					require.Zero(t, d.state.Load(), "lock word not idle")
					require.Zero(t, d.producers.Load(), "a deferring sender not counted out")
					checkSent(t, w.got(), senders, n)
					s := d.Stats()
					checkBalance(t, d, uint64(senders*n))
					assert.Zero(t, s.Refused)
					if maxP < 0 {
						assert.Zero(t, s.Deferred, "no deferral configured")
					}
				})
			}
		}
	}
}

// TestDRBRStressRefusals: senders against a wire with 16 descriptors that
// a completion goroutine frees and then calls Restart, as a driver's
// reclaim path would. The small ring fills, so senders also wait for space.
func TestDRBRStressRefusals(t *testing.T) {
	for _, maxP := range []int{1, 1000} {
		const senders = 8
		w := newWire(16)
		d := newTestDRBR(t, w, 4, maxP)
		n := stressItems(senders) * 2
		var wg sync.WaitGroup
		var done atomic.Bool
		for p := 0; p < senders; p++ {
			wg.Go(func() {
				for seq := 0; seq < n; seq++ {
					if !assert.NoError(t, d.Transmit(item(p, seq))) {
						return
					}
				}
			})
		}
		completions := make(chan struct{})
		go func() {
			defer close(completions)
			for !done.Load() || d.Pending() > 0 {
				w.credits.Store(16) // the hardware completed everything
				_, _, err := d.Restart()
				if !assert.NoError(t, err) {
					return
				}
				runtime.Gosched()
			}
		}()
		wg.Wait()
		done.Store(true)
		<-completions
		checkSent(t, w.got(), senders, n)
		checkBalance(t, d, senders*uint64(n))
		t.Logf("maxProducers %d: stats %+v", maxP, d.Stats())
	}
}

// TestDRBRFullRingWaits: with the lock holder stuck in xmit, deferring
// senders fill the ring and the next one waits instead of dropping; when
// the holder finishes, everything goes out.
func TestDRBRFullRingWaits(t *testing.T) {
	w := newWire(-1)
	w.gate, w.entered = make(chan struct{}), make(chan struct{})
	d := newTestDRBR(t, w, 2, 1000) // capacity 2, unlimited deferral
	var wg sync.WaitGroup
	send := func(p int) { wg.Go(func() { assert.NoError(t, d.Transmit(item(p, 0))) }) }
	send(0)
	<-w.entered
	for p := 1; p <= 3; p++ {
		send(p)
	}
	waitUntil(func() bool { s := d.Stats(); return s.Deferred == 2 && s.FullWaits == 1 })
	close(w.gate)
	wg.Wait()
	assert.Zero(t, d.Pending())
	got := w.got()
	slices.Sort(got)
	assert.Equal(t, []uint64{item(0, 0), item(1, 0), item(2, 0), item(3, 0)}, got)
	checkBalance(t, d, 4)
}

// TestDRBRMaxProducersOne: while one sender is deferring (waiting on a full
// ring), a second sender that finds the lock taken blocks on the lock.
func TestDRBRMaxProducersOne(t *testing.T) {
	w := newWire(-1)
	w.gate, w.entered = make(chan struct{}), make(chan struct{})
	d := newTestDRBR(t, w, 2, 1) // capacity 2
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, d.Transmit(item(0, 0))) })
	<-w.entered
	require.NoError(t, burst2(d, item(1, 0), item(1, 1)))       // deferred: fills the ring, returns
	wg.Go(func() { assert.NoError(t, d.Transmit(item(1, 2))) }) // admitted, waits for space
	waitUntil(func() bool { return d.Stats().FullWaits == 1 })
	wg.Go(func() { assert.NoError(t, d.Transmit(item(2, 0))) }) // over the limit: blocks on the lock
	waitUntil(func() bool { return d.Stats().LockWaits == 1 })
	close(w.gate)
	wg.Wait()
	assert.Zero(t, d.Pending())
	got := w.got()
	i, j, k := slices.Index(got, item(1, 0)), slices.Index(got, item(1, 1)), slices.Index(got, item(1, 2))
	assert.Len(t, got, 5)
	assert.True(t, 0 <= i && i < j && j < k, "sent %x: producer 1's items out of order", got)
	s := d.Stats()
	assert.Equal(t, uint64(3), s.Deferred)
	assert.Equal(t, uint64(1), s.LockWaits)
	checkBalance(t, d, 5)
}

// burst2 sends a burst of two.
func burst2(d *DRBR[uint64], a, b uint64) error {
	_, err := d.TransmitBurst([]uint64{a, b})
	return err
}

// TestDRBRNoDeferral: MaxProducers < 0 is plain simple_tx: every sender
// takes the lock, nothing is deferred.
func TestDRBRNoDeferral(t *testing.T) {
	w := newWire(-1)
	w.gate, w.entered = make(chan struct{}), make(chan struct{})
	d := newTestDRBR(t, w, 8, -1)
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, d.Transmit(1)) })
	<-w.entered
	wg.Go(func() { assert.NoError(t, d.Transmit(2)) })
	waitUntil(func() bool { return d.Stats().LockWaits == 1 })
	close(w.gate)
	wg.Wait()
	s := d.Stats()
	assert.Zero(t, s.Deferred)
	assert.Equal(t, uint64(2), s.Direct)
	assert.Equal(t, []uint64{1, 2}, w.got())
}

// TestDRBRHolderFullRing: a lock holder whose own items are refused while
// the ring is full must not wait for space holding the lock; it releases
// it, waits, and Restart (which never blocks on the lock) makes progress.
func TestDRBRHolderFullRing(t *testing.T) {
	w := newWire(0)
	d := newTestDRBR(t, w, 2, DefaultMaxProducers) // capacity 2
	require.NoError(t, burst2(d, 1, 2))            // 1 refused (stash), 2 in the ring
	require.NoError(t, d.Transmit(3))              // stalled: ring
	done := make(chan struct{})
	go func() { defer close(done); assert.NoError(t, d.Transmit(4)) }() // ring full: waits
	waitUntil(func() bool { return d.Stats().FullWaits == 1 })
	w.credits.Store(-1)
	for {
		_, _, err := d.Restart()
		require.NoError(t, err)
		select {
		case <-done:
			_, _, err = d.Restart()
			require.NoError(t, err)
			assert.Equal(t, []uint64{1, 2, 3, 4}, w.got())
			checkBalance(t, d, 4)
			return
		default:
		}
		runtime.Gosched()
	}
}

// asXmit adapts a test's yes/no transmit callback to DRBRConfig.Xmit:
// false is a refusal (ErrRefused).
func asXmit[T any](f func(*T) bool) func(*T) error {
	return func(v *T) error {
		if f(v) {
			return nil
		}
		return ErrRefused
	}
}

// An error from Xmit is a drop of the item: d took it, and the caller that
// sent it directly learns of it from its own Transmit; a deferred item's
// drop is the owner's business (Xmit counted it).
func TestDRBRXmitDropReportedToItsSender(t *testing.T) {
	errDrop := errors.New("dropped by xmit")
	d, err := NewDRBRWith(DRBRConfig[uint64]{Size: 8, Xmit: func(v *uint64) error {
		if *v%2 == 1 {
			return errDrop
		}
		return nil
	}})
	require.NoError(t, err)
	require.NoError(t, d.Transmit(2))
	require.ErrorIs(t, d.Transmit(3), errDrop)
	n, err := d.TransmitBurst([]uint64{4, 5, 6, 7})
	require.Equal(t, 4, n, "every item was taken")
	require.ErrorIs(t, err, errDrop)
	st := d.Stats()
	require.Equal(t, uint64(6), st.Direct)
	require.Zero(t, st.Refused)
}
