package bufring

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/cputime"
	"github.com/goiflib/goiflib/internal/wait"
)

// Benchmarks of the rings against the two queues a Go programmer would
// otherwise reach for, in one binary so that ratios are measured side by
// side: a buffered channel and a slice ring behind a sync.Mutex with
// sync.Cond waits. Every variant blocks the same way a real user would
// (channel send/receive, Cond.Wait, the rings' Wait forms), so a waiting
// side costs what it costs in production; the one exception is Ring's
// burst producers, which retry with internal/wait's spin-then-yield
// because Ring has no waiting burst enqueue. Run:
//
//	go test -run '^$' -bench 'FanIn|EnqueueDequeue' -count 5 ./bufring/
//
// and compare Mitems/s and cpu-ns/item (process user+system CPU time per
// item, from getrusage) of each variant with chan's in the same round.

// fanIns are the producer counts of the fan-in benchmarks.
var fanIns = []int{1, 2, 4, 8, 16, 64}

const (
	benchSize  = 1024 // slots in every queue
	benchBurst = 32   // items per producer burst (TX_BATCH_SIZE)
	benchTake  = 64   // most items per consumer burst
)

// fanQueue is what the fan-in benchmark moves items through: one consumer,
// many producers, everything blocking.
type fanQueue interface {
	put(v uint64)          // blocks until v is in
	putBurst(vs []uint64)  // blocks until all of vs are in
	take(dst []uint64) int // blocks until ≥ 1 item, returns how many (single-item queues: 1)
}

type mpscQ struct {
	q     *MPSC[uint64]
	burst bool
}

func (q mpscQ) put(v uint64) { _ = q.q.EnqueueWait(context.Background(), v) }
func (q mpscQ) putBurst(vs []uint64) {
	_, _ = q.q.EnqueueBurstWait(context.Background(), vs)
}
func (q mpscQ) take(dst []uint64) int {
	if q.burst {
		n, _ := q.q.DequeueBurstWait(context.Background(), dst)
		return n
	}
	v, _ := q.q.DequeueWait(context.Background())
	dst[0] = v
	return 1
}

type ringQ struct {
	r     *Ring[uint64]
	burst bool
}

func (q ringQ) put(v uint64) { _ = q.r.EnqueueWait(context.Background(), v) }
func (q ringQ) putBurst(vs []uint64) {
	var b wait.Backoff
	for len(vs) > 0 {
		n := q.r.EnqueueBurst(vs) // counts drops; the benchmark ignores them
		vs = vs[n:]
		if n == 0 {
			b.Pause()
		}
	}
}
func (q ringQ) take(dst []uint64) int {
	if q.burst {
		n, _ := q.r.DequeueBurstSCWait(context.Background(), dst)
		return n
	}
	v, _ := q.r.DequeueSCWait(context.Background())
	dst[0] = v
	return 1
}

type chanQ chan uint64

func (q chanQ) put(v uint64) { q <- v }
func (q chanQ) putBurst(vs []uint64) {
	for _, v := range vs {
		q <- v
	}
}
func (q chanQ) take(dst []uint64) int { dst[0] = <-q; return 1 }

// mutexQ is the plain alternative: a slice ring behind a sync.Mutex, with
// a sync.Cond for each side to wait on.
type mutexQ struct {
	mu           sync.Mutex
	nonEmpty     sync.Cond
	nonFull      sync.Cond
	buf          []uint64 // guarded by mu
	head, tail   int      // guarded by mu
	burst        bool
	waitE, waitF int // waiters, guarded by mu
}

func newMutexQ(size int, burst bool) *mutexQ {
	q := &mutexQ{buf: make([]uint64, size), burst: burst}
	q.nonEmpty.L, q.nonFull.L = &q.mu, &q.mu
	return q
}

