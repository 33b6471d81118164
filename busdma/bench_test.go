package busdma_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/internal/cputime"
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
		require.NoError(b, err)
		return s
	}
	out := []benchSpace{
		{"sim", must(busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})), 0, false},
		{"sim-checker", must(busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})), 0, true},
		{"bounce", must(busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20, Layout: busdma.LayoutHigh})), busdma.MaxAddr32, false},
		{"iommu", must(busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: busdma.SimConfig{Size: 1 << 20}})), 0, false},
		{"iommu-strict", must(busdma.NewIOMMUSpace(busdma.IOMMUConfig{Sim: busdma.SimConfig{Size: 1 << 20}, UnmapTime: busdma.StrictUnmapTime})), 0, false},
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
				require.NoError(b, err)
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
					if err != nil { // no testify call per iteration: the timed loop stays bare
						require.NoError(b, err)
					}
					m.Sync(busdma.PreWrite)
					m.Sync(busdma.PostWrite)
					if err := m.Unload(); err != nil { // no testify call per iteration
						require.NoError(b, err)
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
				require.NoError(b, err)
				defer d.Close()
				tag := mustTag(b, d.Tag(), busdma.TagConfig{LowAddr: sp.low, MaxSize: 65536, NSegments: 32, MaxSegSize: 65536})
				m := mustMap(b, tag)
				buf := mustAlloc(b, sp.s, 2048, 2048)[:n]
				segs, err := m.Load(buf, nil)
				require.NoError(b, err)
				defer m.Unload()
				m.Sync(busdma.PreWrite)
				p := make([]byte, n)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if err := d.Read(segs[0].Addr, p); err != nil { // no testify call per iteration
						require.NoError(b, err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
			})
		}
	}
}

// BenchmarkMapOps is the per-packet busdma work of iflib's hot path, one
// operation at a time, on the plain simulated space (no bounce, no IOMMU,
// no checker: the production setting), beside a hand-written baseline:
//
//	raw        what a driver without busdma does: look the buffer's bus
//	           address up and write one segment (pmap_kextract)
//	load       Map.Load + Map.Unload of one 1500-byte buffer (iflib_encap
//	           and iflib_tx_desc_free; the pair, since a map must be
//	           unloaded before it is loaded again)
//	loadmulti  Map.LoadMulti + Map.Unload of a 3-buffer chain
//	sync       Map.Sync(PREWRITE) of a loaded map (a no-op without bounce
//	           pages: the check that decides so)
func BenchmarkMapOps(b *testing.B) {
	s, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(b, err)
	d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "bench"})
	require.NoError(b, err)
	defer d.Close()
	tag := mustTag(b, d.Tag(), busdma.TagConfig{MaxSize: 65536, NSegments: 32, MaxSegSize: 65536})
	m := mustMap(b, tag)
	buf := mustAlloc(b, s, 2048, 2048)[:1500]
	chain := [][]byte{buf[:64], buf[64:1000], buf[1000:]}
	segs := make([]busdma.Segment, 0, 32)
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pa, ok := s.PhysAddr(buf)
			if !ok { // no testify call per iteration
				require.True(b, ok, "not in space")
			}
			segs = append(segs[:0], busdma.Segment{Addr: pa, Len: len(buf)})
		}
	})
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			segs, err = m.Load(buf, segs[:0])
			if err != nil { // no testify call per iteration: the timed loop stays bare
				require.NoError(b, err)
			}
			if err := m.Unload(); err != nil { // no testify call per iteration
				require.NoError(b, err)
			}
		}
	})
	b.Run("loadmulti", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			segs, err = m.LoadMulti(chain, segs[:0])
			if err != nil { // no testify call per iteration: the timed loop stays bare
				require.NoError(b, err)
			}
			if err := m.Unload(); err != nil { // no testify call per iteration
				require.NoError(b, err)
			}
		}
	})
	b.Run("sync", func(b *testing.B) {
		segs, err = m.Load(buf, segs[:0])
		require.NoError(b, err)
		b.ReportAllocs()
		for b.Loop() {
			m.Sync(busdma.PreWrite)
		}
		require.NoError(b, m.Unload())
	})
}

// BenchmarkIOMMUCost is one TX packet's load and unload under the IOMMU
// model without added cost and with the suggested StrictUnmapTime, so the
// difference shows what UnmapTime costs per packet in wall and CPU time.
func BenchmarkIOMMUCost(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  busdma.IOMMUConfig
	}{
		{"none", busdma.IOMMUConfig{}},
		{"strict-unmap-700ns", busdma.IOMMUConfig{UnmapTime: busdma.StrictUnmapTime}},
		{"map-1us-unmap-700ns", busdma.IOMMUConfig{MapTime: time.Microsecond, UnmapTime: busdma.StrictUnmapTime}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.cfg.Sim = busdma.SimConfig{Size: 1 << 20}
			s, err := busdma.NewIOMMUSpace(c.cfg)
			require.NoError(b, err)
			d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "bench"})
			require.NoError(b, err)
			defer d.Close()
			m := mustMap(b, mustTag(b, d.Tag(), busdma.TagConfig{MaxSize: 65536, NSegments: 32, MaxSegSize: 65536}))
			buf := mustAlloc(b, s, 2048, 2048)[:1500]
			segs := make([]busdma.Segment, 0, 32)
			b.ReportAllocs()
			cpu0 := cputime.Process()
			for b.Loop() {
				segs, err = m.Load(buf, segs[:0])
				if err != nil { // no testify call per iteration: the timed loop stays bare
					require.NoError(b, err)
				}
				if err := m.Unload(); err != nil { // no testify call per iteration
					require.NoError(b, err)
				}
			}
			if cputime.Supported {
				b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

// BenchmarkMapRing is a TX queue's map traffic: 1024 maps, one per
// descriptor, each loading a different 64-byte packet in its own 2 KiB
// cluster and unloaded 512 loads later (the descriptors in flight), so each
// map and cluster is as cold as a TX ring leaves it. One op is one Load
// (LoadMulti of a one-buffer chain, as iflib_encap's) and one Unload.
//
//	go test -run '^$' -bench MapRing ./busdma/
func BenchmarkMapRing(b *testing.B) {
	const n, lag = 1024, 512
	s, err := busdma.NewSimSpace(busdma.SimConfig{Size: 4 << 20, Layout: busdma.LayoutScattered})
	require.NoError(b, err)
	d, err := busdma.NewDevice(s, busdma.DeviceConfig{Name: "bench"})
	require.NoError(b, err)
	defer d.Close()
	tag := mustTag(b, d.Tag(), busdma.TagConfig{MaxSize: 65536, NSegments: 32, MaxSegSize: 4096})
	maps := make([]*busdma.Map, n)
	chains := make([][][]byte, n)
	for i := range maps {
		maps[i] = mustMap(b, tag)
		chains[i] = [][]byte{mustAlloc(b, s, 2048, 2048)[:64]}
	}
	segs := make([]busdma.Segment, 0, 32)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if segs, err = maps[i%n].LoadMulti(chains[i%n], segs[:0]); err != nil { // no testify call per iteration
			require.NoError(b, err)
		}
		if i >= lag {
			if err := maps[(i-lag)%n].Unload(); err != nil { // no testify call per iteration
				require.NoError(b, err)
			}
		}
		i++
	}
	b.StopTimer()
	for j := max(0, i-lag); j < i; j++ {
		require.NoError(b, maps[j%n].Unload())
	}
}
