package simnic_test

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// recvRecorder is an input callback that keeps a copy of every packet
// (flattened) and frees it.
type recvRecorder struct {
	mu   sync.Mutex
	got  [][]byte
	bufs []int
}

func (r *recvRecorder) input(_ int, pkts []*iflib.Packet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range pkts {
		r.got = append(r.got, flatten(m))
		r.bufs = append(r.bufs, m.NumBufs())
		if m.Hdr.Len != m.ChainLen() {
			r.got = append(r.got, nil) // makes the count check fail loudly
		}
		m.Free()
	}
}

func (r *recvRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func frameOf(size int, seq uint32) []byte {
	b := make([]byte, size)
	fillFrame(b, 1, seq)
	if size >= 50 {
		binary.BigEndian.PutUint32(b[46:50], seq)
	}
	return b
}

func TestReceiveEveryPacketOnceIntact(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"around-copy-thresh", []int{60, 64, 100, 127, 128, 129, 130, 200}},
		{"jumbo-multifrag", []int{1500, 2048, 2049, 4000, 9000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recvRecorder{}
			r, _ := newRig(t, simnictest.Options{Input: rec.input}, false)
			n := 1500
			if raceEnabled {
				n = 600
			}
			var want [][]byte
			for i := 0; i < n; i++ {
				f := frameOf(tc.sizes[i%len(tc.sizes)], uint32(i))
				want = append(want, f)
				for !r.NIC.Receive(f) {
					waitFor(t, "fifo room", func() bool { return true })
				}
			}
			waitFor(t, "all frames received", func() bool { return rec.count() >= n })
			rec.mu.Lock()
			got := rec.got
			rec.mu.Unlock()
			if len(got) != n {
				t.Fatalf("received %d, want %d", len(got), n)
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("packet %d differs: len %d vs %d", i, len(got[i]), len(want[i]))
				}
			}
		})
	}
}
