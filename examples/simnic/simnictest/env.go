// Package simnictest builds test rigs on the simulated NIC, as
// net/http/httptest does for HTTP servers and wireguard-go's tuntest for
// TUN devices: an address space with busdma's checker on, NICs, iflib
// contexts attached through simnic's driver, packet zones, generators and
// raw forwarders, and one teardown that checks everything they leave
// behind.
//
// An [Env] is the space and everything built on it. [Env.Close] tears it
// all down, in the order that works when packets cross NICs (generators,
// then raw forwarders, then every iflib context, then the books), and
// returns every problem it finds, joined:
//
//   - the error of each context's Detach (iflib's own leak check);
//   - a tracked zone with packets not back in it;
//   - a NIC with busdma maps still loaded, or whose bus device reports a
//     leak at Close;
//   - every busdma checker report;
//   - IOMMU faults, unless EnvOptions.AllowIOMMUFaults;
//   - a goroutine started under the Env (by Attach, Init, a generator, a
//     forwarder, or the test itself) still running after a grace period.
//
// The goroutine check uses profiler labels: NewEnv and Open label the
// calling goroutine, and every goroutine it starts afterwards inherits the
// label (runtime/pprof.SetGoroutineLabels). One Env per goroutine at a
// time; Close clears the label.
//
// [New] is the common case: one NIC attached to iflib, initialised, its
// wire ending in a [simnic.Sink], and a TX packet zone.
//
// For seeded tests, [Seed] reads SIMNIC_SEED (or draws a seed) and, when
// the test fails, prints the seed and the command that replays it. For
// traffic, [FrameSpec] builds Ethernet/IPv4/UDP or TCP frames stamped with
// a (flow, seq) and a payload derived from it, with valid checksums or
// seeded for checksum offload, and [Parse] and [VerifyCsum] check what
// arrives; [Recorder] keeps what reaches a wire.
package simnictest

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
)

// EnvOptions configure an [Env]. The zero value works.
type EnvOptions struct {
	// Space, if set, is the address space to build on instead of a new
	// one (Sim and IOMMU are then ignored; an *busdma.IOMMUSpace is the
	// Env's IOMMU): a caller that runs many short Envs (a fuzzer) reuses
	// one. It must hold nothing (Allocated 0); Close checks the books as
	// usual and leaves the space to the caller.
	Space busdma.Space
	// Sim is the simulated physical memory; zero fields take busdma's
	// defaults, except Size (default 64 MiB) and ContigSize (default
	// 2 MiB), sized for a few NICs with 1024-descriptor rings.
	Sim busdma.SimConfig
	// IOMMU puts the memory behind busdma's IOMMU model, with this CPU
	// time per map and unmap (see busdma.IOMMUConfig).
	IOMMU              bool
	MapTime, UnmapTime time.Duration
	// AllowIOMMUFaults keeps Close from failing on IOMMU faults (a test
	// that injects them counts them itself).
	AllowIOMMUFaults bool
	// NoChecker runs without busdma's checker (benchmarks measure the
	// production setting). Tests keep it on.
	NoChecker bool
	// GoroutineGrace is how long Close waits for the Env's goroutines to
	// end; default 5 s.
	GoroutineGrace time.Duration
}

// ErrClosed is returned by an Env used after Close.
var ErrClosed = errors.New("simnictest: environment closed")

// Env is an address space and everything built on it for one test.
// Its methods are safe for concurrent use.
type Env struct {
	Space   busdma.Space
	IOMMU   *busdma.IOMMUSpace // nil without EnvOptions.IOMMU
	Checker *busdma.Checker    // nil with EnvOptions.NoChecker

	opts  EnvOptions
	label string

	mu      sync.Mutex
	closed  bool
	nics    []*simnic.NIC
	drivers []*simnic.Driver
	zones   []*iflib.Zone
	gens    []*simnic.Generator
	raws    []*simnic.RawForwarder
}

var envIDs atomic.Uint64

// Open builds an Env without a testing.TB (for commands and benchmarks
// that are not tests). The caller must Close it.
func Open(o EnvOptions) (*Env, error) {
	sim := o.Sim
	if sim.Size == 0 {
		sim.Size = 64 << 20
	}
	if sim.ContigSize == 0 {
		sim.ContigSize = 2 << 20
	}
	if o.GoroutineGrace <= 0 {
		o.GoroutineGrace = 5 * time.Second
	}
	e := &Env{opts: o, label: strconv.FormatUint(envIDs.Add(1), 10)}
	var err error
	switch {
	case o.Space != nil:
		if a := o.Space.Allocated(); a != 0 {
			return nil, fmt.Errorf("simnictest: EnvOptions.Space holds %d bytes already", a)
		}
		e.Space = o.Space
		e.IOMMU, _ = o.Space.(*busdma.IOMMUSpace)
	case o.IOMMU:
		e.IOMMU, err = busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: sim, MapTime: o.MapTime, UnmapTime: o.UnmapTime})
		e.Space = e.IOMMU
	default:
		e.Space, err = busdma.NewSimSpace(sim)
	}
	if err != nil {
		return nil, fmt.Errorf("simnictest: address space: %w", err)
	}
	if !o.NoChecker {
		e.Checker = busdma.NewChecker()
	}
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(labelKey, e.label)))
	return e, nil
}