func (q *mutexQ) put(v uint64) {
	q.mu.Lock()
	for q.tail-q.head == len(q.buf) {
		q.waitF++
		q.nonFull.Wait()
		q.waitF--
	}
	q.buf[q.tail%len(q.buf)] = v
	q.tail++
	if q.waitE > 0 {
		q.nonEmpty.Signal()
	}
	q.mu.Unlock()
}

func (q *mutexQ) putBurst(vs []uint64) {
	q.mu.Lock()
	for len(vs) > 0 {
		for q.tail-q.head == len(q.buf) {
			q.waitF++
			q.nonFull.Wait()
			q.waitF--
		}
		for len(vs) > 0 && q.tail-q.head < len(q.buf) {
			q.buf[q.tail%len(q.buf)] = vs[0]
			q.tail++
			vs = vs[1:]
		}
		if q.waitE > 0 {
			q.nonEmpty.Signal()
		}
	}
	q.mu.Unlock()
}

func (q *mutexQ) take(dst []uint64) int {
	q.mu.Lock()
	for q.head == q.tail {
		q.waitE++
		q.nonEmpty.Wait()
		q.waitE--
	}
	n := 1
	if q.burst {
		n = min(len(dst), q.tail-q.head)
	}
	for i := range n {
		dst[i] = q.buf[q.head%len(q.buf)]
		q.head++
	}
	if q.waitF > 0 {
		q.nonFull.Broadcast()
	}
	q.mu.Unlock()
	return n
}

// runFanIn moves b.N items from producers goroutines through q to one
// consumer (the benchmark goroutine), checks that each producer's items
// arrived exactly once and in order, and reports Mitems/s and cpu-ns/item.
// burst > 1 makes producers hand over burst items per call.
func runFanIn(b *testing.B, producers, burst int, q fanQueue) {
	b.ReportAllocs()
	per := b.N / producers
	total := per * producers
	if total == 0 {
		return // b.N below the producer count (the framework's first probe)
	}
	runtime.GC()
	b.ResetTimer()
	el, cpu := fanInRound(b, producers, burst, per, 0, q)
	b.StopTimer()
	b.ReportMetric(float64(total)/el.Seconds()/1e6, "Mitems/s")
	b.ReportMetric(float64(cpu)/float64(total), "cpu-ns/item")
}

// fanInRound moves per items from each of producers goroutines through q
// to the calling goroutine, checks that each producer's items arrived
// exactly once and in order, and returns the wall-clock and process CPU
// time it took, from the producers' start to the last producer's exit.
// work > 0 makes each producer do work rounds of dependent arithmetic
// (pace) before each single item: a producer slower than the consumer.
func fanInRound(b *testing.B, producers, burst, per, work int, q fanQueue) (el, cpu time.Duration) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for p := range producers {
		wg.Go(func() {
			buf := make([]uint64, burst)
			<-start
			for i := 0; i < per; {
				if burst == 1 {
					v := item(p, i)
					if work > 0 && pace(v, work) == 0 {
						v = 0 // never: pace is never 0; keeps the work
					}
					q.put(v)
					i++
					continue
				}
				k := min(burst, per-i)
				for j := range k {
					buf[j] = item(p, i+j)
				}
				q.putBurst(buf[:k])
				i += k
			}
		})
	}
	next := make([]uint32, producers)
	var buf [benchTake]uint64
	total := per * producers
	c0, t0 := cputime.Process(), time.Now()
	close(start)
	for got := 0; got < total; {
		n := q.take(buf[:])
		for _, v := range buf[:n] {
			p, seq := v>>32, uint32(v)
			if seq != next[p] { // testify only on a failure: its call costs more than an item
				require.Equal(b, next[p], seq, "producer %d: got seq %d, want %d", p, seq, next[p])
			}
			next[p]++
		}
		got += n
	}
	wg.Wait()
	return time.Since(t0), cputime.Process() - c0
}

// fanInRoundItems is how many items one round of BenchmarkFanInVsChan
// moves through each queue before it switches to the other.
const fanInRoundItems = 1 << 17

