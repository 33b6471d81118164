package bufring

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errLinkDown = errors.New("link down")

// TestDRBRCloseWakesBlockedSenders: senders blocked for ring space behind a
// stalled queue, and senders blocked on the lock, all return their items
// with the close error; nothing new gets in; Flush frees what was deferred;
// the counters balance; Reopen brings the queue back.
func TestDRBRCloseWakesBlockedSenders(t *testing.T) {
	w := newWire(0)
	d := newTestDRBR(t, w, 2, 1)
	require.NoError(t, d.Transmit(0))   // refused: stash, stalled
	require.NoError(t, burst2(d, 1, 2)) // stalled: the ring (capacity 2) fills
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for p := 1; p <= 3; p++ {
		wg.Go(func() { errs <- d.Transmit(item(p, 0)) })
	}
	waitUntil(func() bool { return d.ring.space.Len() == 3 })
	assert.Equal(t, uint64(3), d.Stats().FullWaits, "one per call that waited")
	d.Close(errLinkDown)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.ErrorIs(t, err, ErrClosed)
		assert.ErrorIs(t, err, errLinkDown)
		var ce *ClosedError
		assert.ErrorAs(t, err, &ce)
	}
	assert.ErrorIs(t, d.Transmit(9), errLinkDown, "refused after Close")
	n, err := d.TransmitBurst([]uint64{9, 10})
	assert.Zero(t, n)
	assert.ErrorIs(t, err, ErrClosed)
	_, _, err = d.Restart()
	assert.ErrorIs(t, err, errLinkDown)
	d.Close(nil) // twice: keeps the first cause
	assert.ErrorIs(t, d.Transmit(9), errLinkDown)

	var freed []uint64
	assert.Equal(t, 3, d.Flush(func(v uint64) { freed = append(freed, v) }))
	assert.Equal(t, []uint64{0, 1, 2}, freed)
	s := d.Stats()
	assert.Equal(t, uint64(3+1+2+1), s.Returned)
	checkBalance(t, d, 3+3+1+2+1)
	assert.Empty(t, w.got())

	d.Reopen()
	assert.False(t, d.Stalled())
	w.credits.Store(-1)
	require.NoError(t, d.Transmit(11))
	assert.Equal(t, []uint64{11}, w.got())
	checkBalance(t, d, 3+3+1+2+1+1)
}

// TestDRBRCloseWakesLockWaiters: with no deferral, senders block on the
// lock behind the owner's Do; Close returns their items at once, while Do
// itself finishes normally.
func TestDRBRCloseWakesLockWaiters(t *testing.T) {
	w := newWire(-1)
	d := newTestDRBR(t, w, 8, -1)
	holding, letGo, doDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(doDone)
		assert.NoError(t, d.Do(func() { close(holding); <-letGo }))
	}()
	<-holding
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() { assert.ErrorIs(t, d.Transmit(item(p, 0)), ErrClosed) })
	}
	waitUntil(func() bool { return d.lockQ.Len() == 4 })
	d.Close(nil)
	wg.Wait()
	close(letGo)
	<-doDone
	s := d.Stats()
	assert.Equal(t, uint64(4), s.LockWaits)
	assert.Equal(t, uint64(4), s.Returned)
	assert.Empty(t, w.got())
	assert.NoError(t, d.Do(func() {}), "Do still works after Close")
	checkBalance(t, d, 4)
}

// TestDRBRCloseDuringDrain: Close while a holder is inside xmit; the holder
// finishes the item in hand and stops; the rest stays for Flush.
func TestDRBRCloseDuringDrain(t *testing.T) {
	w := newWire(0)
	d := newTestDRBR(t, w, 8, 1)
	for v := range uint64(4) {
		require.NoError(t, d.Transmit(v)) // 0 stashed, 1..3 in the ring
	}
	w.credits.Store(-1)
	w.gate, w.entered = make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, err := d.Restart()
		assert.NoError(t, err)
	}()
	<-w.entered
	d.Close(nil)
	close(w.gate)
	<-done
	assert.Equal(t, []uint64{0}, w.got(), "the item in hand went out, then the holder stopped")
	assert.Equal(t, 3, d.Pending())
	assert.Equal(t, 3, d.Flush(nil))
	checkBalance(t, d, 4)
}

// TestDRBRStopUnderLoad is Stop against a device that stops completing:
// senders keep transmitting into a queue whose descriptors run out; Close
// must return every one of them, and every item must be sent, returned or
// flushed.
func TestDRBRStopUnderLoad(t *testing.T) {
	for _, maxP := range []int{-1, 1, 1000} {
		w := newWire(200) // then the "link" drops: no more completions
		d := newTestDRBR(t, w, 16, maxP)
		const senders = 16
		var wg sync.WaitGroup
		var accepted, returned atomic.Uint64
		for p := range senders {
			wg.Go(func() {
				for seq := 0; ; seq++ {
					err := d.Transmit(item(p, seq))
					if err != nil {
						assert.ErrorIs(t, err, ErrClosed)
						returned.Add(1)
						return
					}
					accepted.Add(1)
				}
			})
		}
		waitUntil(func() bool { return w.credits.Load() == 0 && d.Stalled() })
		d.Close(errLinkDown)
		wg.Wait() // a hang here is the bug this guards against
		flushed := d.Flush(nil)
		assert.Equal(t, accepted.Load(), uint64(len(w.got())+flushed), "maxProducers %d: accepted = sent + flushed", maxP)
		s := d.Stats()
		assert.Equal(t, returned.Load(), s.Returned)
		checkBalance(t, d, accepted.Load()+returned.Load())
		assert.Zero(t, d.Pending())
	}
}
