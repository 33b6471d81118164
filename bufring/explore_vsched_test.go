//go:build goiflib_vsched

package bufring

import (
	"errors"
	"fmt"
	"testing"

	"github.com/goiflib/goiflib/internal/shm"
	"github.com/goiflib/goiflib/internal/vsched"
	"github.com/goiflib/goiflib/internal/vsched/vschedtest"
)

// Interleaving exploration of Ring (multi- and single-consumer) and MPSC
// under the virtual scheduler (internal/vsched), as mpring's
// explore_vsched_test.go does for mp_ring:
//
//	go test -tags goiflib_vsched -run '^TestExplore' -v ./bufring/
//
// The producers and consumers use the non-waiting calls (Enqueue, Dequeue*,
// retrying after a yield): the waiting forms park on channels and
// internal/wait's queue, which do not go through internal/shm yet, so a
// parked goroutine would block outside the scheduler. Longer:
//
//	VSCHED_PREEMPTIONS=4 VSCHED_SCHEDULES=0 VSCHED_RANDOM=100000 \
//	    go test -tags goiflib_vsched -run '^TestExplore' -v -timeout 0 ./bufring/
//
// A failure prints its schedule; VSCHED_REPLAY=<schedule> with -run naming
// the case replays it with a trace.

type ringKind int

const (
	ringMC   ringKind = iota // Ring, DequeueMC from every consumer
	ringSC                   // Ring, DequeueSC from one consumer
	mpscRing                 // MPSC, Dequeue
)

type bufCase struct {
	name      string
	kind      ringKind
	size      int
	producers int
	items     int // per producer
	consumers int
}

// item encodes producer p's k-th item; 0 is never an item.
func bufItem(p, k int) int { return (p+1)*1000 + k }

func (c bufCase) setup(s *vsched.Sim) func() error {
	total := c.producers * c.items
	var (
		enq      func(v int) error
		deq      func() (int, bool)
		drops    func() uint64
		settled  func() error // the indices agree once everything is consumed
		full     int
		consumed shm.Int64 // shared, so consumers know when to stop
		seen     = make([][]int, c.consumers)
	)
	switch c.kind {
	case ringMC, ringSC:
		r, err := New[int](c.size)
		if err != nil {
			panic(err)
		}
		enq, drops = r.Enqueue, r.Drops
		deq = r.DequeueMC
		settled = func() error {
			ph, pt, ch, ct := r.prodHead.Load(), r.prodTail.Load(), r.consHead.Load(), r.consTail.Load()
			if ph != pt || pt != ch || ch != ct {
				return fmt.Errorf("indices after the run: prodHead %d prodTail %d consHead %d consTail %d, want all equal", ph, pt, ch, ct)
			}
			return nil
		}
		if c.kind == ringSC {
			deq = r.DequeueSC
		}
	case mpscRing:
		q, err := NewMPSC[int](c.size)
		if err != nil {
			panic(err)
		}
		enq, deq = q.Enqueue, q.Dequeue
		settled = func() error {
			if n := q.Len(); n != 0 {
				return fmt.Errorf("Len() = %d after every item was consumed", n)
			}
			return nil
		}
	}
	for p := range c.producers {
		s.Go(func() {
			for k := range c.items {
				for {
					err := enq(bufItem(p, k))
					if err == nil {
						break
					}
					if !errors.Is(err, ErrFull) {
						panic(err)
					}
					full++
					shm.Yield()
				}
			}
		})
	}
	for i := range c.consumers {
		s.Go(func() {
			for consumed.Load() < int64(total) {
				v, ok := deq()
				if !ok {
					shm.Yield()
					continue
				}
				seen[i] = append(seen[i], v)
				consumed.Add(1)
			}
		})
	}
	return func() error {
		count := map[int]int{}
		for i, vs := range seen {
			last := make([]int, c.producers)
			for j := range last {
				last[j] = -1
			}
			for _, v := range vs {
				if v == 0 {
					return fmt.Errorf("consumer %d got a zero item (a slot read before its publication): %v", i, seen)
				}
				p, k := v/1000-1, v%1000
				if k <= last[p] {
					return fmt.Errorf("consumer %d got producer %d's item %d after item %d: %v", i, p, k, last[p], seen)
				}
				last[p] = k
				count[v]++
			}
		}
		for p := range c.producers {
			for k := range c.items {
				if n := count[bufItem(p, k)]; n != 1 {
					return fmt.Errorf("producer %d item %d consumed %d times: %v", p, k, n, seen)
				}
			}
		}
		if len(count) != total {
			return fmt.Errorf("%d distinct items consumed, %d produced: %v", len(count), total, seen)
		}
		if err := settled(); err != nil {
			return err
		}
		if drops != nil && drops() != uint64(full) {
			return fmt.Errorf("Drops() = %d, producers saw ErrFull %d times", drops(), full)
		}
		return nil
	}
}

