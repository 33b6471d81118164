package busdma

import (
	"fmt"
	"sync"

	"github.com/goiflib/goiflib/internal/callsite"
)

// ReportKind classifies a checker report. The classes are the DMA misuses
// review D17901 found in iflib.
type ReportKind uint8

const (
	// KindLoadLoaded: bus_dmamap_load of a map that is still loaded (the
	// small-packet path re-loading a cluster it never unloaded).
	KindLoadLoaded ReportKind = iota + 1
	// KindUnloadUnloaded: bus_dmamap_unload of a map that is not loaded.
	KindUnloadUnloaded
	// KindDestroyLoaded: bus_dmamap_destroy of a loaded map.
	KindDestroyLoaded
	// KindLeak: a map still loaded when the device is closed (missing unload).
	KindLeak
	// KindOutsideMapping: a device access outside every current mapping of
	// the device (a pmap_kextract address posted instead of a busdma one).
	KindOutsideMapping
	// KindNoPreWrite: the device read data the CPU wrote without a PREWRITE
	// sync since (or never synced since the load).
	KindNoPreWrite
	// KindNoPostRead: data the device wrote was dropped or re-posted before
	// the CPU synced it with POSTREAD (the CPU read stale memory).
	KindNoPostRead
	// KindIOMMUFault: the IOMMU faulted a device access (DMAR fault).
	KindIOMMUFault
	// KindClient: misuse found by a layer above busdma and filed with
	// Checker.Add (iflib: a packet used after it was freed).
	KindClient
)

var kindNames = [...]string{"", "load-of-loaded-map", "unload-of-unloaded-map", "destroy-of-loaded-map",
	"map-leaked-at-teardown", "device-access-outside-mapping", "device-read-without-PREWRITE",
	"device-data-without-POSTREAD", "iommu-fault", "client-misuse"}

func (k ReportKind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "unknown"
}

// Report is one misuse found by a [Checker].
type Report struct {
	Kind   ReportKind
	Device string
	Map    string // "<tag>#<id>", empty for accesses outside any map
	Site   string // file:line of the offending call, outside this package
	Msg    string
}

func (r Report) String() string {
	m := r.Map
	if m == "" {
		m = r.Device
	}
	return fmt.Sprintf("busdma checker: %s: %s at %s: %s", r.Kind, m, r.Site, r.Msg)
}

// Checker records DMA misuse of the devices it is attached to
// (DeviceConfig.Checker). It makes every checked map model a non-coherent
// machine: the device sees a copy of the CPU buffer ("memory") that PREWRITE
// refreshes and POSTREAD copies device-written bytes back from, so a missing
// sync both changes the data the other side sees and is reported:
//
//   - a device read of a map not PREWRITE-synced since its load, or of bytes
//     the CPU changed after the last PREWRITE (KindNoPreWrite);
//   - device-written bytes still staged (never POSTREAD) when the map is
//     unloaded or re-posted with PREREAD alone (KindNoPostRead). PREREAD
//     together with PREWRITE is a ring sync (iflib_txd_db_check) and may
//     legally leave write-backs pending; a later PREWRITE never overwrites
//     bytes the device wrote.
//
// Device accesses outside every current mapping fail with ErrFault. A
// Checker may serve several devices and is safe for concurrent use; its own
// state is guarded by mu. The busdmatest package wires one to a testing.TB.
type Checker struct {
	mu      sync.Mutex
	reports []Report // guarded by mu
	// OnReport, if set before use, is called for each report (without locks
	// held by the checker, but possibly with the device's checker lock held:
	// it must not call back into busdma).
	OnReport func(Report)
}

// NewChecker returns an empty checker.
func NewChecker() *Checker { return &Checker{} }

// Reports returns a copy of all reports so far.
func (c *Checker) Reports() []Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Report(nil), c.reports...)
}

// Count returns how many reports of kind k were made.
func (c *Checker) Count(k ReportKind) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.reports {
		if r.Kind == k {
			n++
		}
	}
	return n
}

// Reset forgets all reports.
func (c *Checker) Reset() {
	c.mu.Lock()
	c.reports = nil
	c.mu.Unlock()
}

// Add files a report found by a client of the checked devices, such as
// iflib's packet zones; its Kind should be KindClient. It reaches Reports
// and OnReport like the checker's own.
func (c *Checker) Add(r Report) { c.add(r) }

func (c *Checker) add(r Report) {
	c.mu.Lock()
	c.reports = append(c.reports, r)
	f := c.OnReport
	c.mu.Unlock()
	if f != nil {
		f(r)
	}
}

// callSite is the first caller outside this package.
func callSite() string { return callsite.Outside("github.com/goiflib/goiflib/busdma") }

// report files a report about m (nil for device-level reports).
func (d *Device) report(k ReportKind, m *Map, format string, args ...any) {
	if d.chk == nil {
		return
	}
	r := Report{Kind: k, Device: d.name, Site: callSite(), Msg: fmt.Sprintf(format, args...)}
	if m != nil {
		r.Map = m.Name()
	}
	d.chk.add(r)
}
