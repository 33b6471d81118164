package bufring

import (
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fanIns are the sender counts of seed 003's table.
var fanIns = []int{1, 2, 4, 8, 16, 32, 64}

// queue is what the fan-in benchmark pushes items through.
type queue interface {
	put(v uint64)              // blocks (yields) until v is taken
	take(dst []uint64) (n int) // takes 0..len(dst) items, never blocks
}

type ringQ struct {
	r     *Ring[uint64]
	burst bool
}

func (q ringQ) put(v uint64) {
	for q.r.tryEnqueue(v) == false {
		runtime.Gosched()
	}
}

func (q ringQ) take(dst []uint64) int {
	if q.burst {
		return q.r.DequeueBurstSC(dst)
	}
	v, ok := q.r.DequeueSC()
	if !ok {
		return 0
	}
	dst[0] = v
	return 1
}

type chanQ chan uint64

func (q chanQ) put(v uint64) { q <- v }
func (q chanQ) take(dst []uint64) int {
	select {
	case v := <-q:
		dst[0] = v
		return 1
	default:
		return 0
	}
}

// mutexQ is the plain alternative: a slice ring behind a sync.Mutex.
type mutexQ struct {
	mu         sync.Mutex
	buf        []uint64
	head, tail int // guarded by mu
}

func (q *mutexQ) put(v uint64) {
	for {
		q.mu.Lock()
		if q.tail-q.head < len(q.buf) {
			q.buf[q.tail%len(q.buf)] = v
			q.tail++
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		runtime.Gosched()
	}
}

func (q *mutexQ) take(dst []uint64) int {
	q.mu.Lock()
	n := 0
	if q.head < q.tail {
		dst[0] = q.buf[q.head%len(q.buf)]
		q.head++
		n = 1
	}
	q.mu.Unlock()
	return n
}

// runFanIn moves b.N items from producers goroutines through q to one
// consumer (the benchmark goroutine) and reports items/s.
func runFanIn(b *testing.B, producers int, q queue) {
	b.ReportAllocs()
	per := b.N / producers
	total := per * producers
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				q.put(item(p, i))
			}
		}()
	}
	var buf [64]uint64
	for got := 0; got < total; {
		n := q.take(buf[:])
		if n == 0 {
			runtime.Gosched()
		}
		got += n
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	if total > 0 {
		b.ReportMetric(float64(total)/el.Seconds()/1e6, "Mitems/s")
	}
}

// BenchmarkFanIn: P producers into one consumer through Ring (single-item
// DequeueSC and DequeueBurstSC), a buffered channel and a mutex-protected
// slice queue, all of 1024 slots.
func BenchmarkFanIn(b *testing.B) {
	const size = 1024
	for _, p := range fanIns {
		b.Run("P="+strconv.Itoa(p), func(b *testing.B) {
			b.Run("ring", func(b *testing.B) {
				r, _ := New[uint64](size)
				runFanIn(b, p, ringQ{r: r})
			})
			b.Run("ringburst", func(b *testing.B) {
				r, _ := New[uint64](size)
				runFanIn(b, p, ringQ{r: r, burst: true})
			})
			b.Run("chan", func(b *testing.B) { runFanIn(b, p, make(chanQ, size)) })
			b.Run("mutex", func(b *testing.B) { runFanIn(b, p, &mutexQ{buf: make([]uint64, size)}) })
		})
	}
}

// encapWork stands in for iflib_encap: a fixed amount of dependent integer
// work per item (about 100 ns on a 3 GHz core).
func encapWork(v uint64) uint64 {
	for i := 0; i < 256; i++ {
		v ^= v << 13
		v ^= v >> 7
		v ^= v << 17
	}
	return v
}

// BenchmarkDRBRTransmit: P senders, one queue, xmit doing encapWork under
// the lock. "drbr" is DRBR with MaxProducers 1 (the seed-003 default),
// "drbr-unlimited" defers without a producer limit, "mutex" is simple_tx:
// take the mutex, encap, unlock (DRBR with MaxProducers 0 behaves the same).
func BenchmarkDRBRTransmit(b *testing.B) {
	for _, p := range fanIns {
		b.Run("P="+strconv.Itoa(p), func(b *testing.B) {
			for _, mode := range []struct {
				name string
				maxP int
			}{{"drbr", DefaultMaxProducers}, {"drbr-unlimited", 1 << 20}, {"mutex", -1}} {
				b.Run(mode.name, func(b *testing.B) {
					var sink uint64 // written only under the queue lock
					xmit := func(v uint64) bool { sink += encapWork(v); return true }
					send := func(v uint64) {}
					var d *DRBR[uint64]
					if mode.maxP >= 0 {
						d, _ = NewDRBR(2048, mode.maxP, xmit)
						send = func(v uint64) { _ = d.Transmit(v) }
					} else {
						var mu sync.Mutex
						send = func(v uint64) { mu.Lock(); xmit(v); mu.Unlock() }
					}
					b.ReportAllocs()
					per := b.N / p
					var wg sync.WaitGroup
					b.ResetTimer()
					start := time.Now()
					for s := 0; s < p; s++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							for i := 0; i < per; i++ {
								send(item(s, i))
							}
						}()
					}
					wg.Wait()
					el := time.Since(start)
					b.StopTimer()
					if per*p > 0 {
						b.ReportMetric(float64(per*p)/el.Seconds()/1e6, "Mitems/s")
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

// BenchmarkEnqueueDequeue: one goroutine, Enqueue then DequeueSC (ns/op is
// the pair), and the burst forms moving 32 items per call (ns/op per item).
func BenchmarkEnqueueDequeue(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		r, _ := New[uint64](1024)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = r.Enqueue(uint64(i))
			r.DequeueSC()
		}
	})
	b.Run("single-mc", func(b *testing.B) {
		r, _ := New[uint64](1024)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = r.Enqueue(uint64(i))
			r.DequeueMC()
		}
	})
	b.Run("burst32", func(b *testing.B) {
		r, _ := New[uint64](1024)
		var in, out [32]uint64
		b.ReportAllocs()
		for i := 0; i < b.N; i += 32 {
			r.EnqueueBurst(in[:])
			r.DequeueBurstSC(out[:])
		}
	})
	b.Run("chan", func(b *testing.B) {
		c := make(chan uint64, 1024)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c <- uint64(i)
			<-c
		}
	})
}
