package nsrig

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/race"
)

// transferSize is what each transfer moves: 10 MB, and under the race
// detector (which slows gVisor, iflib and the device model alike by an
// order of magnitude) raceSize. CI runs the 10 MB tests without the race
// detector too (.ci/run).
func transferSize(raceSize int) int {
	if race.Enabled {
		return raceSize
	}
	return 10 << 20
}

var modes = []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR}

// newPair builds a pair on a test Env (the busdma checker on, every leak
// and goroutine checked at cleanup) and closes it before the Env.
func newPair(t *testing.T, cfg PairConfig) *Pair {
	t.Helper()
	cfg.Env = simnictest.NewEnv(t, simnictest.EnvOptions{Sim: SimConfig(cfg)})
	p, err := NewPair(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

// serve starts B's echo and HTTP servers; they stop at cleanup (before
// the pair closes).
func serve(t *testing.T, p *Pair, blob []byte) {
	t.Helper()
	sv := NewServer()
	require.NoError(t, sv.Echo(p.B.Stack, p.B.Addr))
	require.NoError(t, sv.HTTP(p.B.Stack, p.B.Addr, "hello", blob))
	t.Cleanup(sv.Close)
}

// exchange moves blob A→B→A through B's echo server and B→A as an HTTP
// download, each checked byte for byte.
func exchange(t *testing.T, p *Pair, blob []byte, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t0 := time.Now()
	require.NoError(t, Echo(ctx, p.A.Stack, p.B.Addr, blob), "echo")
	t1 := time.Now()
	cl := HTTPClient(p.A.Stack)
	require.NoError(t, GetBlob(ctx, cl, p.B.Addr, blob), "HTTP")
	cl.CloseIdleConnections()
	t.Logf("%d bytes: echo %v, HTTP %v", len(blob), t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
}

// gv summarises a stack's view of the run.
func gv(s *stack.Stack) string {
	st := s.Stats()
	return fmt.Sprintf("tcp: retransmits %d, timeouts %d, checksum errors %d, segments %d in %d out; ip: malformed %d, invalid dst %d; unknown L3 %d",
		st.TCP.Retransmits.Value(), st.TCP.Timeouts.Value(), st.TCP.ChecksumErrors.Value(), st.TCP.ValidSegmentsReceived.Value(),
		st.TCP.SegmentsSent.Value(), st.IP.MalformedPacketsReceived.Value(), st.IP.InvalidDestinationAddressesReceived.Value(),
		UnknownL3(s))
}

// TestTransfers: TCP echo and HTTP over gonet move the blob byte for
// byte between two stacks on two simnics, in every TX mode, with the
// offloads (checksum insertion, TSO, RX verification) off and on, at MTU
// 1500 and 9000 (without offloads on 2 KiB clusters, so every jumbo frame
// is a chain both ways; with them on 9 KiB clusters); afterwards every
// counter balances and no segment had a bad checksum.
func TestTransfers(t *testing.T) {
	blob := Blob(transferSize(256<<10), 1)
	for _, mode := range modes {
		for _, off := range []bool{false, true} {
			for _, mtu := range []int{1500, 9000} {
				t.Run(fmt.Sprintf("%s/offload=%v/mtu=%d", mode, off, mtu), func(t *testing.T) {
					cfg := PairConfig{MTU: mtu, Offload: off, Config: iflib.Config{TxMode: mode}}
					if mtu > 1500 && !off {
						cfg.RxBufSize, cfg.TxClusterSize = iflib.MCLBytes, iflib.MCLBytes
					}
					p := newPair(t, cfg)
					serve(t, p, blob)
					exchange(t, p, blob, 2*time.Minute)
					a, b, err := p.Balanced(5*time.Second, 0, 0)
					require.NoError(t, err)
					for _, s := range []*Side{p.A, p.B} {
						st := s.EP.Stats()
						assert.Zero(t, s.Stack.Stats().TCP.ChecksumErrors.Value())
						// A full ring refuses (simple_tx's ENOBUFS when the descriptors
						// run out, mp_ring's when it is full; drbr waits instead): that
						// is the only loss a fault-free rig may see, and Balance has
						// accounted for it.
						assert.Zero(t, st.TxLinkDown+st.TxNoZone, "%v", st)
						if mode == iflib.TxModeDRBR {
							assert.Zero(t, st.TxRefused, "drbr never drops for lack of room: %v", st)
						}
					}
					t.Logf("A→B losses: %s", Losses(a, b))
					t.Logf("B→A losses: %s", Losses(b, a))
					if off {
						assert.NotZero(t, a.EP.TxCsumOffload+b.EP.TxCsumOffload, "checksums were offloaded")
						assert.NotZero(t, a.EP.TxTSO+b.EP.TxTSO, "TSO was used")
					} else {
						assert.Zero(t, a.EP.TxCsumOffload+a.EP.TxTSO+b.EP.TxCsumOffload+b.EP.TxTSO)
					}
					t.Logf("A: %v\nB: %v\nA: %s\nB: %s", a.EP, b.EP, gv(p.A.Stack), gv(p.B.Stack))
				})
			}
		}
	}
}

// TestFaults: the same transfers with simnic's fault schedule on both
// NICs (every kind of fault: frame errors, DMA faults, lost and spurious
// interrupts, TX hangs and lost write-backs that make iflib reset, link
// loss), in each TX mode, with frame errors dropped Linux-style or em's
// EBADMSG-and-reset. TCP recovers and the data arrive byte for byte; the
// counters of every layer account for every frame lost.
func TestFaults(t *testing.T) {
	seed := simnictest.Seed(t)
	prof := simnic.DefaultProfile()
	blob := Blob(transferSize(512<<10), 2)
	for i, c := range []struct {
		mode    iflib.TxMode
		errs    simnic.RxErrorStyle
		offload bool
	}{
		{iflib.TxModeMPRing, simnic.RxErrorsDiscard, false},
		{iflib.TxModeSimple, simnic.RxErrorsReset, true},
		{iflib.TxModeDRBR, simnic.RxErrorsDiscard, true},
		{iflib.TxModeMPRing, simnic.RxErrorsReset, true},
	} {
		t.Run(fmt.Sprintf("%s/errors=%d/offload=%v", c.mode, c.errs, c.offload), func(t *testing.T) {
			// A 50 ms timer (FreeBSD's is hz/2) finds hung queues and polls the
			// link ten times sooner, so a run of faults costs TCP seconds, not
			// minutes of RTO backoff.
			p := newPair(t, PairConfig{Offload: c.offload, Config: iflib.Config{TxMode: c.mode, TimerInterval: 50 * time.Millisecond},
				Faults: &prof, Seed: seed + uint64(2*i), RxErrors: c.errs})
			// TCP's time scale shrunk to match: the retransmission timer
			// bounded to [20 ms, 1 s] (gVisor: [200 ms, 120 s]) and 60
			// retransmissions of a segment before giving up (15), so the
			// run measures that TCP recovers and that every loss is
			// counted, not how long exponential backoff waits.
			// ARP likewise: gVisor fails a connection with "no route to
			// host" when a neighbour's probes go unanswered (3 unicast, 1 s
			// apart), which a run of link losses and em-style resets can
			// cause (seed 0xc9573beb9635a007 did); 30 probes ride it out.
			// (It also failed at once when a probe's write returned an
			// error, as the endpoint's did while the link was down or a
			// reset ran, seed 0xf31e4d3d948cf04: ifliblink now drops
			// those frames as a NIC without carrier does.)
			nud := stack.DefaultNUDConfigurations()
			nud.MaxUnicastProbes, nud.MaxMulticastProbes = 30, 30
			for _, s := range []*stack.Stack{p.A.Stack, p.B.Stack} {
				require.Nil(t, s.SetNUDConfigurations(NICID, ipv4.ProtocolNumber, nud))
				lo, hi, n := tcpip.TCPMinRTOOption(20*time.Millisecond), tcpip.TCPMaxRTOOption(time.Second), tcpip.TCPMaxRetriesOption(60)
				require.Nil(t, s.SetTransportProtocolOption(tcp.ProtocolNumber, &lo))
				require.Nil(t, s.SetTransportProtocolOption(tcp.ProtocolNumber, &hi))
				require.Nil(t, s.SetTransportProtocolOption(tcp.ProtocolNumber, &n))
			}
			serve(t, p, blob)
			// Gaps are drawn from [1, 2×mean] events, so with TSO (few
			// descriptors, few interrupts) one transfer may end before the
			// first fault is due (seed 0xc9573beb9635a007 did): transfer
			// again until the schedule has fired, at most eight times.
			var fired map[simnic.FaultKind]uint64
			for round := 0; round < 8 && len(fired) == 0; round++ {
				exchange(t, p, blob, 3*time.Minute)
				fired = p.A.NIC.Schedule().Counts()
				for k, n := range p.B.NIC.Schedule().Counts() {
					fired[k] += n
				}
			}
			a, b, err := p.Balanced(10*time.Second, 0, 0)
			require.NoError(t, err)
			t.Logf("faults fired: %s; resets %d + %d", simnic.FormatCounts(fired), p.A.Context().Resets(), p.B.Context().Resets())
			t.Logf("A→B losses: %s", Losses(a, b))
			t.Logf("B→A losses: %s", Losses(b, a))
			t.Logf("A: %s\nB: %s", gv(p.A.Stack), gv(p.B.Stack))
			assert.NotEmpty(t, fired, "the schedule fired")
		})
	}
}

// TestLRO: with the endpoint's LRO on, HTTP downloads, uploads to a sink
// and TCP echo (receivers that keep reading) move the blob byte for byte,
// the receivers merge segments, and no merged segment fails its
// checksum.
func TestLRO(t *testing.T) {
	blob := Blob(transferSize(256<<10), 4)
	for _, mode := range modes {
		for _, mtu := range []int{1500, 9000} {
			t.Run(fmt.Sprintf("%s/mtu=%d", mode, mtu), func(t *testing.T) {
				cfg := PairConfig{MTU: mtu, Config: iflib.Config{TxMode: mode}}
				cfg.Link.LRO = true
				p := newPair(t, cfg)
				sv := NewServer()
				require.NoError(t, sv.HTTP(p.B.Stack, p.B.Addr, "hello", blob))
				require.NoError(t, sv.Sink(p.B.Stack, p.B.Addr))
				require.NoError(t, sv.Echo(p.B.Stack, p.B.Addr))
				t.Cleanup(sv.Close)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				require.NoError(t, Echo(ctx, p.A.Stack, p.B.Addr, blob))
				// Merging needs two segments of a flow in one RX batch; on a
				// loaded machine (race detector, shared CPUs) the RX task
				// may take each frame as it comes for a whole transfer, so
				// transfer again (at most eight times) until each side merged.
				cl := HTTPClient(p.A.Stack)
				for round := 0; round < 8; round++ {
					if round > 0 && p.A.EP.Stats().RxCoalesced > 0 && p.B.EP.Stats().RxCoalesced > 0 {
						break
					}
					require.NoError(t, GetBlob(ctx, cl, p.B.Addr, blob))
					require.NoError(t, Sink(ctx, p.A.Stack, p.B.Addr, blob))
				}
				cl.CloseIdleConnections()
				a, b, err := p.Balanced(5*time.Second, 0, 0)
				require.NoError(t, err)
				assert.NotZero(t, a.EP.RxCoalesced, "A merged the download's segments")
				assert.NotZero(t, b.EP.RxCoalesced, "B merged the upload's segments")
				for _, s := range []*Side{p.A, p.B} {
					assert.Zero(t, s.Stack.Stats().TCP.ChecksumErrors.Value())
				}
				t.Logf("A: %v\nB: %v\nA: %s\nB: %s", a.EP, b.EP, gv(p.A.Stack), gv(p.B.Stack))
			})
		}
	}
}

// TestIPv6: TCP echo and HTTP over IPv6 between two stacks on two
// simnics, offloads off and on. simnic has no IPv6 checksum offload or
// TSO: with offloads on, the endpoint computes IPv6 TCP checksums itself
// and cuts gVisor's host-GSO IPv6 packets into segments (IPv4 ones still
// go to the device as TSO).
func TestIPv6(t *testing.T) {
	blob := Blob(transferSize(256<<10), 9)
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("offload=%v", off), func(t *testing.T) {
			p := newPair(t, PairConfig{Offload: off, IPv6: true})
			sv := NewServer()
			require.NoError(t, sv.Echo(p.B.Stack, p.B.Addr6))
			require.NoError(t, sv.HTTP(p.B.Stack, p.B.Addr6, "hello", blob))
			t.Cleanup(sv.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			require.NoError(t, Echo(ctx, p.A.Stack, p.B.Addr6, blob))
			cl := HTTPClient(p.A.Stack)
			require.NoError(t, GetBlob(ctx, cl, p.B.Addr6, blob))
			cl.CloseIdleConnections()
			a, b, err := p.Balanced(5*time.Second, 0, 0)
			require.NoError(t, err)
			for _, s := range []*Side{p.A, p.B} {
				assert.Zero(t, s.Stack.Stats().TCP.ChecksumErrors.Value())
			}
			if off {
				assert.NotZero(t, a.EP.TxSoftGSO+b.EP.TxSoftGSO, "IPv6 host GSO cut by the endpoint")
				assert.NotZero(t, a.EP.TxCsumSoftware+b.EP.TxCsumSoftware, "IPv6 checksums computed by the endpoint")
			}
			t.Logf("A: %v\nB: %v", a.EP, b.EP)
		})
	}
}

// TestOffloadWithoutTSO: checksum offload with TSO turned off at the
// endpoint: gVisor's own GSO hands bursts of segments whose checksums the
// device inserts.
func TestOffloadWithoutTSO(t *testing.T) {
	blob := Blob(transferSize(256<<10), 10)
	cfg := PairConfig{Offload: true}
	cfg.Link.NoTSO = true
	p := newPair(t, cfg)
	serve(t, p, blob)
	exchange(t, p, blob, 2*time.Minute)
	a, b, err := p.Balanced(5*time.Second, 0, 0)
	require.NoError(t, err)
	assert.Zero(t, a.EP.TxTSO+b.EP.TxTSO)
	assert.NotZero(t, a.EP.TxCsumOffload)
	assert.NotZero(t, b.EP.TxCsumOffload)
	for _, s := range []*Side{p.A, p.B} {
		assert.Zero(t, s.Stack.Stats().TCP.ChecksumErrors.Value())
	}
}
