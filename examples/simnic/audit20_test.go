package simnic_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
)

// Issue 20's closed-objects class (docs/edges.md): a closed raw forwarder
// refuses Start and a second Close with ErrRawClosed, and its Stop and
// Stats stay harmless; a generator that was stopped refuses a new Start
// with ErrGenStarted and its Stop and Wait return at once.
func TestClosedRawForwarderAndStoppedGenerator(t *testing.T) {
	env := simnictest.NewEnv(t, simnictest.EnvOptions{Sim: busdma.SimConfig{Size: 16 << 20, ContigSize: 1 << 20}})
	a, err := env.NewNIC(simnic.Config{Name: "clsa", NTxd: 64, NRxd: 64})
	require.NoError(t, err)
	b, err := env.NewNIC(simnic.Config{Name: "clsb", NTxd: 64, NRxd: 64})
	require.NoError(t, err)
	b.SetPeer(&simnic.Sink{})
	fwd, err := env.NewRawForwarder(a, b, simnic.RawConfig{})
	require.NoError(t, err)
	require.NoError(t, fwd.Start())
	err = fwd.Start()
	require.ErrorIs(t, err, simnic.ErrRawBusy, "second Start: %v, want ErrRawBusy", err)
	require.NoError(t, fwd.Close())
	err = fwd.Close()
	require.ErrorIs(t, err, simnic.ErrRawClosed, "second Close: %v, want ErrRawClosed", err)
	err = fwd.Start()
	require.ErrorIs(t, err, simnic.ErrRawClosed, "Start after Close: %v, want ErrRawClosed", err)
	bounded(t, "Stop after Close", 5*time.Second, fwd.Stop)
	_ = fwd.Stats()

	g := &simnic.Generator{Next: func(uint64, []byte) int { return 60 }}
	require.NoError(t, g.Start(a))
	bounded(t, "Generator.Stop", 5*time.Second, func() { _ = g.Stop() })
	err = g.Start(a)
	require.ErrorIs(t, err, simnic.ErrGenStarted, "Start after Stop: %v, want ErrGenStarted", err)
	bounded(t, "second Stop and Wait", 5*time.Second, func() {
		assert.NoError(t, g.Stop(), "second Stop")
		assert.NoError(t, g.Wait(), "Wait after Stop")
	})
}
