package simnic_test

import (
	"errors"
	"testing"
	"time"

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
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.NewNIC(simnic.Config{Name: "clsb", NTxd: 64, NRxd: 64})
	if err != nil {
		t.Fatal(err)
	}
	b.SetPeer(&simnic.Sink{})
	fwd, err := env.NewRawForwarder(a, b, simnic.RawConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fwd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := fwd.Start(); !errors.Is(err, simnic.ErrRawBusy) {
		t.Fatalf("second Start: %v, want ErrRawBusy", err)
	}
	if err := fwd.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fwd.Close(); !errors.Is(err, simnic.ErrRawClosed) {
		t.Fatalf("second Close: %v, want ErrRawClosed", err)
	}
	if err := fwd.Start(); !errors.Is(err, simnic.ErrRawClosed) {
		t.Fatalf("Start after Close: %v, want ErrRawClosed", err)
	}
	bounded(t, "Stop after Close", 5*time.Second, fwd.Stop)
	_ = fwd.Stats()

	g := &simnic.Generator{Next: func(uint64, []byte) int { return 60 }}
	if err := g.Start(a); err != nil {
		t.Fatal(err)
	}
	bounded(t, "Generator.Stop", 5*time.Second, func() { _ = g.Stop() })
	if err := g.Start(a); !errors.Is(err, simnic.ErrGenStarted) {
		t.Fatalf("Start after Stop: %v, want ErrGenStarted", err)
	}
	bounded(t, "second Stop and Wait", 5*time.Second, func() {
		if err := g.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
		if err := g.Wait(); err != nil {
			t.Errorf("Wait after Stop: %v", err)
		}
	})
}
