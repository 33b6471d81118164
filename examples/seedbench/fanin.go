// Package seedbench holds the measurements that reproduce the founding
// FreeBSD review threads on the simulated NIC (examples/simnic): the
// transmit fan-in of "simple_tx with drbr deferral", and forwarding for
// D17901 (ifsd_ba reuse), D24094 (queue placement), D53674 (transmit
// prefetch) and D27755 (batched input). The README's main job
// (examples/seeds) and the go test benchmarks both run them; docs/seeds.md
// describes each review and how it is measured here.
//
// Every measurement reports the process's CPU time per packet
// (internal/cputime: getrusage, every goroutine of the process, the
// simulated devices and the generator included) next to its rate, measured
// over the same window, and the involuntary context switches of that window
// (how often the OS took a CPU from the process: a load indicator). CPU per
// packet moves less than a rate when other processes take a share of the
// CPUs, but it does move: beside two busy loops by about 6 % for forwarding
// and by up to 40 % for the transmit rig (docs/seeds.md, "Load").
package seedbench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/cputime"
)

// FanInFrameLen is the frame of the "simple_tx with drbr deferral"
// measurement: a 1342-byte UDP frame, built as a 42-byte header buffer
// plus a 1300-byte payload buffer ("separate headers, so as to give encap
// work to do").
const (
	FanInFrameLen = 1342
	headerLen     = 42
)

// FreeBSDFanInGbps is FreeBSD's Gb/s in the "simple_tx with drbr deferral"
// review at 1, 2, 4, 8, 16, 32 and 64 sending threads on one queue (a
// 96-core AMD Turin with a 400G bnxt NIC, the worst of three runs).
var FreeBSDFanInGbps = map[string][]float64{
	"mpring": {20, 44, 48, 35, 14, 7, 4},
	"simple": {44, 44, 44, 43, 40, 36, 32},
	"drbr":   {44, 90, 90, 86, 57, 50, 35},
}

// FanIns are the sender counts of that table.
var FanIns = []int{1, 2, 4, 8, 16, 32, 64}

// TxModes are the modes of that table, in its order.
var TxModes = []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR}

// ErrTxOpts is returned for options the transmit rig cannot use.
var ErrTxOpts = errors.New("seedbench: bad transmit rig options")

// TxOptions configures a TxRig. The zero value works: mp_ring mode,
// 1342-byte two-buffer frames.
type TxOptions struct {
	// Config is iflib's configuration (TxMode, Prefetch, ...).
	Config iflib.Config
	// FrameLen is the frame length; default FanInFrameLen. Frames are a
	// 42-byte header buffer plus a payload buffer, at most 2048 bytes.
	FrameLen int
	// ZonePkts is the senders' packet zone; default 16384 (enough for the
	// software ring, the descriptor ring and every sender's cache).
	ZonePkts int
	// Checker turns on busdma's DMA checker (Close reports its findings).
	Checker bool
}

// TxResult is one cell: one mode at one fan-in.
type TxResult struct {
	Mode     iflib.TxMode
	Senders  int
	FrameLen int
	Elapsed  time.Duration
	CPU      time.Duration // process CPU time (user+system) over the window
	// InvolSwitches is the process's involuntary context switches over
	// the window (ru_nivcsw): a load indicator.
	InvolSwitches uint64
	Frames        uint64 // frames that reached the wire
	Attempts      uint64 // Transmit calls
	Drops         uint64 // Transmit calls refused (ENOBUFS; the packet was freed)
	NoPkt         uint64 // times a sender found its zone empty and yielded
}

// PPS is frames per second on the wire.
func (r TxResult) PPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Frames) / r.Elapsed.Seconds()
}

// Gbps is the wire rate in Gb/s of the rig's frames (without preamble,
// gap and FCS, as a packet generator counts).
func (r TxResult) Gbps() float64 { return r.PPS() * float64(r.FrameLen) * 8 / 1e9 }

// CPUNsPerPkt is the process's CPU time per frame on the wire, in ns:
// the senders', iflib's and the simulated device's together.
func (r TxResult) CPUNsPerPkt() float64 {
	return float64(r.CPU.Nanoseconds()) / float64(max(r.Frames, 1))
}

// DropPct is the share of Transmit calls refused, in percent. drbr mode
// never refuses: a sender that finds the buf_ring full waits instead.
func (r TxResult) DropPct() float64 {
	return 100 * float64(r.Drops) / float64(max(r.Attempts, 1))
}

// CPUsBusy is CPU time over elapsed time: how many CPUs the process kept
// busy on average during the window (Mpps × cpu-ns/pkt / 1000).
func (r TxResult) CPUsBusy() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return r.CPU.Seconds() / r.Elapsed.Seconds()
}

