package simnic_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/busdma/busdmatest"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
)

// rig is one simnic attached to iflib on a simulated address space with
// the busdma checker on, its wire ending in a recording sink.
type rig struct {
	t     testing.TB
	space busdma.Space
	nic   *simnic.NIC
	drv   *simnic.Driver
	ctx   *iflib.Context
	zone  *iflib.Zone
	sink  *simnic.Sink
	mu    sync.Mutex
	got   [][]byte
}

type rigOpts struct {
	mode   iflib.TxMode
	cfg    iflib.Config
	nic    simnic.Config
	sim    busdma.SimConfig
	record bool
	input  func(int, []*iflib.Packet)
	iommu  bool
	filter func(int, []byte) bool
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	chk := busdmatest.NewChecker(t)
	if o.sim.Size == 0 {
		o.sim.Size = 48 << 20
	}
	if o.sim.ContigSize == 0 {
		o.sim.ContigSize = 1 << 20
	}
	var space busdma.Space
	var err error
	if o.iommu {
		space, err = busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: o.sim})
	} else {
		space, err = busdma.NewSimSpace(o.sim)
	}
	if err != nil {
		t.Fatal(err)
	}
	o.nic.Checker = chk
	nic, err := simnic.New(space, o.nic)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, space: space, nic: nic, sink: &simnic.Sink{}}
	if o.record {
		r.sink.Inspect = func(f []byte) {
			r.mu.Lock()
			r.got = append(r.got, bytes.Clone(f))
			r.mu.Unlock()
		}
	}
	nic.SetPeer(r.sink)
	o.cfg.TxMode = o.mode
	if o.cfg.RxZoneSize == 0 {
		o.cfg.RxZoneSize = 2048 + 512
	}
	r.drv, err = nic.Attach(iflib.Attachment{Config: o.cfg, Input: o.input, RxFilter: o.filter})
	if err != nil {
		t.Fatal(err)
	}
	r.ctx = r.drv.Context()
	r.zone, err = iflib.NewZone(space, "tx", iflib.MCLBytes, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ctx.Init(); err != nil {
		t.Fatal(err)
	}
	return r
}

// close detaches and checks that nothing leaked: every packet back in its
// zone, no map loaded.
func (r *rig) close() {
	r.t.Helper()
	if err := r.drv.Teardown(r.zone); err != nil {
		r.t.Fatal(err)
	}
}

// frame builds a packet chain: a 42-byte Ethernet/IPv4/UDP header buffer
// plus payload buffers, carrying (flow, seq) in the payload.
func (r *rig) frame(flow, seq uint32, size, nseg int) *iflib.Packet {
	r.t.Helper()
	data := make([]byte, size)
	fillFrame(data, flow, seq)
	return r.chain(data, nseg)
}

func fillFrame(data []byte, flow, seq uint32) {
	for i := range data {
		data[i] = byte(i*7 + int(seq))
	}
	copy(data[0:6], []byte{2, 0, 0, 0, 0, 2})
	copy(data[6:12], []byte{2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(data[12:14], 0x0800)
	data[14] = 0x45
	if len(data) >= 50 {
		binary.BigEndian.PutUint32(data[42:46], flow)
		binary.BigEndian.PutUint32(data[46:50], seq)
	}
}

// chain splits data over nseg buffers of the rig's zone.
func (r *rig) chain(data []byte, nseg int) *iflib.Packet {
	var head, tail *iflib.Packet
	per := (len(data) + nseg - 1) / nseg
	for off := 0; off < len(data); off += per {
		p, err := r.zone.Get()
		if err != nil {
			r.t.Fatal(err)
		}
		p.Append(data[off:min(off+per, len(data))])
		if head == nil {
			head = p
		} else {
			tail.Next = p
		}
		tail = p
	}
	head.Hdr.Len = len(data)
	return head
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

func TestTransmitEveryModeByteIdentical(t *testing.T) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		t.Run(mode.String(), func(t *testing.T) {
			r := newRig(t, rigOpts{mode: mode, record: true})
			rng := rand.New(rand.NewPCG(1, uint64(mode)))
			const n = 1500
			var want [][]byte
			for i := 0; i < n; i++ {
				size := 60 + rng.IntN(1440)
				nseg := 1 + rng.IntN(4)
				m := r.frame(0, uint32(i), size, nseg)
				want = append(want, bytes.Clone(flatten(m)))
				for {
					err := r.ctx.Transmit(m)
					if err == nil {
						break
					}
					if err != iflib.ErrNoBufs {
						t.Fatalf("transmit %d: %v", i, err)
					}
					// mpring mode drops on a full ring: resend a fresh copy.
					runtime.Gosched()
					m = r.chain(want[i], nseg)
				}
			}
			waitFor(t, "all frames on the wire", func() bool { return r.sink.Frames() >= n })
			r.mu.Lock()
			got := r.got
			r.mu.Unlock()
			if len(got) != n {
				t.Fatalf("got %d frames, want %d", len(got), n)
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("frame %d differs (len %d vs %d)", i, len(got[i]), len(want[i]))
				}
			}
			r.close()
		})
	}
}

func flatten(m *iflib.Packet) []byte {
	var b []byte
	for p := m; p != nil; p = p.Next {
		b = append(b, p.Bytes()...)
	}
	return b
}
