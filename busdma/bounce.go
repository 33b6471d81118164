package busdma

import (
	"sync"
	"sync/atomic"
)

// bouncePool is a bounce zone (struct bounce_zone, sys/kern/subr_busdma_bounce.c):
// a fixed set of pages below 4 GiB handed out first-in first-out, the way
// add_bounce_page takes the head of bounce_page_list and free_bounce_pages
// concatenates a map's pages at the tail. A fresh pool therefore hands out
// physically consecutive pages, which the loader coalesces into one segment.
//
// Invariants: ring[(head+i)%len(ring)] for i < free are the free page indices
// of the physMem, in hand-out order. All fields are guarded by mu
// (bounce_lock).
type bouncePool struct {
	mu    sync.Mutex
	ring  []int32
	head  int
	free  int
	total int
	// bottom and top are the lowest and highest bus addresses of the zone's
	// pages (immutable).
	bottom, top BusAddr
	// Counters with FreeBSD's sysctl names (hw.busdma.zoneN.*).
	bounced atomic.Uint64 // total_bounced: syncs that copied; written by map owners without mu
	failed  uint64        // loads refused for lack of pages (NOWAIT: no deferral)
}

func newBouncePool(pm *physMem, first, n int) *bouncePool {
	bp := &bouncePool{ring: make([]int32, n), free: n, total: n,
		bottom: pm.phys[first], top: pm.phys[first+n-1] + PageSize - 1}
	for i := range bp.ring {
		bp.ring[i] = int32(first + i)
	}
	return bp
}

// take appends n pages to dst, or returns ErrNoMem and takes none
// (reserve_bounce_pages with commit == 0). Pages come from the head of the
// free list, except for a tag aligned beyond a page: then only pages whose
// bus address is a multiple of align will do, taken in list order, the
// others keeping their places.
//
// FreeBSD sizes a bounce zone for MAX(alignment, PAGE_SIZE)
// (alloc_bounce_zone) but alloc_bounce_pages takes each page with
// contigmalloc(PAGE_SIZE, …, alignment PAGE_SIZE), so a tag aligned to 8 KiB
// can get a bounce page at an odd 4 KiB multiple and a misaligned segment.
// This model honours the zone's alignment instead (the intended behaviour),
// and fails the load with ErrNoMem when no suitably aligned page is free.
func (bp *bouncePool) take(dst []int32, n int, align uint64, pm *physMem) ([]int32, error) {
	bp.mu.Lock()
	defer bp.mu.Unlock()
	if bp.free < n {
		bp.failed++
		return dst, ErrNoMem
	}
	if align <= PageSize {
		for range n {
			dst = append(dst, bp.ring[bp.head])
			bp.head++
			if bp.head == len(bp.ring) {
				bp.head = 0
			}
		}
		bp.free -= n
		return dst, nil
	}
	got := 0
	for i := 0; i < bp.free && got < n; i++ {
		if uint64(pm.phys[bp.ring[(bp.head+i)%len(bp.ring)]])&(align-1) == 0 {
			got++
		}
	}
	if got < n {
		bp.failed++
		return dst, ErrNoMem
	}
	// Take the first n aligned pages and close the gaps they leave, keeping
	// the order of the rest.
	w, taken := 0, 0
	for i := 0; i < bp.free; i++ {
		p := bp.ring[(bp.head+i)%len(bp.ring)]
		if taken < n && uint64(pm.phys[p])&(align-1) == 0 {
			dst = append(dst, p)
			taken++
			continue
		}
		bp.ring[(bp.head+w)%len(bp.ring)] = p
		w++
	}
	bp.free -= n
	return dst, nil
}

// give returns pages to the tail (free_bounce_pages).
func (bp *bouncePool) give(pages []int32) {
	if len(pages) == 0 {
		return
	}
	bp.mu.Lock()
	for _, p := range pages {
		bp.ring[(bp.head+bp.free)%len(bp.ring)] = p
		bp.free++
	}
	bp.mu.Unlock()
}

func (bp *bouncePool) noteFailure() {
	if bp != nil {
		bp.mu.Lock()
		bp.failed++
		bp.mu.Unlock()
	}
}

func (bp *bouncePool) countBounce() { bp.bounced.Add(1) }

// BounceStats are a bounce zone's counters (hw.busdma.zoneN sysctls).
type BounceStats struct {
	TotalPages   int    // total_bpages
	FreePages    int    // free_bpages
	ActivePages  int    // active_bpages
	TotalBounced uint64 // total_bounced
	Failed       uint64 // NOWAIT loads refused (total_deferred would count waits)
}

func (bp *bouncePool) stats() BounceStats {
	if bp == nil {
		return BounceStats{}
	}
	bp.mu.Lock()
	defer bp.mu.Unlock()
	return BounceStats{TotalPages: bp.total, FreePages: bp.free, ActivePages: bp.total - bp.free,
		TotalBounced: bp.bounced.Load(), Failed: bp.failed}
}
