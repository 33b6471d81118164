package simnic_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// newRig is simnictest.New with a recording peer when record is set.
func newRig(t testing.TB, o simnictest.Options, record bool) (*simnictest.Rig, *simnictest.Recorder) {
	t.Helper()
	var rec *simnictest.Recorder
	if record {
		rec = &simnictest.Recorder{}
		o.Peer = rec
	}
	return simnictest.New(t, o), rec
}

func fillFrame(data []byte, flow, seq uint32) {
	for i := range data {
		data[i] = byte(i*7 + int(seq))
	}
	if len(data) < 15 {
		return
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
			r, rec := newRig(t, simnictest.Options{Config: iflib.Config{TxMode: mode}}, true)
			rng := rand.New(rand.NewPCG(1, uint64(mode)))
			n := 1500
			if raceEnabled {
				n = 600
			}
			var want [][]byte
			for i := 0; i < n; i++ {
				data := make([]byte, 60+rng.IntN(1440))
				fillFrame(data, 0, uint32(i))
				nseg := 1 + rng.IntN(4)
				want = append(want, data)
				for {
					err := r.Ctx.Transmit(r.Packet(data, nseg))
					if err == nil {
						break
					}
					if err != iflib.ErrNoBufs {
						t.Fatalf("transmit %d: %v", i, err)
					}
					// mpring mode drops on a full ring: resend a fresh copy.
					runtime.Gosched()
				}
			}
			waitFor(t, "all frames on the wire", func() bool { return rec.Len() >= n })
			got := rec.Frames()
			if len(got) != n {
				t.Fatalf("got %d frames, want %d", len(got), n)
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("frame %d differs (len %d vs %d)", i, len(got[i]), len(want[i]))
				}
			}
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

func simnicSmall() simnic.Config { return simnic.Config{NRxd: 256, NTxd: 256} }
