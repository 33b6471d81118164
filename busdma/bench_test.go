package busdma_test

import (
	"strconv"
	"testing"

	"github.com/goiflib/goiflib/busdma"
)

type benchSpace struct {
	name string
	s    busdma.Space
	low  busdma.BusAddr
	chk  bool
}

func benchSpaces(b *testing.B) []benchSpace {
	b.Helper()
	must := func(s busdma.Space, err error) busdma.Space {
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	out := []benchSpace{
		{"sim", must(busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})), 0, false},
		{"sim-checker", must(busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})), 0, true},
		{"bounce", must(busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20, Layout: busdma.LayoutHigh})), busdma.MaxAddr32, false},
		{"iommu", must(busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: busdma.SimConfig{Size: 1 << 20}})), 0, false},
		{"iommu-cost500", must(busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: busdma.SimConfig{Size: 1 << 20}, MapCost: 500, UnmapCost: 500})), 0, false},
		{"identity", must(busdma.NewIdentitySpace(make([]byte, 1<<20))), 0, false},
	}
	if pm, err := busdma.NewPagemapSpaceConfig(busdma.PagemapConfig{Size: 1 << 20, SmallPages: true}); err == nil {
		b.Cleanup(func() { _ = pm.Close() })
		out = append(out, benchSpace{"pagemap-4k", pm, 0, false})
	}
	return out
}

// BenchmarkLoadSyncUnload is one TX packet's busdma work in iflib_encap and
// iflib_tx_desc_free: load, PREWRITE, POSTWRITE, unload.
func BenchmarkLoadSyncUnload(b *testing.B) {
	for _, sp := range benchSpaces(b) {
		for _, n := range []int{64, 1500} {
			b.Run(sp.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				var c *busdma.Checker
				if sp.chk {
					c = busdma.NewChecker()
				}
				d, err := busdma.NewDevice(sp.s, busdma.DeviceConfig{Name: "bench", Checker: c})
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				tag := mustTag(b, d.Tag(), busdma.TagConfig{LowAddr: sp.low, MaxSize: 65536, NSegments: 32, MaxSegSize: 65536})
				m := mustMap(b, tag)
				buf := mustAlloc(b, sp.s, 2048, 2048)[:n]
				segs := make([]busdma.Segment, 0, 32)
				var before busdma.IOMMUStats
				io, isIOMMU := sp.s.(*busdma.IOMMUSpace)
				if isIOMMU {
					before = io.Stats()
				}
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					segs, err = m.Load(buf, segs[:0])
					if err != nil {
						b.Fatal(err)
					}
					m.Sync(busdma.PreWrite)
					m.Sync(busdma.PostWrite)
					if err := m.Unload(); err != nil {
						b.Fatal(err)
					}
				}
				if isIOMMU {
					st := io.Stats()
					b.ReportMetric(float64(st.Maps-before.Maps)/float64(b.N), "maps/pkt")
					b.ReportMetric(float64(st.Unmaps-before.Unmaps)/float64(b.N), "unmaps/pkt")
					b.ReportMetric(float64(st.PagesMapped-before.PagesMapped)/float64(b.N), "ptes/pkt")
				}
			})
		}
	}
}

// BenchmarkDeviceRead is the simulated NIC's per-packet DMA: one device read
// of a loaded buffer (TX) through the space's translation.
func BenchmarkDeviceRead(b *testing.B) {
	for _, sp := range benchSpaces(b) {
		for _, n := range []int{64, 1500} {
			b.Run(sp.name+"/"+strconv.Itoa(n), func(b *testing.B) {
				var c *busdma.Checker
				if sp.chk {
					c = busdma.NewChecker()
				}
				d, err := busdma.NewDevice(sp.s, busdma.DeviceConfig{Name: "bench", Checker: c})
				if err != nil {
					b.Fatal(err)
				}
				defer d.Close()
				tag := mustTag(b, d.Tag(), busdma.TagConfig{LowAddr: sp.low, MaxSize: 65536, NSegments: 32, MaxSegSize: 65536})
				m := mustMap(b, tag)
				buf := mustAlloc(b, sp.s, 2048, 2048)[:n]
				segs, err := m.Load(buf, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer m.Unload()
				m.Sync(busdma.PreWrite)
				p := make([]byte, n)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if err := d.Read(segs[0].Addr, p); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
			})
		}
	}
}
