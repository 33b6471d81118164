package iflib

import (
	"fmt"
	"math/bits"
)

// CheckFreeLists verifies the invariants of every free list of RX queue
// qid (the D17901 invariant and the index/bitmap consistency), for tests.
// Preconditions: called on the queue's own task (from the input
// callback), so the free lists are quiescent.
func CheckFreeLists(c *Context, qid int) error {
	for _, fl := range c.rxqs[qid].fls {
		if err := fl.check(); err != nil {
			return fmt.Errorf("rxq%d fl%d: %w", qid, fl.id, err)
		}
	}
	return nil
}

func (fl *freeList) check() error {
	set := 0
	for _, w := range fl.bitmap {
		set += bits.OnesCount64(w)
	}
	if set != fl.credits || fl.credits > fl.size-1 || fl.credits < 0 {
		return fmt.Errorf("credits %d, %d bits set, size %d", fl.credits, set, fl.size)
	}
	for i := 0; i < fl.size; i++ {
		loaded := fl.sdMap[i].Loaded()
		if (fl.sdCl[i] != nil) != loaded {
			return fmt.Errorf("slot %d: cluster %v but map loaded %v", i, fl.sdCl[i] != nil, loaded)
		}
		if fl.isSet(i) && fl.sdCl[i] == nil {
			return fmt.Errorf("slot %d posted without a cluster", i)
		}
	}
	// In-order hardware (slot = descriptor): the posted slots are exactly
	// the run [cidx, pidx), and the next refill starts at pidx.
	for k := 0; k < fl.size; k++ {
		i := (fl.cidx + k) & fl.mask
		want := k < fl.credits
		if fl.isSet(i) != want {
			return fmt.Errorf("slot %d posted=%v, want the run [cidx %d, pidx %d) of %d", i, !want, fl.cidx, fl.pidx, fl.credits)
		}
	}
	if (fl.cidx+fl.credits)&fl.mask != fl.pidx {
		return fmt.Errorf("cidx %d + credits %d != pidx %d", fl.cidx, fl.credits, fl.pidx)
	}
	if fl.fragidx != fl.pidx {
		return fmt.Errorf("fragidx %d != pidx %d: the next refill would post slot %d at descriptor %d", fl.fragidx, fl.pidx, fl.fragidx, fl.pidx)
	}
	return nil
}
