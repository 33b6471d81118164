// Package seedbench holds the measurements that reproduce the founding
// review threads on the simulated NIC; the README's main job
// (examples/seeds) and the go test benchmarks both run them.
package seedbench

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
)

// Seed003FrameLen is the frame of seed 003's measurement: a 1342-byte UDP
// frame, built as a 42-byte header buffer plus a 1300-byte payload buffer.
const (
	Seed003FrameLen = 1342
	headerLen       = 42
)

// Seed003Paper is the seed's Gb/s at 1, 2, 4, 8, 16, 32 and 64 sending
// threads on one queue (shared/seeds/003).
var Seed003Paper = map[string][]float64{
	"mpring": {20, 44, 48, 35, 14, 7, 4},
	"simple": {44, 44, 44, 43, 40, 36, 32},
	"drbr":   {44, 90, 90, 86, 57, 50, 35},
}

// Seed003FanIns are the sender counts of the seed's table.
var Seed003FanIns = []int{1, 2, 4, 8, 16, 32, 64}

// TxModes are the modes of the seed 003 table, in its order.
var TxModes = []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR}

// TxResult is one cell: one mode at one fan-in.
type TxResult struct {
	Mode    iflib.TxMode
	Senders int
	Elapsed time.Duration
	Frames  uint64 // frames that reached the wire
	Drops   uint64 // transmits refused (mpring: full ring)
	NoPkt   uint64 // times a sender found its zone empty and waited
}

// PPS is frames per second on the wire.
func (r TxResult) PPS() float64 { return float64(r.Frames) / r.Elapsed.Seconds() }

// Gbps is the wire rate in Gb/s of 1342-byte frames.
func (r TxResult) Gbps() float64 { return r.PPS() * Seed003FrameLen * 8 / 1e9 }

// TxRig is one simnic on one TX queue with its wire ending in a sink.
type TxRig struct {
	NIC  *simnic.NIC
	Drv  *simnic.Driver
	Ctx  *iflib.Context
	Zone *iflib.Zone
	Sink *simnic.Sink
}

// NewTxRig builds a rig in the given transmit mode. chk may be nil.
func NewTxRig(mode iflib.TxMode, chk *busdma.Checker, zonePkts int) (*TxRig, error) {
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: (zonePkts*iflib.MCLBytes + 24<<20 + 0xfffff) &^ 0xfffff, ContigSize: 1 << 20})
	if err != nil {
		return nil, err
	}
	nic, err := simnic.New(space, simnic.Config{Checker: chk})
	if err != nil {
		return nil, err
	}
	r := &TxRig{NIC: nic, Sink: &simnic.Sink{}}
	nic.SetPeer(r.Sink)
	r.Drv, err = nic.Attach(iflib.Attachment{Config: iflib.Config{TxMode: mode, RxZoneSize: 1100}})
	if err != nil {
		return nil, err
	}
	r.Ctx = r.Drv.Context()
	if r.Zone, err = iflib.NewZone(space, "senders", iflib.MCLBytes, zonePkts); err != nil {
		return nil, err
	}
	return r, r.Ctx.Init()
}

// Close detaches the context and checks the books (no map loaded, every
// packet back in its zone).
func (r *TxRig) Close() error { return r.Drv.Teardown(r.Zone) }

// fillHeader writes an Ethernet/IPv4/UDP header for flow f.
func fillHeader(b []byte, flow uint32) {
	copy(b[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(b[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:14], 0x0800)
	b[14], b[15] = 0x45, 0
	binary.BigEndian.PutUint16(b[16:18], Seed003FrameLen-14)
	b[22], b[23] = 64, 17
	binary.BigEndian.PutUint32(b[26:30], 0x0a000001)
	binary.BigEndian.PutUint32(b[30:34], 0x0a000002+flow)
	binary.BigEndian.PutUint16(b[34:36], uint16(1024+flow))
	binary.BigEndian.PutUint16(b[36:38], 9)
	binary.BigEndian.PutUint16(b[38:40], Seed003FrameLen-34)
}

// RunSenders runs n goroutines sending for d; see run.
func (r *TxRig) RunSenders(n int, d time.Duration) TxResult { return r.run(n, d, 0) }

// RunCount runs n goroutines that together make total transmit attempts
// (for go test -bench, where b.N is the packet count).
func (r *TxRig) RunCount(n, total int) TxResult { return r.run(n, 0, int64(total)) }

// run runs n goroutines sending 1342-byte two-buffer frames through
// the rig for d, and returns what reached the wire. The payload bytes are
// whatever the recycled clusters hold: the measurement is of the
// framework, not of a memcpy of 1300 bytes per frame.
func (r *TxRig) run(n int, d time.Duration, total int64) TxResult {
	var stop atomic.Bool
	var budget atomic.Int64
	budget.Store(total)
	var drops, nopkt atomic.Uint64
	var wg sync.WaitGroup
	start0 := r.Sink.Frames()
	t0 := time.Now()
	for s := 0; s < n; s++ {
		wg.Add(1)
		go func(flow uint32) {
			defer wg.Done()
			cache := r.Zone.NewCache()
			defer cache.Flush()
			for !stop.Load() {
				if total > 0 && budget.Add(-1) < 0 {
					return
				}
				h, err := cache.Get()
				if err != nil {
					nopkt.Add(1)
					runtime.Gosched()
					continue
				}
				p, err := cache.Get()
				if err != nil {
					cache.Put(h)
					nopkt.Add(1)
					runtime.Gosched()
					continue
				}
				h.SetLen(headerLen)
				fillHeader(h.Bytes(), flow)
				p.SetLen(Seed003FrameLen - headerLen)
				h.Next = p
				h.Hdr.Len = Seed003FrameLen
				if err := r.Ctx.Transmit(h); err != nil {
					// ENOBUFS: a sender that gets an error yields, as a
					// socket writer would; spinning would starve the
					// device model, which shares these cores.
					drops.Add(1)
					runtime.Gosched()
				}
			}
		}(uint32(s))
	}
	var end uint64
	var el time.Duration
	if total > 0 {
		wg.Wait()
		// Count what the wire carried once the queue has drained.
		want := r.Ctx.Counter(iflib.IfCounterOPackets)
		for r.Sink.Frames() < want {
			runtime.Gosched()
		}
		end, el = r.Sink.Frames(), time.Since(t0)
	} else {
		time.Sleep(d)
		end, el = r.Sink.Frames(), time.Since(t0)
		stop.Store(true)
		wg.Wait()
	}
	return TxResult{Mode: r.Ctx.Config().TxMode, Senders: n, Elapsed: el,
		Frames: end - start0, Drops: drops.Load(), NoPkt: nopkt.Load()}
}

// Seed003 measures every mode at every fan-in, d per cell.
func Seed003(d time.Duration, fanIns []int, progress func(TxResult)) ([]TxResult, error) {
	var out []TxResult
	for _, mode := range TxModes {
		r, err := NewTxRig(mode, nil, 16384)
		if err != nil {
			return nil, err
		}
		for _, n := range fanIns {
			res := r.RunSenders(n, d)
			out = append(out, res)
			if progress != nil {
				progress(res)
			}
		}
		if err := r.Close(); err != nil {
			return nil, fmt.Errorf("seed003 %s: %w", mode, err)
		}
	}
	return out, nil
}