// Plus adds two windows of the same mode and fan-in: a measurement made
// of several slices.
func (r TxResult) Plus(o TxResult) TxResult {
	r.Elapsed += o.Elapsed
	r.CPU += o.CPU
	r.InvolSwitches += o.InvolSwitches
	r.Frames += o.Frames
	r.Attempts += o.Attempts
	r.Drops += o.Drops
	r.NoPkt += o.NoPkt
	if r.FrameLen == 0 {
		r.Mode, r.Senders, r.FrameLen = o.Mode, o.Senders, o.FrameLen
	}
	return r
}

// TxRig is one simnic on one TX queue with its wire ending in a sink,
// built on a simnictest.Env whose Close checks every leak.
type TxRig struct {
	Env  *simnictest.Env
	NIC  *simnic.NIC
	Drv  *simnic.Driver
	Ctx  *iflib.Context
	Zone *iflib.Zone
	Sink *simnic.Sink

	frameLen int
	// accepted is every Transmit call that did not fail, over the rig's
	// life: what the wire must carry once the rig is quiet.
	accepted atomic.Uint64
}

// Quiet reports whether every packet Transmit accepted has reached the
// wire: nothing of the last run is left in the software ring or on the
// descriptor ring.
func (r *TxRig) Quiet() bool { return r.Sink.Frames() >= r.accepted.Load() }

