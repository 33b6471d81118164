package busdma

import (
	"sync"
	"sync/atomic"
)

// DeviceConfig configures a [Device].
type DeviceConfig struct {
	Name    string   // device name in reports, e.g. "ixl0"; default "dev"
	Checker *Checker // nil: no checking (the production setting)
}

// Device is the requester of DMA: a PCI function with its requester ID. Its
// root tag is bus_get_dma_tag(dev); under an IOMMU it owns a domain
// (dmar_ctx). Read and Write are the device's side of DMA.
//
// Device methods are safe for concurrent use, with one exception: the
// teardown checks LoadedMaps, CheckLeaks and Close read every map's state
// without synchronisation, so they must not run while a goroutine loads,
// unloads or destroys maps of the device (stop the queues first, as
// iflib_stop does before iflib_tx_structures_free). That is the price of a
// hot path without locked instructions: a map's state belongs to its owner,
// and no device-wide counter is updated per Load and Unload. Read and Write
// are typically called from a device goroutine while CPU goroutines load and
// unload maps.
type Device struct {
	name  string
	space Space
	be    backend
	root  *Tag
	chk   *Checker
	creg  *devCheck    // non-nil iff chk != nil
	dom   *iommuDomain // IOMMU spaces only

	closed atomic.Bool   // written once by Close; read (a plain load on amd64/arm64) by every Load
	nmaps  atomic.Uint64 // map ids
	ntags  atomic.Uint64 // tag name suffixes

	mu   sync.Mutex // guards maps
	maps []*Map     // every map created and not destroyed; maps[m.idx] == m
}

// NewDevice attaches a device to an address space.
func NewDevice(s Space, cfg DeviceConfig) (*Device, error) {
	if s == nil {
		return nil, badArg("NewDevice(s)", nil, "nil address space")
	}
	if cfg.Name == "" {
		cfg.Name = "dev"
	}
	d := &Device{name: cfg.Name, space: s, be: s.backend(), chk: cfg.Checker}
	if d.chk != nil {
		d.creg = newDevCheck()
	}
	d.root = newRootTag(d)
	if err := d.be.attach(d); err != nil {
		return nil, err
	}
	return d, nil
}

// Name returns the device name.
func (d *Device) Name() string { return d.name }

// Space returns the device's address space.
func (d *Device) Space() Space { return d.space }

// Tag is bus_get_dma_tag(dev): the root of the device's tags, with no
// restrictions of its own.
func (d *Device) Tag() *Tag { return d.root }

// Checker returns the device's checker, or nil.
func (d *Device) Checker() *Checker { return d.chk }

// LoadedMaps returns the number of maps currently loaded. It is a teardown
// check: see [Device] for when it may run.
func (d *Device) LoadedMaps() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, m := range d.maps {
		if m.state == mapLoaded {
			n++
		}
	}
	return n
}

// CheckLeaks is the leak check of Close without closing: nil when no map of
// the device is loaded, else a *LeakError (ErrLeak) naming them. A framework
// that owns some of a device's maps (iflib's queues) runs it at its own
// teardown. It is a teardown check: see [Device] for when it may run.
func (d *Device) CheckLeaks() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var e *LeakError
	for _, m := range d.maps {
		if m.state != mapLoaded {
			continue
		}
		if e == nil {
			e = &LeakError{Device: d.name}
		}
		e.Maps++
		if len(e.Names) < maxLeakNames {
			e.Names = append(e.Names, m.Name())
		}
	}
	if e == nil {
		return nil
	}
	return e
}

// register and unregister keep the device's list of maps (CreateMap,
// Destroy).
func (d *Device) register(m *Map) {
	d.mu.Lock()
	m.idx = len(d.maps)
	d.maps = append(d.maps, m)
	d.mu.Unlock()
}

func (d *Device) unregisterMap(m *Map) {
	d.mu.Lock()
	last := d.maps[len(d.maps)-1]
	d.maps[m.idx] = last
	last.idx = m.idx
	d.maps[len(d.maps)-1] = nil
	d.maps = d.maps[:len(d.maps)-1]
	d.mu.Unlock()
}

// Read is a device-side DMA read of len(p) bytes at bus address addr,
// through the space (IOMMU translation, bounce pages). It returns ErrFault
// for an address that is not backed, not mapped in the IOMMU, or — with a
// checker — outside every current mapping of this device.
func (d *Device) Read(addr BusAddr, p []byte) error {
	return d.dma(addr, p, false)
}

// Write is a device-side DMA write of p at bus address addr.
func (d *Device) Write(addr BusAddr, p []byte) error {
	return d.dma(addr, p, true)
}

func (d *Device) dma(addr BusAddr, p []byte, write bool) error {
	if len(p) == 0 {
		return nil
	}
	if d.closed.Load() {
		return ErrClosed
	}
	if addr+BusAddr(len(p)-1) < addr {
		return ErrFault
	}
	if d.creg != nil {
		return d.checkedAccess(addr, p, write)
	}
	return d.be.access(d, addr, p, write)
}

// Close tears the device down. Maps still loaded are a leak: Close returns
// a *LeakError (ErrLeak), and a checker reports each such map. A second
// Close returns ErrClosed. It is a teardown check: see [Device] for when it
// may run.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return ErrClosed
	}
	err := d.CheckLeaks()
	if d.creg != nil {
		d.creg.mu.Lock()
		for m := range d.creg.maps {
			d.report(KindLeak, m, "map still loaded at device teardown (missing bus_dmamap_unload)")
		}
		d.creg.mu.Unlock()
	}
	d.be.detach(d)
	return err
}
