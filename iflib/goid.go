package iflib

import (
	"runtime"
	"sync"
)

// Lifecycle calls from the context's own goroutines.
//
// Stop and Detach wait for the queue tasks and the admin task to end. When
// one of those goroutines calls them (an input callback that detaches, a
// driver method that stops), waiting would deadlock, so they are recognised
// by goroutine id and the request is handed to the admin task instead
// (ErrDeferred). Go exposes no goroutine id; runtime.Stack's first line
// ("goroutine N [running]:") has it. That costs about a microsecond, paid
// only by lifecycle calls, never by the data path.

// goid returns the calling goroutine's id.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// goroutineSet is the ids of a context's own goroutines.
type goroutineSet struct {
	mu  sync.Mutex
	ids map[uint64]int
}

// enter records the calling goroutine; the returned func forgets it.
func (s *goroutineSet) enter() func() {
	id := goid()
	s.mu.Lock()
	if s.ids == nil {
		s.ids = make(map[uint64]int)
	}
	s.ids[id]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.ids[id]--; s.ids[id] == 0 {
			delete(s.ids, id)
		}
		s.mu.Unlock()
	}
}

// has reports whether id is one of the set's goroutines.
func (s *goroutineSet) has(id uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id] > 0
}
