package nsrig

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/goiflib/goiflib/examples/netstack/ifliblink"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/cputime"
)

// Link names for Open: goiflib's pair on simnic (with the endpoint's LRO
// on for LinkIflibLRO; with simnic's checksum offload and TSO for
// LinkIflibOffload), or a baseline.
const (
	LinkIflib        = "iflib"
	LinkIflibLRO     = "iflib+lro"
	LinkIflibOffload = "iflib+offload"
)

// Stacks are two connected stacks, A and B (at AddrA and AddrB), over
// some link, with a sink and a request/response server on B.
type Stacks struct {
	A, B  *stack.Stack
	Pair  *Pair // nil for a baseline
	base  *Baseline
	srv   *Server
	Link  string
	MTU   int
	AddrB netip.Addr
}

// Open builds two stacks over link (LinkIflib, LinkIflibLRO,
// LinkIflibOffload, LinkPipe or LinkChannel)
// at IP MTU mtu and starts B's sink and request/response servers. For
// LinkIflib, cfg configures the pair (its MTU is set here; Env nil opens a
// memory without the busdma checker, the production setting).
func Open(link string, mtu int, cfg PairConfig) (*Stacks, error) {
	st := &Stacks{Link: link, MTU: mtu, AddrB: AddrB, srv: NewServer()}
	switch link {
	case LinkIflib, LinkIflibLRO, LinkIflibOffload:
		cfg.MTU = mtu
		cfg.Link.LRO = link == LinkIflibLRO
		cfg.Offload = link == LinkIflibOffload
		p, err := NewPair(cfg)
		if err != nil {
			return nil, err
		}
		st.Pair, st.A, st.B = p, p.A.Stack, p.B.Stack
	default:
		b, err := NewBaseline(link, mtu)
		if err != nil {
			return nil, err
		}
		st.base, st.A, st.B = b, b.A, b.B
	}
	if err := st.srv.Sink(st.B, AddrB); err != nil {
		st.Close()
		return nil, err
	}
	if err := st.srv.RR(st.B, AddrB); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// Close stops the servers and closes the stacks (and the pair's
// contexts).
func (st *Stacks) Close() error {
	st.srv.Close()
	if st.base != nil {
		st.base.Close()
		return nil
	}
	if st.Pair != nil {
		return st.Pair.Close()
	}
	return nil
}

// Stream is one TCP connection from A to B's sink that carries a
// repeated chunk and checks, at the end, the count and hash B answers.
type Stream struct {
	c     *gonet.TCPConn
	chunk []byte
	n     int
	hh    hash.Hash
}

// NewStream connects A to B's sink.
func (st *Stacks) NewStream(ctx context.Context, chunk []byte) (*Stream, error) {
	c, err := Dial(ctx, st.A, st.AddrB, PortSink)
	if err != nil {
		return nil, err
	}
	return &Stream{c: c, chunk: chunk, hh: sha256.New()}, nil
}

// Send writes the chunk once.
func (s *Stream) Send() error {
	if _, err := s.c.Write(s.chunk); err != nil {
		return err
	}
	s.hh.Write(s.chunk)
	s.n += len(s.chunk)
	return nil
}

// Finish half-closes and checks B's count and hash.
func (s *Stream) Finish() error {
	defer s.c.Close()
	if err := s.c.CloseWrite(); err != nil {
		return err
	}
	reply, err := io.ReadAll(s.c)
	if err != nil {
		return err
	}
	if want := fmt.Sprintf("%d %x\n", s.n, s.hh.Sum(nil)); string(reply) != want {
		return fmt.Errorf("%w: sink answered %q, want %q", ErrMismatch, reply, want)
	}
	return nil
}

// Result is one measurement.
type Result struct {
	Link      string
	MTU       int
	MBps      float64       // TCP goodput A→B, MB/s (10^6 bytes)
	CPUPerMB  time.Duration // process CPU time per MB moved
	RTT       time.Duration // mean request/response round trip (64 bytes)
	Bytes     int
	RoundTrip int
}

// Measure moves bytes from A to B (chunks of 64 KiB on one connection,
// checked by hash) and then times rounds 64-byte request/response round
// trips on another.
func (st *Stacks) Measure(ctx context.Context, bytes, rounds int) (Result, error) {
	r := Result{Link: st.Link, MTU: st.MTU, Bytes: bytes, RoundTrip: rounds}
	chunk := Blob(64<<10, 7)
	s, err := st.NewStream(ctx, chunk)
	if err != nil {
		return r, err
	}
	c0, t0 := cputime.Process(), time.Now()
	for s.n < bytes {
		if err := s.Send(); err != nil {
			return r, err
		}
	}
	if err := s.Finish(); err != nil {
		return r, err
	}
	wall, cpu := time.Since(t0), cputime.Process()-c0
	mb := float64(s.n) / 1e6
	r.MBps = mb / wall.Seconds()
	r.CPUPerMB = time.Duration(float64(cpu) / mb)
	if rounds > 0 {
		rr, err := DialRR(ctx, st.A, st.AddrB)
		if err != nil {
			return r, err
		}
		defer rr.Close()
		if err := rr.RoundTrip(64); err != nil { // warm: ARP, the connection
			return r, err
		}
		t1 := time.Now()
		for range rounds {
			if err := rr.RoundTrip(64); err != nil {
				return r, err
			}
		}
		r.RTT = time.Since(t1) / time.Duration(rounds)
	}
	return r, nil
}

// DefaultBenchPair is the goiflib configuration the comparison uses:
// mp_ring (FreeBSD's default), simnic without offloads (as the baselines
// have none), line rate unlimited, no busdma checker.
func DefaultBenchPair() PairConfig {
	return PairConfig{Config: iflib.Config{TxMode: iflib.TxModeMPRing}, Link: ifliblink.Options{}}
}
