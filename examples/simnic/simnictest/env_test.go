package simnictest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// A clean rig tears down without a complaint, and a second Close says so.
func TestRigCleanTeardown(t *testing.T) {
	r := simnictest.New(t, simnictest.Options{NIC: simnic.Config{NTxd: 256, NRxd: 256}})
	for i := 0; i < 100; i++ {
		data := make([]byte, 60+i)
		copy(data[12:], []byte{0x08, 0x00, 0x45})
		require.NoError(t, r.Ctx.Transmit(r.Packet(data, 1+i%3)))
	}
	testutil.Eventually(t, "100 frames on the wire", func() bool { return r.Sink.Frames() >= 100 })
	require.NoError(t, r.Env.Close())
	err := r.Env.Close()
	require.ErrorIs(t, err, simnictest.ErrClosed, "second Close: %v, want ErrClosed", err)
}

// Close reports what a test leaves behind: a packet not back in its zone,
// a map still loaded, a goroutine still running.
func TestEnvCloseFindsLeaks(t *testing.T) {
	e, err := simnictest.Open(simnictest.EnvOptions{GoroutineGrace: 50 * time.Millisecond})
	require.NoError(t, err)
	nic, err := e.NewNIC(simnic.Config{NTxd: 64, NRxd: 64})
	require.NoError(t, err)
	d, err := e.Attach(nic, iflib.Attachment{Config: iflib.Config{RxZoneSize: 200}})
	require.NoError(t, err)
	require.NoError(t, d.Context().Init())
	z, err := e.NewZone("leaky", iflib.MCLBytes, 8)
	require.NoError(t, err)
	// never freed
	_, err = z.Get()
	require.NoError(t, err)
	tag, err := busdma.NewTag(nic.Bus().Tag(), busdma.TagConfig{Alignment: 1, MaxSize: 4096, NSegments: 1, MaxSegSize: 4096})
	require.NoError(t, err)
	m, err := tag.CreateMap()
	require.NoError(t, err)
	mem, _ := e.Space.Alloc(100, 1)
	// never unloaded
	_, err = m.Load(mem, nil)
	require.NoError(t, err)
	stop := make(chan struct{})
	go func() { <-stop }() // still running at Close
	err = e.Close()
	close(stop)
	require.Error(t, err, "Close found nothing")
	for _, want := range []string{"zone leaky: 7 of 8", "maps loaded after teardown", "map-leaked-at-teardown", "goroutine group(s) still running"} {
		assert.Contains(t, err.Error(), want, "Close's error lacks %q:\n%v", want, err)
	}
	assert.False(t, strings.Count(err.Error(), "goroutine group") != 1 || strings.Contains(err.Error(), "iflib."), "the goroutine report should name only the test's goroutine:\n%v", err)
}

// FrameSpec.Build at its edges: a negative Len is an empty frame, and a
// frame too short for the MAC addresses gets no VLAN tag (nor 4 bytes of
// whatever buf held).
func TestFrameSpecEdges(t *testing.T) {
	f := (simnictest.FrameSpec{Len: -5, VLAN: 7}).Build(nil)
	require.Empty(t, f, "Len -5: %d bytes", len(f))
	buf := []byte{9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	f = (simnictest.FrameSpec{Len: 5, VLAN: 7}).Build(buf)
	require.Len(t, f, 5, "Len 5 with a VLAN: %d bytes, want 5", len(f))
	f = (simnictest.FrameSpec{Len: 60, VLAN: 7}).Build(nil)
	require.Len(t, f, 64, "Len 60 with a VLAN: %d bytes, want 64", len(f))
}
