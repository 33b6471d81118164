package afxdp

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/iflib"
)

// needAFXDP skips the test, with the precise reason, where AF_XDP, network
// namespaces or BPF are out of reach (not root, no CONFIG_XDP_SOCKETS, no
// bpf(2)). Everywhere else a failure is a failure.
func needAFXDP(t testing.TB) {
	t.Helper()
	if err := RigAvailable(); err != nil {
		if errors.Is(err, ErrUnavailable) {
			t.Skipf("AF_XDP cannot run here: %v", err)
		}
		require.FailNow(t, fmt.Sprintf("probing AF_XDP: %v", err))
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

// newUMEM maps a UMEM of frames DefaultFrameSize frames that the test
// closes at cleanup, after it has detached every driver on it.
func newUMEM(t testing.TB, frames int) *UMEM {
	t.Helper()
	u, err := NewUMEM(UMEMConfig{Frames: frames})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, u.Close()) })
	return u
}

// startDriver attaches a driver to an interface of the rig (cfg.NetNS is
// the rig's), Inits it and waits until iflib sees the link up.
func startDriver(t testing.TB, rig *Rig, cfg Config, a iflib.Attachment) (*Driver, *iflib.Context) {
	t.Helper()
	cfg.NetNS = rig.NetNSPath()
	d, err := Attach(cfg, a)
	require.NoError(t, err)
	ic := d.Context()
	require.NoError(t, ic.Init())
	require.True(t, waitFor(t, 2*time.Second, func() bool { return ic.LinkState() == iflib.LinkStateUp }), "link of %s never came up", cfg.Interface)
	return d, ic
}

// sendRetry sends a frame from raw, resending while veth's queue is full
// (ENOBUFS: the frame was dropped on the way); any other error fails.
func sendRetry(t testing.TB, raw *RawSocket, frame []byte) {
	t.Helper()
	for {
		err := raw.Send(frame)
		if !errors.Is(err, unix.ENOBUFS) {
			require.NoError(t, err)
			return
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// peerFrames reads the frames arriving at a raw socket and requires the
// i-th to be want(i), byte for byte.
type peerFrames struct {
	t    testing.TB
	raw  *RawSocket
	want func(i int) []byte
	got  int // frames received and checked
	buf  []byte
}

func newPeerFrames(t testing.TB, raw *RawSocket, want func(i int) []byte) *peerFrames {
	return &peerFrames{t: t, raw: raw, want: want, buf: make([]byte, 1<<16)}
}

// recvUntil reads until got reaches target or, with nothing arriving, d
// has passed; d = 0 reads what is already there.
func (p *peerFrames) recvUntil(target int, d time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for p.got < target {
		m, err := p.raw.Recv(p.buf, min(10*time.Millisecond, max(time.Until(deadline), 0)))
		require.NoError(p.t, err)
		if m == 0 {
			if time.Now().Before(deadline) {
				continue
			}
			return
		}
		require.Equal(p.t, p.want(p.got), p.buf[:m], "frame %d", p.got)
		p.got++
	}
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

func (s *sink) input(_ *iflib.Context, qid int, pkts []*iflib.Packet) {
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
