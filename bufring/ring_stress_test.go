package bufring

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/race"
)

// stressItems is how many items each producer sends in the stress tests.
func stressItems(producers int) int {
	n := 20000 / producers
	if testing.Short() || race.Enabled {
		n /= 4
	}
	return max(n, 50)
}

// item packs a producer id and a sequence number.
func item(p, seq int) uint64 { return uint64(p)<<32 | uint64(seq) }

// produce sends items 0..n-1 of producer p, retrying on ErrFull.
func produce(r *Ring[uint64], p, n int, burst bool) {
	if burst {
		buf := make([]uint64, 0, 7)
		for seq := 0; seq < n; {
			buf = buf[:0]
			for k := seq; k < n && len(buf) < cap(buf); k++ {
				buf = append(buf, item(p, k))
			}
			took := r.EnqueueBurst(buf)
			seq += took
			if took == 0 {
				runtime.Gosched()
			}
		}
		return
	}
	for seq := 0; seq < n; seq++ {
		for r.Enqueue(item(p, seq)) != nil {
			runtime.Gosched()
		}
	}
}

// orderChecker records what one consumer saw: per producer, sequence numbers
// must increase.
type orderChecker struct {
	next []int // next expected minimum sequence per producer
}

func (c *orderChecker) see(t *testing.T, v uint64) {
	p, seq := int(v>>32), int(uint32(v))
	assert.GreaterOrEqual(t, seq, c.next[p], "producer %d: saw seq %d after %d", p, seq, c.next[p]-1)
	c.next[p] = seq + 1
}

// TestStressMPSC: 1, 2, 8 and 64 producers into one single consumer; every
// item arrives exactly once and each producer's items in order. Indices
// start just below 2^32 so they wrap during the run. In "wait" mode both
// sides use the waiting forms (producers park on a full ring, the consumer
// on an empty one) and the consumer stops at the ErrClosed that follows
// the producers' last item.
func TestStressMPSC(t *testing.T) {
	for _, producers := range []int{1, 2, 8, 64} {
		for _, mode := range []string{"single", "burst", "wait"} {
			t.Run(strconv.Itoa(producers)+"/"+mode, func(t *testing.T) {
				ctx := context.Background()
				r := newRingAt[uint64](t, 64, math.MaxUint32-1000)
				n := stressItems(producers)
				var wg sync.WaitGroup
				for p := 0; p < producers; p++ {
					wg.Go(func() {
						if mode != "wait" {
							produce(r, p, n, mode == "burst")
							return
						}
						for seq := 0; seq < n; seq++ {
							assert.NoError(t, r.EnqueueWait(ctx, item(p, seq)))
						}
					})
				}
				if mode == "wait" {
					go func() { wg.Wait(); r.Close() }()
				}
				// The single consumer: every item must come in exact order
				// per producer, so next[p] must equal seq.
				next := make([]int, producers)
				buf := make([]uint64, 16)
				total := 0
			recv:
				for mode == "wait" || total < producers*n {
					var got []uint64
					switch {
					case mode == "burst":
						got = buf[:r.DequeueBurstSC(buf)]
					case mode == "single":
						if v, ok := r.DequeueSC(); ok {
							buf[0] = v
							got = buf[:1]
						}
					case total%3 == 0:
						v, err := r.DequeueSCWait(ctx)
						if errors.Is(err, ErrClosed) {
							break recv
						}
						require.NoError(t, err)
						buf[0] = v
						got = buf[:1]
					default:
						k, err := r.DequeueBurstSCWait(ctx, buf)
						if errors.Is(err, ErrClosed) {
							break recv
						}
						require.NoError(t, err)
						got = buf[:k]
					}
					if len(got) == 0 {
						runtime.Gosched()
						continue
					}
					for _, v := range got {
						p, seq := int(v>>32), int(uint32(v))
						if p >= producers || seq != next[p] {
							require.FailNow(t, fmt.Sprintf("item %#x: producer %d expected seq %d", v, p, next[p]))
						}
						next[p]++
					}
					total += len(got)
				}
				wg.Wait()
				require.Equal(t, producers*n, total)
				_, ok := r.DequeueSC()
				require.False(t, ok, "extra item after all were received")
				require.Zero(t, r.Count())
				if mode == "wait" {
					assert.Zero(t, r.Drops(), "the waiting forms never drop")
				}
			})
		}
	}
}

// TestStressMPMC: several producers and several DequeueMC/DequeueBurstMC
// consumers, one of them parking in DequeueMCWait until Close; every item
// exactly once, each consumer sees each producer's items in increasing
// order.
func TestStressMPMC(t *testing.T) {
	const producers, consumers = 4, 4
	r := newRingAt[uint64](t, 32, math.MaxUint32-300)
	n := stressItems(producers)
	var seen = make([][]uint8, producers)
	for p := range seen {
		seen[p] = make([]uint8, n)
	}
	var mu sync.Mutex
	var wg, cwg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() { defer wg.Done(); produce(r, p, n, p%2 == 1) }()
	}
	var remaining atomic.Int64
	remaining.Store(int64(producers * n))
	for c := 0; c < consumers; c++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			oc := orderChecker{next: make([]int, producers)}
			var local []uint64
			buf := make([]uint64, 5)
		recv:
			for c == consumers-1 || remaining.Load() > 0 {
				var k int
				switch c {
				case 0:
					k = r.DequeueBurstMC(buf)
				case consumers - 1:
					v, err := r.DequeueMCWait(context.Background())
					if err != nil {
						assert.ErrorIs(t, err, ErrClosed)
						break recv
					}
					buf[0], k = v, 1
				default:
					if v, ok := r.DequeueMC(); ok {
						buf[0], k = v, 1
					}
				}
				if k == 0 {
					runtime.Gosched()
					continue
				}
				for _, v := range buf[:k] {
					oc.see(t, v)
					local = append(local, v)
				}
				remaining.Add(int64(-k))
			}
			mu.Lock()
			for _, v := range local {
				seen[v>>32][uint32(v)]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.Close() // the waiting consumer takes what is left, then ErrClosed
	cwg.Wait()
	for p := range seen {
		for seq, c := range seen[p] {
			require.Equal(t, uint8(1), c, "producer %d seq %d: seen count", p, seq)
		}
	}
}
