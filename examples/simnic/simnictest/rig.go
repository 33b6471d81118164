package simnictest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
)

// Options configure a [Rig]. The zero value works: one simnic with
// 1024-descriptor rings attached to iflib in mp_ring mode, initialised,
// its wire ending in the rig's Sink.
type Options struct {
	Env EnvOptions
	NIC simnic.Config
	// Config is iflib's; RxZoneSize defaults to 2 × NRxd + 512 here, a
	// smaller zone than iflib's default, to keep rigs light.
	Config        iflib.Config
	Input         func(ic *iflib.Context, qid int, pkts []*iflib.Packet) // Attachment.Input
	RxFilter      func(qid int, frame []byte) bool
	TxQueueSelect func(m *iflib.Packet) int
	// TxZone is the number of clusters in the rig's TX zone (0: 4096;
	// negative: no TX zone); TxZoneClusterSize their size (0: MCLBYTES).
	TxZone            int
	TxZoneClusterSize int
	// Peer is where the NIC's wire ends (nil: the rig's Sink).
	Peer simnic.Endpoint
	// NoInit leaves the context attached but not initialised.
	NoInit bool
}

// Rig is one simnic attached to iflib in its own Env.
type Rig struct {
	*Env
	TB     testing.TB
	NIC    *simnic.NIC
	Driver *simnic.Driver
	Ctx    *iflib.Context
	TxZone *iflib.Zone  // nil with Options.TxZone < 0
	Sink   *simnic.Sink // the default peer (counts what reaches the wire)
}

// New builds a Rig; everything is torn down and checked at tb's cleanup
// (or earlier by Close).
func New(tb testing.TB, o Options) *Rig {
	tb.Helper()
	r := &Rig{Env: NewEnv(tb, o.Env), TB: tb, Sink: &simnic.Sink{}}
	var err error
	if r.NIC, err = r.NewNIC(o.NIC); err != nil {
		tb.Fatal(err)
	}
	peer := o.Peer
	if peer == nil {
		peer = r.Sink
	}
	r.NIC.SetPeer(peer)
	cfg := o.Config
	if cfg.RxZoneSize == 0 {
		cfg.RxZoneSize = 2*r.NIC.Config().NRxd + 512
	}
	r.Driver, err = r.Attach(r.NIC, iflib.Attachment{Config: cfg, Input: o.Input, RxFilter: o.RxFilter, TxQueueSelect: o.TxQueueSelect})
	if err != nil {
		tb.Fatal(err)
	}
	r.Ctx = r.Driver.Context()
	if o.TxZone >= 0 {
		n, size := o.TxZone, o.TxZoneClusterSize
		if n == 0 {
			n = 4096
		}
		if size == 0 {
			size = iflib.MCLBytes
		}
		if r.TxZone, err = r.NewZone("tx", size, n); err != nil {
			tb.Fatal(err)
		}
	}
	if !o.NoInit {
		if err := r.Ctx.Init(); err != nil {
			tb.Fatal(err)
		}
	}
	return r
}

// Close tears the rig down now and reports every problem with tb.Error
// (the cleanup then has nothing left to do).
func (r *Rig) Close() {
	r.TB.Helper()
	if err := r.Env.Close(); err != nil {
		r.TB.Error(err)
	}
}

// Packet builds a packet chain from the rig's TX zone holding data split
// over nseg buffers (at least one; more when a part does not fit a
// cluster), with Hdr.Len set: iflib's Zone.GetChain (m_getm2) with the
// part size. It fails the test if the zone is empty.
func (r *Rig) Packet(data []byte, nseg int) *iflib.Packet {
	r.TB.Helper()
	m, err := r.TxZone.GetChain(data, PartLen(len(data), nseg))
	if err != nil {
		r.TB.Fatal(err)
	}
	return m
}

// PartLen is the buffer length that spreads n bytes over nseg buffers
// (at least one byte a buffer; nseg below 1 counts as 1): the bufLen for
// iflib's Zone.GetChain that gives an nseg-buffer chain when each part
// fits a cluster.
func PartLen(n, nseg int) int {
	nseg = max(nseg, 1)
	return max((n+nseg-1)/nseg, 1)
}

// Recorder is an endpoint that keeps a copy of every frame it receives. It
// never refuses a frame.
type Recorder struct {
	mu     sync.Mutex
	frames [][]byte
}

// Receive records a copy of frame.
func (r *Recorder) Receive(frame []byte) bool {
	c := bytes.Clone(frame)
	r.mu.Lock()
	r.frames = append(r.frames, c)
	r.mu.Unlock()
	return true
}

// Frames returns the frames received so far (the slice is a copy; the
// frames are shared).
func (r *Recorder) Frames() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.frames...)
}

// Len returns how many frames were received.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames)
}