// NewEnv is Open for a test: it fails tb if the Env cannot be built and
// closes the Env at cleanup, reporting every problem Close finds with
// tb.Error.
func NewEnv(tb testing.TB, o EnvOptions) *Env {
	tb.Helper()
	e, err := Open(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := e.Close(); err != nil && !errors.Is(err, ErrClosed) {
			tb.Error(err)
		}
	})
	return e
}

func (e *Env) add(f func()) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	f()
	return nil
}

// NewNIC creates a NIC on the Env's space with the Env's checker. Close
// closes its bus device and checks that no map is left loaded.
func (e *Env) NewNIC(cfg simnic.Config) (*simnic.NIC, error) {
	if cfg.Checker == nil {
		cfg.Checker = e.Checker
	}
	n, err := simnic.New(e.Space, cfg)
	if err != nil {
		return nil, err
	}
	if err := e.add(func() { e.nics = append(e.nics, n) }); err != nil {
		_ = n.Bus().Close()
		return nil, err
	}
	return n, nil
}

// Attach attaches nic to iflib through simnic's driver (NIC.Attach).
// Close detaches the context if the test did not.
func (e *Env) Attach(nic *simnic.NIC, a iflib.Attachment) (*simnic.Driver, error) {
	return e.AttachWith(nic, a, nil)
}

// AttachWith is Attach through simnic.NIC.AttachWith: wrap puts a Device
// between iflib and simnic's driver. Close detaches the context likewise.
func (e *Env) AttachWith(nic *simnic.NIC, a iflib.Attachment, wrap func(d *simnic.Driver, sh *iflib.SharedCtx) iflib.Device) (*simnic.Driver, error) {
	d, err := nic.AttachWith(a, wrap)
	if err != nil {
		return nil, err
	}
	if err := e.add(func() { e.drivers = append(e.drivers, d) }); err != nil {
		_ = d.Context().Detach()
		return nil, err
	}
	return d, nil
}

// NewZone creates a packet zone on the Env's space. Close checks that
// every packet is back in it.
func (e *Env) NewZone(name string, clusterSize, count int) (*iflib.Zone, error) {
	z, err := iflib.NewZone(e.Space, name, clusterSize, count)
	if err != nil {
		return nil, err
	}
	return z, e.add(func() { e.zones = append(e.zones, z) })
}

// Start starts g into dst; Close stops it first of all.
func (e *Env) Start(g *simnic.Generator, dst simnic.Endpoint) error {
	if err := e.add(func() { e.gens = append(e.gens, g) }); err != nil {
		return err
	}
	return g.Start(dst)
}

// NewRawForwarder builds a raw forwarder from rx's wire to tx's (see
// simnic.NewRawForwarder); Close closes it and reports its error.
func (e *Env) NewRawForwarder(rx, tx *simnic.NIC, cfg simnic.RawConfig) (*simnic.RawForwarder, error) {
	f, err := simnic.NewRawForwarder(rx, tx, cfg)
	if err != nil {
		return nil, err
	}
	if err := e.add(func() { e.raws = append(e.raws, f) }); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// Close tears the Env down and checks the books (see the package doc).
// It returns every problem found, joined; a second Close returns
// ErrClosed.
func (e *Env) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	e.closed = true
	gens, raws, drivers, zones, nics := e.gens, e.raws, e.drivers, e.zones, e.nics
	e.mu.Unlock()

	var errs []error
	for _, g := range gens {
		if err := g.Stop(); err != nil && !errors.Is(err, simnic.ErrGenNotStarted) {
			errs = append(errs, err)
		}
	}
	for _, f := range raws {
		if err := f.Close(); err != nil && !errors.Is(err, simnic.ErrRawClosed) {
			errs = append(errs, err)
		}
	}
	// Detach every context before checking any zone: forwarded packets
	// belong to another NIC's context.
	for _, d := range drivers {
		if err := d.Context().Detach(); err != nil && !alreadyDetached(err) {
			errs = append(errs, fmt.Errorf("simnictest: %s: Detach: %w", d.Context().Name(), err))
		}
	}
	for _, z := range zones {
		if a, s := z.Available(), z.Size(); a != s {
			errs = append(errs, fmt.Errorf("simnictest: zone %s: %d of %d packets back", z.Name(), a, s))
		}
	}
	for _, n := range nics {
		if l := n.Bus().LoadedMaps(); l != 0 {
			errs = append(errs, fmt.Errorf("simnictest: %s: %d maps loaded after teardown", n.Bus().Name(), l))
		}
		if err := n.Bus().Close(); err != nil && !errors.Is(err, busdma.ErrClosed) {
			errs = append(errs, fmt.Errorf("simnictest: %s: %w", n.Bus().Name(), err))
		}
	}
	if e.Checker != nil {
		for _, r := range e.Checker.Reports() {
			errs = append(errs, errors.New(r.String()))
		}
	}
	if e.IOMMU != nil && !e.opts.AllowIOMMUFaults {
		if f := e.IOMMU.Stats().Faults; f != 0 {
			errs = append(errs, fmt.Errorf("simnictest: %d IOMMU faults: %v", f, e.IOMMU.Faults()))
		}
	}
	if err := waitGoroutines(e.label, e.opts.GoroutineGrace); err != nil {
		errs = append(errs, err)
	}
	pprof.SetGoroutineLabels(context.Background())
	return errors.Join(errs...)
}

// alreadyDetached reports whether Detach failed only because the test
// detached the context itself.
func alreadyDetached(err error) bool { return errors.Is(err, iflib.ErrDetached) }
