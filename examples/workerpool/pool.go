package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/goiflib/goiflib/bufring"
	"github.com/goiflib/goiflib/cpumap"
)

// job is one unit of work: which producer sent it, its sequence number in
// that producer's stream, and the flow it belongs to (which decides the
// worker, so that one flow's jobs are processed in order).
type job struct {
	producer, seq uint32
	flow          uint32
}

// Pool is a worker pool in the shape a dataplane uses: one worker
// goroutine per CPU of a cpumap placement, pinned there, each with its own
// inbox (a bufring.MPSC) that any number of producers fan into. A worker
// sleeps in DequeueBurstWait while its inbox is empty; a producer sleeps in
// EnqueueWait while the inbox is full; nothing is dropped and nothing
// polls. Close lets the workers finish what was submitted and stops them.
type Pool struct {
	inboxes   []*bufring.MPSC[job]
	placement *cpumap.Placement
	pinned    []bool
	work      func(worker int, j job)
	workers   sync.WaitGroup
}

// NewPool places workers workers with alloc (one "RX queue" each: a pool
// asks cpumap for one kind of queue), gives each an inbox of inboxSize
// slots, and starts them. work runs on worker w's goroutine for every job
// submitted to w.
func NewPool(alloc *cpumap.Allocator, workers, inboxSize int, work func(worker int, j job)) (*Pool, error) {
	pl, err := alloc.Place(cpumap.Request{Device: "workerpool", RxQueues: workers})
	if err != nil {
		return nil, fmt.Errorf("workerpool: placing %d workers: %w", workers, err)
	}
	p := &Pool{placement: pl, work: work, pinned: make([]bool, workers)}
	for range workers {
		q, err := bufring.NewMPSC[job](inboxSize)
		if err != nil {
			pl.Release()
			return nil, fmt.Errorf("workerpool: inbox: %w", err)
		}
		p.inboxes = append(p.inboxes, q)
	}
	started := make(chan struct{}, workers)
	for w := range workers {
		p.workers.Go(func() { p.run(w, started) })
	}
	for range workers {
		<-started
	}
	return p, nil
}

// run is worker w: pin, then take bursts from the inbox until Close.
func (p *Pool) run(w int, started chan<- struct{}) {
	unpin, err := cpumap.PinCurrentThread(p.placement.RxCPU[w])
	if err == nil {
		p.pinned[w] = true
		defer func() { _ = unpin() }()
	}
	started <- struct{}{}
	inbox := p.inboxes[w]
	buf := make([]job, 64)
	for {
		n, err := inbox.DequeueBurstWait(context.Background(), buf)
		if errors.Is(err, bufring.ErrClosed) {
			return // everything submitted before Close is done
		}
		for _, j := range buf[:n] {
			p.work(w, j)
		}
	}
}

// Submit hands j to the worker that owns its flow, waiting while that
// worker's inbox is full. It fails with ctx's error, or with
// bufring.ErrClosed after Close; j is then not submitted.
func (p *Pool) Submit(ctx context.Context, j job) error {
	return p.inboxes[j.flow%uint32(len(p.inboxes))].EnqueueWait(ctx, j)
}

// Close stops accepting jobs, waits for the workers to finish every job
// submitted before it, and releases the placement.
func (p *Pool) Close() {
	for _, q := range p.inboxes {
		q.Close()
	}
	p.workers.Wait()
	p.placement.Release()
}

// Pinned reports how many workers got their CPU (pinning can be refused,
// for example by a container's CPU set; the pool then runs unpinned).
func (p *Pool) Pinned() int {
	n := 0
	for _, ok := range p.pinned {
		if ok {
			n++
		}
	}
	return n
}