// pace does n rounds of dependent xorshift arithmetic on v (a few ns per
// round) and returns a value that is never 0, so that the work cannot be
// optimized away: the producer-side work of BenchmarkFanInPaced.
func pace(v uint64, n int) uint64 {
	v |= 1
	for range n {
		v ^= v << 13
		v ^= v >> 7
		v ^= v << 17
	}
	return v | 1
}

// BenchmarkFanInVsChan is the MPSC-against-channel comparison with the
// ratios made by the benchmark itself: P producers, one consumer, single
// items through MPSC's waiting forms (EnqueueWait, DequeueWait) and
// through a buffered channel of the same size, and MPSC with bursts
// (EnqueueBurstWait of benchBurst, DequeueBurstWait of up to benchTake).
// The b.N items of each queue are moved in rounds of fanInRoundItems, the
// queues taking turns (mpsc, chan, burst, then the reverse order), so that
// load from elsewhere on the machine falls on all of them alike. It
// reports, over all rounds:
//
//   - mpsc-Mi/s, chan-Mi/s, burst-Mi/s: millions of items per second;
//   - x-chan: mpsc-Mi/s ÷ chan-Mi/s (target ≥ 1.5), burst-x-chan:
//     burst-Mi/s ÷ chan-Mi/s (target ≥ 10);
//   - mpsc-cpu-ns, chan-cpu-ns: process CPU time (getrusage) per item;
//     cpu-x-chan: their ratio (target ≤ 1);
//   - parks/kitem: the MPSC consumer's parks per 1000 items (a park/wake
//     ping-pong shows as one park per item: 1000).
//
// ns/op is the wall time of all three per item and means nothing alone.
//
//	go test -run '^$' -bench 'FanInVsChan' -benchtime 2000000x -cpu 1,2 -count 5 ./bufring/
func BenchmarkFanInVsChan(b *testing.B) {
	for _, p := range fanIns {
		b.Run("P="+strconv.Itoa(p), func(b *testing.B) { vsChan(b, p, 0, true) })
	}
}

// BenchmarkFanInPaced is BenchmarkFanInVsChan (without bursts) with
// producers slower than the consumer: each does pace(work) before each
// item (work=40 is roughly 100 ns, work=400 roughly 1 µs on a current
// x86 core), so that the consumer finds the ring empty after almost every
// item. A consumer that parks whenever the ring is empty pays a park and
// a wake-up per item here (parks/kitem near 1000); MPSC's polls first.
//
//	go test -run '^$' -bench 'FanInPaced' -benchtime 400000x -cpu 1,2 -count 5 ./bufring/
func BenchmarkFanInPaced(b *testing.B) {
	for _, p := range []int{1, 2, 4} {
		for _, work := range []int{40, 400} {
			b.Run("P="+strconv.Itoa(p)+"/work="+strconv.Itoa(work), func(b *testing.B) { vsChan(b, p, work, false) })
		}
	}
}

