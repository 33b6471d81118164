package bufring

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/race"
	"github.com/goiflib/goiflib/internal/testutil"
)

// consumerState returns the scheduler state of the goroutine parked in
// MPSC.park (the bracketed word of its runtime.Stack header, such as
// "chan receive"), or "" if no goroutine is in park.
func consumerState() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if !strings.Contains(g, "bufring.(*MPSC[...]).park(") {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		_, state, _ := strings.Cut(head, "[")
		state, _, _ = strings.Cut(state, "]")
		state, _, _ = strings.Cut(state, ",") // "chan receive, 2 minutes"
		return state
	}
	return ""
}

// TestMPSCConsumerParksWhenIdle: a consumer waiting on an empty ring parks
// (it is blocked in a channel receive, not running) after its bounded
// polling, stays parked without re-polling while nothing comes, and the
// next item wakes it. Nothing here is timed: the test waits for states.
func TestMPSCConsumerParksWhenIdle(t *testing.T) {
	q, err := NewMPSC[int](8)
	require.NoError(t, err)
	got := make(chan int)
	go func() {
		for {
			v, err := q.DequeueWait(context.Background())
			if err != nil {
				close(got)
				return
			}
			got <- v
		}
	}()
	testutil.Eventually(t, "the idle consumer never blocked in park", func() bool { return q.Parks() == 1 && consumerState() == "chan receive" })
	assert.Equal(t, uint32(1), q.sleeping.Load(), "a parked consumer has its flag up")
	for range 20 { // let the scheduler run anything that would re-poll
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, uint64(1), q.Parks(), "an idle consumer parks once and stays parked")
	assert.Equal(t, "chan receive", consumerState())

	require.NoError(t, q.Enqueue(7))
	// Checked before receiving: until the test takes the item from got
	// (unbuffered), the consumer cannot get back to park and raise its
	// flag again.
	assert.Equal(t, uint32(0), q.sleeping.Load(), "the producer took the flag down")
	assert.Equal(t, 7, <-got, "the item wakes it")
	testutil.Eventually(t, "the consumer parked again after the item", func() bool { return q.Parks() == 2 })
	q.Close()
	_, open := <-got
	assert.False(t, open, "Close wakes the parked consumer with ErrClosed")
}

// TestMPSCNoWakeWhilePolling: while the consumer polls (its flag down) a
// producer's publication costs no token; a token is left only for a
// consumer that raised its flag.
func TestMPSCNoWakeWhilePolling(t *testing.T) {
	q, err := NewMPSC[int](8)
	require.NoError(t, err)
	require.NoError(t, q.Enqueue(1))
	assert.Empty(t, q.wake, "flag down: no token")
	q.sleeping.Store(1) // the consumer is about to park
	require.NoError(t, q.Enqueue(2))
	assert.Len(t, q.wake, 1, "flag up: the producer left a token")
	assert.Equal(t, uint32(0), q.sleeping.Load(), "and took the flag")
	require.NoError(t, q.Enqueue(3))
	assert.Len(t, q.wake, 1, "one token at most")
	// A left-over token makes the next park return at once (a spurious
	// wake-up the caller re-checks), never block.
	dst := make([]int, 8)
	assert.Equal(t, 3, q.DequeueBurst(dst))
	require.NoError(t, q.park(context.Background()))
	assert.Empty(t, q.wake)
}

// TestMPSCStopStartStress: producers that send in waves with pauses
// between them, so that the consumer drains the ring and parks before
// every wave (the test waits for the park) and each wave's first
// publication must wake it. Single items (EnqueueWait) and bursts
// (EnqueueBurstWait) of varying length, into DequeueWait and
// DequeueBurstWait, on a ring small enough that producers wait for space
// too. Every item arrives exactly once, each producer's in order; a lost
// wake-up fails the wave's deadline.
func TestMPSCStopStartStress(t *testing.T) {
	waves, perWave := 40, 200
	if testing.Short() || race.Enabled {
		waves, perWave = 15, 100
	}
	for _, producers := range []int{1, 2, 8, 64} {
		for _, mode := range []string{"single", "burst"} {
			t.Run(strconv.Itoa(producers)+"/"+mode, func(t *testing.T) {
				q, err := NewMPSC[uint64](16)
				require.NoError(t, err)
				ctx := context.Background()
				var received atomic.Int64
				consumerDone := make(chan error, 1)
				go func() {
					next := make([]int, producers)
					buf := make([]uint64, 5)
					for i := 0; ; i++ {
						var got []uint64
						if i%2 == 0 {
							v, err := q.DequeueWait(ctx)
							if err != nil {
								consumerDone <- err
								return
							}
							buf[0] = v
							got = buf[:1]
						} else {
							n, err := q.DequeueBurstWait(ctx, buf)
							if err != nil {
								consumerDone <- err
								return
							}
							got = buf[:n]
						}
						for _, v := range got {
							p, seq := int(v>>32), int(uint32(v))
							if p >= producers || seq != next[p] {
								consumerDone <- errors.New("item " + strconv.Itoa(p) + "/" + strconv.Itoa(seq) +
									": want seq " + strconv.Itoa(next[min(p, producers-1)]))
								return
							}
							next[p]++
						}
						received.Add(int64(len(got)))
					}
				}()
				sent := 0
				for w := range waves {
					parked := q.Parks()
					var wg sync.WaitGroup
					for p := range producers {
						wg.Go(func() {
							base := w * perWave
							buf := make([]uint64, 7)
							for i := 0; i < perWave; {
								if i%50 == 25 {
									time.Sleep(50 * time.Microsecond) // a pause inside the wave
								}
								if mode == "single" {
									assert.NoError(t, q.EnqueueWait(ctx, item(p, base+i)))
									i++
									continue
								}
								k := min(1+(i+p)%len(buf), perWave-i)
								for j := range k {
									buf[j] = item(p, base+i+j)
								}
								n, err := q.EnqueueBurstWait(ctx, buf[:k])
								assert.NoError(t, err)
								assert.Equal(t, k, n)
								i += k
							}
						})
					}
					waved := make(chan struct{})
					go func() { wg.Wait(); close(waved) }()
					testutil.Eventually(t, "wave "+strconv.Itoa(w)+": producers still blocked (the consumer missed a wake-up)", func() bool {
						select {
						case <-waved:
							return true
						default:
							return false
						}
					})
					sent += producers * perWave
					testutil.Eventually(t, "wave "+strconv.Itoa(w)+": not every item arrived (lost wake-up, lost or stuck item)", func() bool { return received.Load() == int64(sent) })
					testutil.Eventually(t, "wave "+strconv.Itoa(w)+": the consumer never parked after the wave", func() bool { return q.Parks() > parked })
				}
				q.Close()
				assert.ErrorIs(t, <-consumerDone, ErrClosed)
				assert.Equal(t, int64(producers*waves*perWave), received.Load())
				assert.Zero(t, q.Len())
				assert.False(t, q.space.Waiting(), "no producer left parked")
			})
		}
	}
}
