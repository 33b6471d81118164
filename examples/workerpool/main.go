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
	"github.com/goiflib/goiflib/mpring"
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

// Limits of the flags. -workers is at most 1024: each worker locks an OS
// thread to pin it, and the Go runtime stops a process past 10000 threads
// (debug.SetMaxThreads); -producers bounds the per-worker ledgers (workers ×
// producers counters); -inbox and -work keep a run's memory and one job's
// cost in reason, and so do the products below. -items has no upper bound: a run takes as long as it
// takes.
const (
	maxWorkers   = 1024
	maxProducers = 1 << 16
	maxInbox     = 1 << 20
	maxWork      = 1 << 20
	// maxProduct bounds workers × producers (ledger counters) and
	// workers × inbox (slots): 2^24 of either is hundreds of MiB.
	maxProduct = 1 << 24
)

// errFlag is matched (errors.Is) by every *flagError.
var errFlag = errors.New("workerpool: bad flag")

// flagError is a flag value out of its range, or one the flag package
// could not parse (then flag is empty and reason is its message).
type flagError struct {
	flag   string
	value  any
	reason string
}

func (e *flagError) Error() string {
	if e.flag == "" {
		return "workerpool: " + e.reason
	}
	return fmt.Sprintf("workerpool: -%s %v: %s", e.flag, e.value, e.reason)
}

// Is makes errors.Is(err, errFlag) true.
func (e *flagError) Is(target error) bool { return target == errFlag }

func parse(args []string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("workerpool", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.mode, "mode", "mpsc", "fan-in: mpsc, chan, drbr, mpring, or all")
	fs.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), fmt.Sprintf("workers (shards), 1..%d", maxWorkers))
	fs.IntVar(&c.producers, "producers", 16, fmt.Sprintf("producer goroutines, 1..%d", maxProducers))
	fs.IntVar(&c.items, "items", 1<<20, "jobs in total, ≥ 1")
	fs.IntVar(&c.inbox, "inbox", 1024, fmt.Sprintf("slots per inbox, a power of two in 2..%d (4..%d with mpring)", maxInbox, mpring.MaxSize))
	fs.IntVar(&c.work, "work", 1, fmt.Sprintf("cost of one job, in rounds of a 64-step hash, 0..%d", maxWork))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, &flagError{reason: err.Error()}
	}
	if fs.NArg() != 0 {
		return c, &flagError{reason: fmt.Sprintf("unexpected arguments %q", fs.Args())}
	}
	bad := func(name string, v any, reason string) error { return &flagError{flag: name, value: v, reason: reason} }
	switch {
	case c.workers < 1 || c.workers > maxWorkers:
		return c, bad("workers", c.workers, fmt.Sprintf("want 1..%d (each worker pins an OS thread)", maxWorkers))
	case c.producers < 1 || c.producers > maxProducers:
		return c, bad("producers", c.producers, fmt.Sprintf("want 1..%d", maxProducers))
	case c.items < 1:
		return c, bad("items", c.items, "want ≥ 1")
	case c.inbox < 2 || c.inbox > maxInbox || c.inbox&(c.inbox-1) != 0:
		return c, bad("inbox", c.inbox, fmt.Sprintf("want a power of two in 2..%d", maxInbox))
	case c.work < 0 || c.work > maxWork:
		return c, bad("work", c.work, fmt.Sprintf("want 0..%d", maxWork))
	case c.workers*c.producers > maxProduct:
		return c, bad("producers", c.producers, fmt.Sprintf("with -workers %d: workers × producers above %d (the ledgers)", c.workers, maxProduct))
	case c.workers*c.inbox > maxProduct:
		return c, bad("inbox", c.inbox, fmt.Sprintf("with -workers %d: workers × inbox slots above %d", c.workers, maxProduct))
	case c.mode != "all" && !slices.ContainsFunc(modes, func(m mode) bool { return m.name == c.mode }):
		return c, bad("mode", fmt.Sprintf("%q", c.mode), "want mpsc, chan, drbr, mpring or all")
	case (c.mode == "mpring" || c.mode == "all") && (c.inbox < 4 || c.inbox > mpring.MaxSize):
		return c, bad("inbox", c.inbox, fmt.Sprintf("with -mode %s: want a power of two in 4..%d (an mp_ring of n slots holds n−2)", c.mode, mpring.MaxSize))
	}
	return c, nil
}

func run(args []string, out io.Writer) error {
	c, err := parse(args, out)
	if err != nil {
		return err
	}
	return runConfig(c, out)
}

// runConfig runs the modes c asks for and prints their reports.
func runConfig(c config, out io.Writer) error {
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