// vsChan runs the rounds of BenchmarkFanInVsChan with p producers, each
// doing work before each single item, and bursts too if withBurst.
func vsChan(b *testing.B, p, work int, withBurst bool) {
	b.ReportAllocs()
	per := fanInRoundItems / p
	if work > 0 {
		per = max(per/16, 1) // paced rounds last longer per item
	}
	rounds := max(b.N/(per*p), 1)
	mq, _ := NewMPSC[uint64](benchSize)
	bq, _ := NewMPSC[uint64](benchSize)
	type side struct {
		q       fanQueue
		burst   int
		el, cpu time.Duration
	}
	sides := []*side{{q: mpscQ{q: mq}, burst: 1}, {q: make(chanQ, benchSize), burst: 1}}
	if withBurst {
		sides = append(sides, &side{q: mpscQ{q: bq, burst: true}, burst: benchBurst})
	}
	runtime.GC()
	b.ResetTimer()
	for r := range rounds {
		for i := range sides {
			s := sides[i]
			if r%2 == 1 {
				s = sides[len(sides)-1-i]
			}
			el, cpu := fanInRound(b, p, s.burst, per, work, s.q)
			s.el += el
			s.cpu += cpu
		}
	}
	b.StopTimer()
	items := float64(rounds * per * p)
	rate := func(s *side) float64 { return items / s.el.Seconds() / 1e6 }
	cpuPer := func(s *side) float64 { return float64(s.cpu) / items }
	m, c := sides[0], sides[1]
	b.ReportMetric(rate(m), "mpsc-Mi/s")
	b.ReportMetric(rate(c), "chan-Mi/s")
	b.ReportMetric(rate(m)/rate(c), "x-chan")
	b.ReportMetric(cpuPer(m), "mpsc-cpu-ns")
	b.ReportMetric(cpuPer(c), "chan-cpu-ns")
	b.ReportMetric(cpuPer(m)/cpuPer(c), "cpu-x-chan")
	b.ReportMetric(float64(mq.Parks())/items*1000, "parks/kitem")
	if withBurst {
		bu := sides[2]
		b.ReportMetric(rate(bu), "burst-Mi/s")
		b.ReportMetric(rate(bu)/rate(c), "burst-x-chan")
	}
}

// BenchmarkFanIn: P producers into one consumer, single items (put/take
// one at a time) and bursts (producers hand over benchBurst items per
// call, the consumer takes up to benchTake), through MPSC, the faithful
// Ring, a buffered channel and a mutex queue, all of benchSize slots.
func BenchmarkFanIn(b *testing.B) {
	for _, p := range fanIns {
		b.Run("P="+strconv.Itoa(p), func(b *testing.B) {
			b.Run("mpsc", func(b *testing.B) {
				q, _ := NewMPSC[uint64](benchSize)
				runFanIn(b, p, 1, mpscQ{q: q})
			})
			b.Run("ring", func(b *testing.B) {
				r, _ := New[uint64](benchSize)
				runFanIn(b, p, 1, ringQ{r: r})
			})
			b.Run("chan", func(b *testing.B) { runFanIn(b, p, 1, make(chanQ, benchSize)) })
			b.Run("mutex", func(b *testing.B) { runFanIn(b, p, 1, newMutexQ(benchSize, false)) })
			b.Run("mpsc-burst", func(b *testing.B) {
				q, _ := NewMPSC[uint64](benchSize)
				runFanIn(b, p, benchBurst, mpscQ{q: q, burst: true})
			})
			b.Run("ring-burst", func(b *testing.B) {
				r, _ := New[uint64](benchSize)
				runFanIn(b, p, benchBurst, ringQ{r: r, burst: true})
			})
			b.Run("mutex-burst", func(b *testing.B) { runFanIn(b, p, benchBurst, newMutexQ(benchSize, true)) })
		})
	}
}

// BenchmarkEnqueueDequeue: one goroutine, enqueue one then dequeue one
// (ns/op is the pair), and the burst forms moving 32 items per call
// (ns/op per item).
func BenchmarkEnqueueDequeue(b *testing.B) {
	b.Run("mpsc", func(b *testing.B) {
		q, _ := NewMPSC[uint64](benchSize)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_ = q.Enqueue(uint64(i))
			q.Dequeue()
		}
	})
	b.Run("ring-sc", func(b *testing.B) {
		r, _ := New[uint64](benchSize)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_ = r.Enqueue(uint64(i))
			r.DequeueSC()
		}
	})
	b.Run("ring-mc", func(b *testing.B) {
		r, _ := New[uint64](benchSize)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_ = r.Enqueue(uint64(i))
			r.DequeueMC()
		}
	})
	b.Run("chan", func(b *testing.B) {
		c := make(chan uint64, benchSize)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			c <- uint64(i)
			<-c
		}
	})
	b.Run("mutex", func(b *testing.B) {
		q := newMutexQ(benchSize, false)
		var dst [1]uint64
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			q.put(uint64(i))
			q.take(dst[:])
		}
	})
	b.Run("mpsc-burst32", func(b *testing.B) {
		q, _ := NewMPSC[uint64](benchSize)
		var in, out [benchBurst]uint64
		b.ReportAllocs()
		for i := 0; i < b.N; i += benchBurst {
			_, _ = q.EnqueueBurst(in[:])
			q.DequeueBurst(out[:])
		}
	})
	b.Run("ring-burst32", func(b *testing.B) {
		r, _ := New[uint64](benchSize)
		var in, out [benchBurst]uint64
		b.ReportAllocs()
		for i := 0; i < b.N; i += benchBurst {
			r.EnqueueBurst(in[:])
			r.DequeueBurstSC(out[:])
		}
	})
}

