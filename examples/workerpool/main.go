// Command workerpool is a dataplane-shaped worker pool on goiflib: P
// producer goroutines fan jobs in to W worker goroutines, each pinned to a
// CPU that cpumap placed it on, each sleeping on its own bufring.MPSC inbox
// until jobs arrive. Jobs are routed by flow, so one flow's jobs are
// processed in order by one worker. The command checks that every job was
// processed exactly once and in order, and prints the placement, the rate
// and the process CPU time per job.
//
//	go run ./examples/workerpool -producers 16 -workers 2
//	go run ./examples/workerpool -mode all     # compare the four fan-ins
//
// Which queue to pick (bufring and mpring's package docs say more):
//
//   - bufring.MPSC, the default here: one consumer goroutine per inbox,
//     any number of producers. Producers wait when the inbox is full,
//     the worker sleeps when it is empty, Close drains and stops. Use it
//     when work should run on a worker you place and pin.
//   - bufring.DRBR: no worker at all. The sender that gets the shard's lock
//     does the work (its own job and those others left while it held the
//     lock), the others return at once; a full ring blocks senders, it
//     never drops. Use it when the senders can do the work themselves, as
//     in a NIC driver's transmit (iflib's drbr mode).
//   - bufring.Ring: FreeBSD's buf_ring itself, when several consumers share
//     one ring (DequeueMC) or you need its exact semantics.
//   - mpring: iflib's mp_ring. It drops when full (ENOBUFS), which a NIC
//     queue may; a lossless fan-in that retries on ErrFull collapses once
//     producers outnumber CPUs (-mode mpring shows it). Do not use it as a
//     work queue.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/internal/cputime"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "workerpool:", err)
		os.Exit(1)
	}
}

// config is what the flags set.
type config struct {
	mode      string
	workers   int
	producers int
	items     int
	inbox     int
	work      int
}

func parse(args []string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("workerpool", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.mode, "mode", "mpsc", "fan-in: mpsc, chan, drbr, mpring, or all")
	fs.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "workers (shards)")
	fs.IntVar(&c.producers, "producers", 16, "producer goroutines")
	fs.IntVar(&c.items, "items", 1<<20, "jobs in total")
	fs.IntVar(&c.inbox, "inbox", 1024, "slots per inbox (a power of two)")
	fs.IntVar(&c.work, "work", 1, "cost of one job, in rounds of a 64-step hash")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.workers < 1 || c.producers < 1 || c.items < 1 || c.work < 0 {
		return c, errors.New("-workers, -producers and -items must be ≥ 1, -work ≥ 0")
	}
	if c.mode != "all" && !slices.ContainsFunc(modes, func(m mode) bool { return m.name == c.mode }) {
		return c, fmt.Errorf("unknown -mode %q", c.mode)
	}
	return c, nil
}

func run(args []string, out io.Writer) error {
	c, err := parse(args, out)
	if err != nil {
		return err
	}
	alloc, err := cpumap.DefaultAllocator()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%d producers → %d workers, %d jobs, inbox %d, work %d, GOMAXPROCS %d\n",
		c.producers, c.workers, c.items, c.inbox, c.work, runtime.GOMAXPROCS(0))
	for _, m := range modes {
		if c.mode != "all" && c.mode != m.name {
			continue
		}
		res, err := measure(m, alloc, c)
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		fmt.Fprintf(out, "\n%s: %s\n", m.name, m.doc)
		if res.note != "" {
			fmt.Fprintln(out, res.note)
		}
		fmt.Fprintf(out, "%s: %d jobs processed exactly once, in order per flow; per shard %v\n",
			m.name, res.total, res.perShard)
		fmt.Fprintf(out, "%s: %.2f Mjobs/s, %.0f cpu-ns/job\n", m.name, res.rate/1e6, res.cpuNs)
	}
	return nil
}

// result is one measured run.
type result struct {
	total    int
	perShard []int
	rate     float64 // jobs per second
	cpuNs    float64 // process CPU time per job
	note     string
}

// ledger is one shard's record of what it processed. Only the goroutine
// running the shard's work writes it (a worker, a DRBR lock holder, an
// mp_ring consumer); the fan-in's close orders those writes before run
// reads it.
type ledger struct {
	count int
	next  []uint32 // per producer: the sequence number expected next on this shard
	bad   int      // jobs out of order or unexpected
	sink  uint64
	_     [64]byte // keeps ledgers of different shards off one cache line
}

func measure(m mode, alloc *cpumap.Allocator, c config) (result, error) {
	ledgers := make([]ledger, c.workers)
	for i := range ledgers {
		ledgers[i].next = make([]uint32, c.producers)
	}
	// Producer p's jobs for shard s carry increasing seq; a shard sees
	// each producer's jobs in the order that producer submitted them.
	work := func(shard int, j job) {
		l := &ledgers[shard]
		if int(j.producer) >= c.producers || j.seq != l.next[j.producer] || int(j.flow)%c.workers != shard {
			l.bad++
		} else {
			l.next[j.producer]++
		}
		l.count++
		l.sink += spin(uint64(j.seq), c.work)
	}
	f, err := m.make(alloc, c.workers, c.inbox, work)
	if err != nil {
		return result{}, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, c.producers)
	start := make(chan struct{})
	for p := range c.producers {
		n := c.items / c.producers
		if p < c.items%c.producers {
			n++
		}
		wg.Go(func() {
			seq := make([]uint32, c.workers) // next seq per shard for this producer
			<-start
			for i := range n {
				flow := uint32(p*7919+i) % uint32(4*c.workers) // a few flows per shard
				s := int(flow) % c.workers
				if err := f.submit(context.Background(), job{producer: uint32(p), seq: seq[s], flow: flow}); err != nil {
					errs <- err
					return
				}
				seq[s]++
			}
		})
	}
	t0, c0 := time.Now(), cputime.Process()
	close(start)
	wg.Wait()
	f.close()
	el, cpu := time.Since(t0).Seconds(), cputime.Process()-c0
	close(errs)
	if err := <-errs; err != nil {
		return result{}, err
	}
	res := result{note: f.note()}
	for _, l := range ledgers {
		if l.bad != 0 {
			return result{}, fmt.Errorf("%d jobs out of order or on the wrong shard", l.bad)
		}
		res.total += l.count
		res.perShard = append(res.perShard, l.count)
	}
	if res.total != c.items {
		return result{}, fmt.Errorf("processed %d jobs, submitted %d", res.total, c.items)
	}
	res.rate = float64(res.total) / el
	res.cpuNs = float64(cpu.Nanoseconds()) / float64(res.total)
	return res, nil
}

// spin is a job's work: rounds of a 64-step dependent hash.
func spin(v uint64, rounds int) uint64 {
	for range rounds * 64 {
		v ^= v << 13
		v ^= v >> 7
		v ^= v << 17
	}
	return v
}
