package bufring

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The no-stranding handshake, one interleaving at a time (see
// drbr_state.go): a deferring sender publishes, then announces with an RMW
// on the lock word; a holder releases with a CAS on the same word.

// TestHandshakeAnnounceBeforeRelease: the sender announces between the
// holder's last look at the ring and its releasing CAS. The CAS must fail,
// and the holder must send the item before it lets go.
func TestHandshakeAnnounceBeforeRelease(t *testing.T) {
	w := newWire(-1)
	d := newTestDRBR(t, w, 8, 1)
	var once sync.Once
	d.testHookRelease = func() {
		// The holder (this goroutine, inside Transmit(1)) is about to
		// release. Another sender finds the lock held and defers: its
		// announcement sets stPending.
		once.Do(func() { require.NoError(t, d.Transmit(2)) })
	}
	require.NoError(t, d.Transmit(1))
	assert.Equal(t, []uint64{1, 2}, w.got(), "the holder sent the item announced during its release")
	assert.Zero(t, d.Pending())
	assert.Zero(t, d.state.Load(), "lock word idle")
	s := d.Stats()
	assert.Equal(t, uint64(1), s.Direct)
	assert.Equal(t, uint64(1), s.Drained)
	assert.Equal(t, uint64(2), s.Doorbells, "two runs (one before the hook, one after the failed CAS), two doorbells")
}

// TestHandshakeReleaseBeforeAnnounce: the holder releases after the sender
// published but before it announced. The announcement must find the lock
// free and send the item itself.
func TestHandshakeReleaseBeforeAnnounce(t *testing.T) {
	w := newWire(-1)
	d := newTestDRBR(t, w, 8, 1)
	holding, letGo := make(chan struct{}), make(chan struct{})
	doDone := make(chan struct{})
	go func() {
		defer close(doDone)
		assert.NoError(t, d.Do(func() { close(holding); <-letGo }))
	}()
	<-holding
	published, announce := make(chan struct{}), make(chan struct{})
	d.testHookPublished = func() { close(published); <-announce }
	sent := make(chan error)
	go func() { sent <- d.Transmit(7) }()
	<-published
	close(letGo) // the holder releases: nothing pending yet
	<-doDone
	assert.Empty(t, w.got())
	assert.Equal(t, 1, d.Pending(), "published, not yet announced")
	assert.Zero(t, d.state.Load(), "lock free, nothing pending")
	assert.Equal(t, int64(1), d.producers.Load(), "one sender deferring")
	close(announce)
	require.NoError(t, <-sent)
	assert.Equal(t, []uint64{7}, w.got(), "the announcing sender took the free lock and sent its item")
	assert.Zero(t, d.Pending())
	assert.Zero(t, d.state.Load())
	assert.Zero(t, d.producers.Load())
}

// TestHandshakeRestartDuringRefusal: Restart comes while the holder is
// inside an xmit that then refuses. The holder must retry instead of
// stalling (the restart may have freed the descriptors it lacked).
func TestHandshakeRestartDuringRefusal(t *testing.T) {
	calls := 0
	var sent []uint64
	var d *DRBR[uint64]
	d, err := NewDRBRWith(DRBRConfig[uint64]{Size: 8, Xmit: asXmit(func(v *uint64) bool {
		calls++
		if calls == 1 {
			// A completion on another goroutine: Restart finds the lock
			// held and leaves a restart for the holder.
			done := make(chan struct{})
			go func() {
				defer close(done)
				n, more, err := d.Restart()
				assert.Zero(t, n)
				assert.False(t, more)
				assert.NoError(t, err)
			}()
			<-done
			return false
		}
		sent = append(sent, *v)
		return true
	})})
	require.NoError(t, err)
	require.NoError(t, d.Transmit(5))
	assert.Equal(t, []uint64{5}, sent)
	assert.False(t, d.Stalled())
	s := d.Stats()
	assert.Equal(t, uint64(1), s.Refused)
	assert.Zero(t, s.Stalls, "the refusal was retried, not remembered")
	assert.Equal(t, uint64(1), s.Direct)
}

// TestHandshakeRestartWhileOwnerHolds: the queue is stalled and the owner
// holds the lock (Do, its reclaim); Restart from the completion path must
// not be lost: the owner sends on release.
func TestHandshakeRestartWhileOwnerHolds(t *testing.T) {
	w := newWire(0)
	d := newTestDRBR(t, w, 8, 1)
	require.NoError(t, d.Transmit(1))
	require.NoError(t, d.Transmit(2))
	require.True(t, d.Stalled())
	require.NoError(t, d.Do(func() {
		w.credits.Store(-1) // reclaim freed descriptors
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, more, err := d.Restart()
			assert.False(t, more)
			assert.NoError(t, err)
		}()
		<-done
		assert.Empty(t, w.got(), "nothing sent while the owner holds the lock")
	}))
	assert.Equal(t, []uint64{1, 2}, w.got())
	assert.False(t, d.Stalled())
	assert.Zero(t, d.Pending())
}
