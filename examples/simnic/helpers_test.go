package simnic_test

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// Helpers shared by simnic's tests.

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

func flatten(m *iflib.Packet) []byte {
	var b []byte
	for p := m; p != nil; p = p.Next {
		b = append(b, p.Bytes()...)
	}
	return b
}