// encapWork stands in for iflib_encap: a fixed amount of dependent integer
// work per item (768 dependent shift-xor steps).
func encapWork(v uint64) uint64 {
	for i := 0; i < 256; i++ {
		v ^= v << 13
		v ^= v >> 7
		v ^= v << 17
	}
	return v
}

// BenchmarkDRBRTransmit: P senders, one queue, xmit doing encapWork under
// the lock. "drbr" is DRBR with MaxProducers 1 (the default),
// "drbr-unlimited" defers without a producer limit, "mutex" is simple_tx:
// take the mutex, encap, unlock (DRBR with MaxProducers −1 behaves the
// same). The end-to-end comparison with mp_ring is examples/seed003ring.
func BenchmarkDRBRTransmit(b *testing.B) {
	for _, p := range fanIns {
		b.Run("P="+strconv.Itoa(p), func(b *testing.B) {
			for _, mode := range []struct {
				name string
				maxP int
			}{{"drbr", DefaultMaxProducers}, {"drbr-unlimited", 1 << 20}, {"mutex", 0}} {
				b.Run(mode.name, func(b *testing.B) {
					var sink uint64 // written only under the queue lock
					xmit := func(v *uint64) bool { sink += encapWork(*v); return true }
					var send func(v uint64)
					var d *DRBR[uint64]
					if mode.maxP != 0 {
						d, _ = NewDRBRWith(DRBRConfig[uint64]{MaxProducers: mode.maxP, Xmit: asXmit(xmit)})
						send = func(v uint64) { _ = d.Transmit(v) }
					} else {
						var mu sync.Mutex
						send = func(v uint64) { mu.Lock(); xmit(&v); mu.Unlock() }
					}
					b.ReportAllocs()
					per := b.N / p
					var wg sync.WaitGroup
					b.ResetTimer()
					c0, t0 := cputime.Process(), time.Now()
					for s := range p {
						wg.Go(func() {
							for i := range per {
								send(item(s, i))
							}
						})
					}
					wg.Wait()
					el, cpu := time.Since(t0), cputime.Process()-c0
					b.StopTimer()
					if per*p > 0 {
						b.ReportMetric(float64(per*p)/el.Seconds()/1e6, "Mitems/s")
						b.ReportMetric(float64(cpu)/float64(per*p), "cpu-ns/item")
					}
					if d != nil && per*p > 0 {
						b.ReportMetric(float64(d.Stats().Deferred)/float64(per*p), "deferred/op")
					}
					_ = sink
				})
			}
		})
	}
}

