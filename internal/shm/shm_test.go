package shm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParkerKeepsOneToken(t *testing.T) {
	p := NewParker()
	p.Unpark()
	p.Unpark() // absorbed: one token at most
	p.Park()   // takes it without blocking
	parked := make(chan struct{})
	go func() { p.Park(); close(parked) }()
	select {
	case <-parked:
		t.Fatal("Park returned without a token")
	case <-time.After(10 * time.Millisecond):
	}
	p.Unpark()
	<-parked
}

func TestAtomicsAndMutex(t *testing.T) {
	var u Uint64
	assert.Equal(t, uint64(3), u.Add(3))
	assert.True(t, u.CompareAndSwap(3, 5))
	assert.Equal(t, uint64(5), u.Swap(7))
	assert.Equal(t, uint64(7), u.Load())
	var b Bool
	assert.False(t, b.Swap(true))
	var pt Pointer[int]
	v := 1
	assert.True(t, pt.CompareAndSwap(nil, &v))
	assert.Same(t, &v, pt.Load())
	var m Mutex
	m.Lock()
	assert.False(t, m.TryLock())
	m.Unlock()
	assert.True(t, m.TryLock())
	m.Unlock()
}