var bufCases = []bufCase{
	{name: "ring-mc/2p2c/size4", kind: ringMC, size: 4, producers: 2, items: 2, consumers: 2},
	{name: "ring-mc/3p1c/size2", kind: ringMC, size: 2, producers: 3, items: 1, consumers: 1},
	{name: "ring-sc/2p/size2", kind: ringSC, size: 2, producers: 2, items: 2, consumers: 1},
	{name: "mpsc/2p/size2", kind: mpscRing, size: 2, producers: 2, items: 2, consumers: 1},
	{name: "mpsc/3p/size4", kind: mpscRing, size: 4, producers: 3, items: 1, consumers: 1},
}

// TestExploreExhaustive runs every schedule of each small case with at most
// VSCHED_PREEMPTIONS (default 2) preemptions, capped at VSCHED_SCHEDULES
// (default 100000, 0 for no cap).
func TestExploreExhaustive(t *testing.T) {
	for _, c := range bufCases {
		t.Run(c.name, func(t *testing.T) { vschedtest.Exhaustive(t, "bufring "+c.name, 2, c.setup) })
	}
}

// TestExploreRandom runs VSCHED_RANDOM (default 1000) seeded random
// schedules of larger cases.
func TestExploreRandom(t *testing.T) {
	for _, c := range []bufCase{
		{name: "ring-mc/4p3c/size8", kind: ringMC, size: 8, producers: 4, items: 12, consumers: 3},
		{name: "ring-sc/4p/size8", kind: ringSC, size: 8, producers: 4, items: 12, consumers: 1},
		{name: "mpsc/4p/size8", kind: mpscRing, size: 8, producers: 4, items: 12, consumers: 1},
	} {
		t.Run(c.name, func(t *testing.T) { vschedtest.Random(t, "bufring "+c.name, 1000, c.setup) })
	}
}

// drbrCase is one small configuration of DRBR: senders calling Transmit,
// an xmit that may refuse its first item (a stall), and with it an owner
// thread calling Restart until everything has gone out (iflib's TX task on
// descriptor completions).
type drbrCase struct {
	name         string
	size         int
	senders      int
	items        int
	maxProducers int
	refuseFirst  bool
}

func (c drbrCase) setup(s *vsched.Sim) func() error {
	total := c.senders * c.items
	var (
		inXmit  bool
		overlap error
		calls   shm.Uint64 // a scheduling point inside xmit
		refused bool
		sent    []int
		done    shm.Int64
	)
	d, err := NewDRBRWith(DRBRConfig[int]{
		Size:         c.size,
		MaxProducers: c.maxProducers,
		Xmit: func(v *int) error {
			if inXmit {
				overlap = errors.New("two goroutines in xmit at once")
			}
			inXmit = true
			defer func() { inXmit = false }()
			calls.Add(1)
			if c.refuseFirst && !refused {
				refused = true
				return ErrRefused
			}
			sent = append(sent, *v)
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	for p := range c.senders {
		s.Go(func() {
			for k := range c.items {
				if err := d.Transmit(bufItem(p, k)); err != nil {
					panic(err)
				}
			}
			done.Add(1)
		})
	}
	if c.refuseFirst {
		s.Go(func() {
			for done.Load() != int64(c.senders) || d.Pending() != 0 || d.Stalled() {
				if _, _, err := d.Restart(); err != nil {
					panic(err)
				}
				shm.Yield()
			}
		})
	}
	return func() error {
		if overlap != nil {
			return overlap
		}
		if n := d.Pending(); n != 0 {
			return fmt.Errorf("stranded: %d items pending after every sender returned (sent %v)", n, sent)
		}
		last := make([]int, c.senders)
		for i := range last {
			last[i] = -1
		}
		count := map[int]int{}
		for _, v := range sent {
			p, k := v/1000-1, v%1000
			if k <= last[p] {
				return fmt.Errorf("sender %d's item %d sent after item %d: %v", p, k, last[p], sent)
			}
			last[p] = k
			count[v]++
		}
		if len(sent) != total || len(count) != total {
			return fmt.Errorf("sent %d items (%d distinct), want %d: %v", len(sent), len(count), total, sent)
		}
		return nil
	}
}

// TestExploreDRBR runs every schedule with at most VSCHED_PREEMPTIONS
// (default 2) preemptions of small DRBR cases, then VSCHED_RANDOM (default
// 1000) random schedules of a larger one: each item passed to xmit exactly
// once, each sender's in order, never two goroutines in xmit, nothing
// pending once every sender (and the owner's Restart) is done.
func TestExploreDRBR(t *testing.T) {
	for _, c := range []drbrCase{
		{name: "2x2/size2/mp1", size: 2, senders: 2, items: 2, maxProducers: 1},
		{name: "3x1/size2/mp1", size: 2, senders: 3, items: 1, maxProducers: 1},
		{name: "2x2/size4/mp2", size: 4, senders: 2, items: 2, maxProducers: 2},
		{name: "2x2/size2/refuse", size: 2, senders: 2, items: 2, maxProducers: 1, refuseFirst: true},
	} {
		t.Run(c.name, func(t *testing.T) { vschedtest.Exhaustive(t, "bufring DRBR "+c.name, 2, c.setup) })
	}
	c := drbrCase{name: "4x12/size8/mp1", size: 8, senders: 4, items: 12, maxProducers: 1}
	t.Run(c.name+"/random", func(t *testing.T) { vschedtest.Random(t, "bufring DRBR "+c.name, 1000, c.setup) })
}
