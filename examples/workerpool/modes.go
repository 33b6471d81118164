package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/goiflib/goiflib/bufring"
	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/mpring"
)

// fanIn is one way of getting jobs from many producers to per-shard work.
// Every mode here is lossless: submit returns only once the job is in.
type fanIn interface {
	submit(ctx context.Context, j job) error
	close() // finish every submitted job, stop, release
	note() string
}

// mode builds a fanIn over shards shards that runs work(shard, job).
type mode struct {
	name string
	doc  string
	make func(alloc *cpumap.Allocator, shards, size int, work func(int, job)) (fanIn, error)
}

var modes = []mode{
	{"mpsc", "pinned workers, each with a bufring.MPSC inbox (the pool above)", newMPSCMode},
	{"chan", "pinned workers, each with a buffered channel inbox (the baseline)", newChanMode},
	{"drbr", "no workers: a bufring.DRBR per shard, senders do the work under its lock", newDRBRMode},
	{"mpring", "no workers: an mpring per shard, senders become its consumer; ErrFull retried with Gosched", newMPRingMode},
}

type mpscMode struct{ p *Pool }

func newMPSCMode(alloc *cpumap.Allocator, shards, size int, work func(int, job)) (fanIn, error) {
	p, err := NewPool(alloc, shards, size, work)
	if err != nil {
		return nil, err
	}
	return mpscMode{p}, nil
}

func (m mpscMode) submit(ctx context.Context, j job) error { return m.p.Submit(ctx, j) }
func (m mpscMode) close()                                  { m.p.Close() }
func (m mpscMode) note() string {
	return fmt.Sprintf("%d of %d workers pinned\n%s", m.p.Pinned(), len(m.p.inboxes), m.p.placement.Map())
}

// chanMode is Pool with channels: the same placement and pinning.
type chanMode struct {
	inboxes []chan job
	pl      *cpumap.Placement
	wg      sync.WaitGroup
}

func newChanMode(alloc *cpumap.Allocator, shards, size int, work func(int, job)) (fanIn, error) {
	pl, err := alloc.Place(cpumap.Request{Device: "workerpool-chan", RxQueues: shards})
	if err != nil {
		return nil, err
	}
	m := &chanMode{pl: pl}
	for w := range shards {
		in := make(chan job, size)
		m.inboxes = append(m.inboxes, in)
		m.wg.Go(func() {
			if unpin, err := cpumap.PinCurrentThread(pl.RxCPU[w]); err == nil {
				defer func() { _ = unpin() }()
			}
			for j := range in {
				work(w, j)
			}
		})
	}
	return m, nil
}

func (m *chanMode) submit(ctx context.Context, j job) error {
	select {
	case m.inboxes[j.flow%uint32(len(m.inboxes))] <- j:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *chanMode) close() {
	for _, in := range m.inboxes {
		close(in)
	}
	m.wg.Wait()
	m.pl.Release()
}

func (m *chanMode) note() string { return "" }

// drbrMode has no worker goroutines: the sender that gets a shard's lock
// runs the work, for its own job and for those other senders deferred.
type drbrMode struct{ shards []*bufring.DRBR[job] }

func newDRBRMode(_ *cpumap.Allocator, shards, size int, work func(int, job)) (fanIn, error) {
	m := &drbrMode{}
	for s := range shards {
		d, err := bufring.NewDRBRWith(bufring.DRBRConfig[job]{
			Size: size,
			Xmit: func(j *job) error { work(s, *j); return nil },
		})
		if err != nil {
			return nil, err
		}
		m.shards = append(m.shards, d)
	}
	return m, nil
}

func (m *drbrMode) submit(_ context.Context, j job) error {
	return m.shards[j.flow%uint32(len(m.shards))].Transmit(j)
}

func (m *drbrMode) close() {
	for _, d := range m.shards {
		d.Close(nil)
		if n := d.Flush(nil); n != 0 {
			panic(fmt.Sprintf("workerpool: %d jobs left in a DRBR that never stalls", n))
		}
	}
}

func (m *drbrMode) note() string { return "" }

// mpringMode is mp_ring used where it does not fit: a lossless fan-in. The
// sender that finds a shard's ring idle becomes its consumer and runs the
// work; a sender that finds it full retries after runtime.Gosched, since
// the job must not be dropped.
type mpringMode struct{ shards []*mpring.Ring[job] }

func newMPRingMode(_ *cpumap.Allocator, shards, size int, work func(int, job)) (fanIn, error) {
	m := &mpringMode{}
	for s := range shards {
		r, err := mpring.New(size, func(r *mpring.Ring[job], cidx, pidx int) int {
			n := min(r.IdxDiff(pidx, cidx), 32)
			for i, k := cidx, 0; k < n; i, k = r.IncrementIdx(i, 1), k+1 {
				work(s, r.At(i))
			}
			return n
		}, func(*mpring.Ring[job]) bool { return true })
		if err != nil {
			return nil, err
		}
		m.shards = append(m.shards, r)
	}
	return m, nil
}

func (m *mpringMode) submit(ctx context.Context, j job) error {
	r := m.shards[j.flow%uint32(len(m.shards))]
	for {
		err := r.EnqueueOne(j, 32, false)
		if !errors.Is(err, mpring.ErrFull) {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		r.CheckDrainage(32)
		runtime.Gosched()
	}
}

func (m *mpringMode) close() {
	for _, r := range m.shards {
		for !r.IsIdle() {
			r.CheckDrainage(r.Size())
			runtime.Gosched()
		}
	}
}

func (m *mpringMode) note() string {
	var drops uint64
	for _, r := range m.shards {
		drops += r.Stats().Drops
	}
	return fmt.Sprintf("mp_ring refused %d enqueues (each retried)", drops)
}