// WaitQuiet waits up to limit for Quiet, polling every 100 µs, and reports
// whether the rig became quiet: after a run, so that what it left queued
// is not sent (and its CPU counted) in the next rig's window.
func (r *TxRig) WaitQuiet(limit time.Duration) bool {
	for deadline := time.Now().Add(limit); !r.Quiet(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// NewTxRig builds a rig and starts its context.
func NewTxRig(o TxOptions) (r *TxRig, err error) {
	if o.FrameLen == 0 {
		o.FrameLen = FanInFrameLen
	}
	if o.ZonePkts == 0 {
		o.ZonePkts = 16384
	}
	if o.FrameLen <= headerLen || o.FrameLen-headerLen > iflib.MCLBytes || o.ZonePkts < 64 {
		return nil, fmt.Errorf("%w: FrameLen %d (want %d..%d), ZonePkts %d (want ≥ 64)",
			ErrTxOpts, o.FrameLen, headerLen+1, headerLen+iflib.MCLBytes, o.ZonePkts)
	}
	env, err := simnictest.Open(simnictest.EnvOptions{
		Sim:       busdma.SimConfig{Size: (o.ZonePkts*iflib.MCLBytes + 24<<20 + 0xfffff) &^ 0xfffff, ContigSize: 1 << 20},
		NoChecker: !o.Checker,
	})
	if err != nil {
		return nil, err
	}
	r = &TxRig{Env: env, Sink: &simnic.Sink{}, frameLen: o.FrameLen}
	defer func() {
		if err != nil {
			err = errors.Join(err, env.Close())
			r = nil
		}
	}()
	if r.NIC, err = env.NewNIC(simnic.Config{}); err != nil {
		return r, err
	}
	r.NIC.SetPeer(r.Sink)
	cfg := o.Config
	if cfg.RxZoneSize == 0 {
		cfg.RxZoneSize = 1100 // nothing is received
	}
	if r.Drv, err = env.Attach(r.NIC, iflib.Attachment{Config: cfg}); err != nil {
		return r, err
	}
	r.Ctx = r.Drv.Context()
	if r.Zone, err = env.NewZone("senders", iflib.MCLBytes, o.ZonePkts); err != nil {
		return r, err
	}
	return r, r.Ctx.Init()
}

// Close tears the rig down and checks the books (simnictest.Env.Close: no
// map loaded, every packet back in its zone, no goroutine left).
func (r *TxRig) Close() error { return r.Env.Close() }

// putHeader writes the Ethernet/IPv4/UDP header (headerLen bytes) of a
// frame of size bytes into b: from 10.0.0.1 port 1024+flow to dst port 9,
// with the IP identification and both checksums zero.
func putHeader(b []byte, size int, dst, flow uint32) {
	copy(b[0:6], []byte{2, 0, 0, 0, 0, 0xb})
	copy(b[6:12], []byte{2, 0, 0, 0, 0, 0xa})
	binary.BigEndian.PutUint16(b[12:14], 0x0800)
	b[14], b[15] = 0x45, 0
	binary.BigEndian.PutUint16(b[16:18], uint16(size-14))
	binary.BigEndian.PutUint32(b[18:22], 0)
	b[22], b[23] = 64, 17
	binary.BigEndian.PutUint16(b[24:26], 0)
	binary.BigEndian.PutUint32(b[26:30], 0x0a000001)
	binary.BigEndian.PutUint32(b[30:34], dst)
	binary.BigEndian.PutUint16(b[34:36], uint16(1024+flow))
	binary.BigEndian.PutUint16(b[36:38], 9)
	binary.BigEndian.PutUint16(b[38:40], uint16(size-34))
	binary.BigEndian.PutUint16(b[40:42], 0)
}

// RunSenders runs n goroutines sending for d; see run.
func (r *TxRig) RunSenders(n int, d time.Duration) TxResult { return r.run(n, 0, d, 0) }

// RunSendersWarm is RunSenders with the senders running for warm before
// the measuring window of d begins.
func (r *TxRig) RunSendersWarm(n int, warm, d time.Duration) TxResult { return r.run(n, warm, d, 0) }

// RunCount runs n goroutines that together make exactly total Transmit
// calls (for go test -bench, where b.N is the packet count).
func (r *TxRig) RunCount(n, total int) TxResult { return r.run(n, 0, 0, int64(total)) }

// senderStats are one sender's counters, each on its own cache line so
// that senders do not contend; the measuring goroutine reads them.
type senderStats struct {
	attempts, drops, nopkt atomic.Uint64
	_                      [40]byte
}

func sum(ss []senderStats) (attempts, drops, nopkt uint64) {
	for i := range ss {
		attempts += ss[i].attempts.Load()
		drops += ss[i].drops.Load()
		nopkt += ss[i].nopkt.Load()
	}
	return
}

// run runs n goroutines sending two-buffer frames through the rig: for
// warm, then for a measuring window of d (or, with total > 0, until
// total Transmit calls), and returns what the window put on the wire
// and the CPU time the process spent meanwhile. The payload bytes are
// whatever the recycled clusters hold: the measurement is of the
// framework, not of a memcpy per frame.
func (r *TxRig) run(n int, warm, d time.Duration, total int64) TxResult {
	var stop atomic.Bool
	var budget atomic.Int64
	budget.Store(total)
	stats := make([]senderStats, n)
	var wg sync.WaitGroup
	size := r.frameLen
	var a0, d0, n0, start0 uint64
	var t0 time.Time
	var u0 cputime.Usage
	mark := func() {
		a0, d0, n0 = sum(stats)
		start0 = r.Sink.Frames()
		t0, u0 = time.Now(), cputime.Read()
	}
	if warm <= 0 {
		mark()
	}
	for s := 0; s < n; s++ {
		wg.Add(1)
		go func(st *senderStats, flow uint32) {
			defer wg.Done()
			cache := r.Zone.NewCache()
			defer cache.Flush()
			for !stop.Load() {
				h, err := cache.Get()
				if err != nil {
					st.nopkt.Add(1)
					runtime.Gosched()
					continue
				}
				p, err := cache.Get()
				if err != nil {
					cache.Put(h)
					st.nopkt.Add(1)
					runtime.Gosched()
					continue
				}
				if total > 0 && budget.Add(-1) < 0 {
					cache.Put(p)
					cache.Put(h)
					return
				}
				h.SetLen(headerLen)
				putHeader(h.Bytes(), size, 0x0a000002+flow, flow)
				p.SetLen(size - headerLen)
				h.Next = p
				h.Hdr.Len = size
				st.attempts.Add(1)
				if err := r.Ctx.Transmit(h); err != nil {
					// ENOBUFS: a sender that gets an error yields, as a
					// socket writer would; spinning would starve the
					// device model, which shares these cores.
					st.drops.Add(1)
					runtime.Gosched()
				}
			}
		}(&stats[s], uint32(s))
	}
	if warm > 0 {
		time.Sleep(warm)
		mark()
	}
	if total > 0 {
		wg.Wait()
		// Count what the wire carried once every accepted packet is
		// there (drbr may still hold some in its buf_ring), or after a
		// generous limit.
		a, dr, _ := sum(stats)
		want := start0 + a - dr
		for limit := time.Now().Add(10 * time.Second); r.Sink.Frames() < want && time.Now().Before(limit); {
			time.Sleep(20 * time.Microsecond)
		}
	} else {
		time.Sleep(d)
	}
	end, el, u1 := r.Sink.Frames(), time.Since(t0), cputime.Read()
	a1, d1, n1 := sum(stats)
	stop.Store(true)
	wg.Wait()
	a2, d2, _ := sum(stats)
	r.accepted.Add(a2 - d2)
	return TxResult{Mode: r.Ctx.Config().TxMode, Senders: n, FrameLen: size, Elapsed: el, CPU: u1.CPU - u0.CPU,
		InvolSwitches: u1.InvolSwitches - u0.InvolSwitches,
		Frames:        end - start0, Attempts: a1 - a0, Drops: d1 - d0, NoPkt: n1 - n0}
}
