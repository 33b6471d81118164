package simnictest_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
)

// A clean rig tears down without a complaint, and a second Close says so.
func TestRigCleanTeardown(t *testing.T) {
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 256, NRxd: 256}})
	for i := 0; i < 100; i++ {
		data := make([]byte, 60+i)
		copy(data[12:], []byte{0x08, 0x00, 0x45})
		if err := r.Ctx.Transmit(r.Packet(data, 1+i%3)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for r.Sink.Frames() < 100 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := r.Env.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Env.Close(); !errors.Is(err, simnictest.ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
}

// Close reports what a test leaves behind: a packet not back in its zone,
// a map still loaded, a goroutine still running.
func TestEnvCloseFindsLeaks(t *testing.T) {
	e, err := simnictest.Open(simnictest.EnvOptions{GoroutineGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	nic, err := e.NewNIC(simnic.Config{NTxd: 64, NRxd: 64})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Attach(nic, iflib.Attachment{Config: iflib.Config{RxZoneSize: 200}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Context().Init(); err != nil {
		t.Fatal(err)
	}
	z, err := e.NewZone("leaky", iflib.MCLBytes, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := z.Get(); err != nil { // never freed
		t.Fatal(err)
	}
	tag, err := busdma.NewTag(nic.Bus().Tag(), busdma.TagConfig{Alignment: 1, MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	m, err := tag.CreateMap()
	if err != nil {
		t.Fatal(err)
	}
	mem, _ := e.Space.Alloc(100, 1)
	if _, err := m.Load(mem, nil); err != nil { // never unloaded
		t.Fatal(err)
	}
	stop := make(chan struct{})
	go func() { <-stop }() // still running at Close
	err = e.Close()
	close(stop)
	if err == nil {
		t.Fatal("Close found nothing")
	}
	for _, want := range []string{"zone leaky: 7 of 8", "maps loaded after teardown", "map-leaked-at-teardown", "goroutine group(s) still running"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Close's error lacks %q:\n%v", want, err)
		}
	}
	if strings.Count(err.Error(), "goroutine group") != 1 || strings.Contains(err.Error(), "iflib.") {
		t.Errorf("the goroutine report should name only the test's goroutine:\n%v", err)
	}
}

// FrameSpec.Build at its edges: a negative Len is an empty frame, and a
// frame too short for the MAC addresses gets no VLAN tag (nor 4 bytes of
// whatever buf held).
func TestFrameSpecEdges(t *testing.T) {
	if f := (simnictest.FrameSpec{Len: -5, VLAN: 7}).Build(nil); len(f) != 0 {
		t.Fatalf("Len -5: %d bytes", len(f))
	}
	buf := []byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	if f := (simnictest.FrameSpec{Len: 5, VLAN: 7}).Build(buf); len(f) != 5 {
		t.Fatalf("Len 5 with a VLAN: %d bytes, want 5", len(f))
	}
	if f := (simnictest.FrameSpec{Len: 60, VLAN: 7}).Build(nil); len(f) != 64 {
		t.Fatalf("Len 60 with a VLAN: %d bytes, want 64", len(f))
	}
}
