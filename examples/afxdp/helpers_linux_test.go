package afxdp

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/iflib"
)

// needAFXDP skips the test, with the precise reason, where AF_XDP, network
// namespaces or BPF are out of reach (not root, no CONFIG_XDP_SOCKETS, no
// bpf(2)). Everywhere else a failure is a failure.
func needAFXDP(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if errors.Is(err, ErrUnavailable) {
			t.Skipf("AF_XDP cannot run here: %v", err)
		}
		t.Fatalf("probing AF_XDP: %v", err)
	}
}

// newRig makes a rig that the test deletes at cleanup.
func newRig(t testing.TB, cfg RigConfig) *Rig {
	t.Helper()
	r, err := NewRig(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

// sink collects what iflib's RX hands up: a copy of each test frame's
// bytes, in arrival order, and frees the packets.
type sink struct {
	mu     sync.Mutex
	frames [][]byte
	other  int
	cond   *sync.Cond
}

func newSink() *sink {
	s := &sink{}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *sink) input(qid int, pkts []*iflib.Packet) {
	s.mu.Lock()
	for _, p := range pkts {
		var b []byte
		for m := p; m != nil; m = m.Next {
			b = append(b, m.Bytes()...)
		}
		if _, ok := FrameSeq(b); ok {
			s.frames = append(s.frames, b)
		} else {
			s.other++
		}
		p.Free()
	}
	s.mu.Unlock()
	s.cond.Broadcast()
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frames)
}

// waitFor waits until cond holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return cond()
}

// checker returns a busdma checker whose reports fail the test.
func checker(t testing.TB) *busdma.Checker {
	return busdmatest.NewChecker(t)
}