// BenchmarkDRBRUncontended: one sender, so every Transmit finds the lock
// free and sends directly; xmit does nothing. ns/op is DRBR's own cost per
// packet on its fast path, beside simple_tx's (a mutex around the same
// xmit and doorbell).
func BenchmarkDRBRUncontended(b *testing.B) {
	var sent, bells uint64
	xmit := func(v *uint64) bool { sent += *v; return true }
	bell := func() { bells++ }
	b.Run("drbr", func(b *testing.B) {
		d, _ := NewDRBRWith(DRBRConfig[uint64]{Xmit: asXmit(xmit), Doorbell: bell})
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_ = d.Transmit(uint64(i))
		}
	})
	b.Run("drbr-burst32", func(b *testing.B) {
		d, _ := NewDRBRWith(DRBRConfig[uint64]{Xmit: asXmit(xmit), Doorbell: bell})
		var vs [benchBurst]uint64
		b.ReportAllocs()
		for i := 0; i < b.N; i += benchBurst {
			_, _ = d.TransmitBurst(vs[:])
		}
	})
	b.Run("mutex", func(b *testing.B) {
		var mu sync.Mutex
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			v := uint64(i)
			mu.Lock()
			xmit(&v)
			bell()
			mu.Unlock()
		}
	})
}

// BenchmarkSpinPolicy sweeps internal/wait's Spins (with Yields at its
// value) and Yields (with Spins at its value) on the single-item fan-in of
// MPSC and Ring, to choose and re-check the shared policy:
//
//	go test -run '^$' -bench SpinPolicy -benchtime 1000000x -count 5 ./bufring/
func BenchmarkSpinPolicy(b *testing.B) {
	spins, yields := wait.Spins, wait.Yields
	defer func() { wait.Spins, wait.Yields = spins, yields }()
	type setting struct{ spins, yields int }
	var settings []setting
	for _, s := range []int{0, 4, 8, 16, 64, 128} {
		settings = append(settings, setting{s, yields})
	}
	for _, y := range []int{0, 1, 16, 1 << 30} { // and Yields at its value above
		settings = append(settings, setting{spins, y})
	}
	for _, p := range []int{1, 4, 16, 64} {
		for _, st := range settings {
			name := "P=" + strconv.Itoa(p) + "/spins=" + strconv.Itoa(st.spins) + "/yields=" + strconv.Itoa(st.yields)
			if st.yields == 1<<30 {
				name = "P=" + strconv.Itoa(p) + "/spins=" + strconv.Itoa(st.spins) + "/yields=never-park"
			}
			b.Run(name+"/mpsc", func(b *testing.B) {
				wait.Spins, wait.Yields = st.spins, st.yields
				q, _ := NewMPSC[uint64](benchSize)
				runFanIn(b, p, 1, mpscQ{q: q})
			})
			b.Run(name+"/ring", func(b *testing.B) {
				wait.Spins, wait.Yields = st.spins, st.yields
				r, _ := New[uint64](benchSize)
				runFanIn(b, p, 1, ringQ{r: r})
			})
		}
	}
}

// BenchmarkMPSCConsumerPolicy sweeps the MPSC consumer's polls before each
// yield (mpscPolls) and polling rounds before it parks (mpscYields) on the
// single-item fan-in, reporting parks per 1000 items beside the rate and
// CPU per item, to choose and re-check the values in mpsc_wait.go:
//
//	go test -run '^$' -bench MPSCConsumerPolicy -benchtime 1000000x -cpu 1,2 -count 5 ./bufring/
func BenchmarkMPSCConsumerPolicy(b *testing.B) {
	polls, yields := mpscPolls, mpscYields
	defer func() { mpscPolls, mpscYields = polls, yields }()
	for _, p := range []int{1, 4, 64} {
		for _, st := range [][2]int{{0, 1}, {0, 8}, {16, 8}, {64, 1}, {64, 8}, {64, 32}, {256, 8}} {
			name := "P=" + strconv.Itoa(p) + "/polls=" + strconv.Itoa(st[0]) + "/yields=" + strconv.Itoa(st[1])
			b.Run(name, func(b *testing.B) {
				mpscPolls, mpscYields = st[0], st[1]
				q, _ := NewMPSC[uint64](benchSize)
				runFanIn(b, p, 1, mpscQ{q: q})
				if b.N >= p {
					b.ReportMetric(float64(q.Parks())/float64(b.N/p*p)*1000, "parks/kitem")
				}
			})
		}
	}
}
