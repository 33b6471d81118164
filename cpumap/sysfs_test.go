package cpumap

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixture(t testing.TB, name string) *Topology {
	t.Helper()
	tp, err := ParseSysfs(os.DirFS("testdata/sysfs/" + name))
	require.NoError(t, err, "ParseSysfs(%s)", name)
	return tp
}

func neighbours(tp *Topology) []int {
	var out []int
	for _, c := range tp.CPUs() {
		out = append(out, tp.L2Neighbor(c.ID))
	}
	return out
}

func TestFixtures(t *testing.T) {
	cases := []struct {
		name              string
		cpus, cores, pkgs int
		smt, cache        bool
		intr              CPUSet
		neighbours        []int
		sameAs            *SyntheticConfig
		lineSize          int
	}{
		// Captured from the 2-vCPU build VM: no cache directories.
		{"vm2", 2, 2, 1, true, false, CPUSetOf(0, 1), []int{-1, -1}, nil, defaultLineSize},
		{"desktop-4c8t", 8, 4, 1, true, true, CPUSetOf(0, 1, 2, 3), []int{4, 5, 6, 7, 0, 1, 2, 3},
			&SyntheticConfig{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: 2, SiblingNumbering: Interleaved}, 64},
		{"atom-c2758", 8, 8, 1, true, true, CPUSetOf(0, 1, 2, 3, 4, 5, 6, 7), []int{1, 0, 3, 2, 5, 4, 7, 6},
			&SyntheticConfig{Packages: 1, CoresPerPackage: 8, ThreadsPerCore: 1, L2CoresPerGroup: 2}, 64},
		{"hybrid-6p4e", 16, 10, 1, true, true, CPUSetOf(0, 2, 4, 6, 8, 10, 12, 13, 14, 15),
			[]int{1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 12, 12}, nil, 64},
		{"server-2s", 32, 16, 2, true, true, CPUSetOf(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
			[]int{16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, nil, 64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := fixture(t, c.name)
			assert.False(t, tp.NumCPUs() != c.cpus || tp.NumCores() != c.cores || tp.NumPackages() != c.pkgs, "counts %d/%d/%d, want %d/%d/%d", tp.NumCPUs(), tp.NumCores(), tp.NumPackages(), c.cpus, c.cores, c.pkgs)
			assert.False(t, tp.SMTKnown() != c.smt || tp.CacheKnown() != c.cache || tp.CacheLineSize() != c.lineSize || tp.Source() != "sysfs", "smt %v cache %v line %d source %s", tp.SMTKnown(), tp.CacheKnown(), tp.CacheLineSize(), tp.Source())
			intr, phys := tp.IntrCPUs()
			assert.False(t, intr != c.intr || !phys, "IntrCPUs = %s %v, want %s true", intr, phys, c.intr)
			checkCPUs(t, "L2 neighbours", neighbours(tp), c.neighbours)
			if c.sameAs != nil {
				syn := synth(t, *c.sameAs)
				got, want := tp.CPUs(), syn.CPUs()
				for i := range want {
					g, w := got[i], want[i]
					assert.False(t, g.ID != w.ID || g.Package != w.Package || g.Core != w.Core || g.Thread != w.Thread || g.L2 != w.L2, "cpu %d = %+v, synthetic equivalent %+v", i, g, w)
				}
				checkCPUs(t, "synthetic neighbours", neighbours(syn), c.neighbours)
			}
		})
	}
}

// The two-socket server's group tree: root shares nothing, one child per
// socket sharing L3, one grandchild per core (SMT pair, sharing L1).
func TestServerGroupTree(t *testing.T) {
	tp := fixture(t, "server-2s")
	r := tp.Root()
	require.Zero(t, r.Level, "root level %d count %d children %d", r.Level, r.Count, len(r.Children))
	require.Equal(t, 32, r.Count, "root level %d count %d children %d", r.Level, r.Count, len(r.Children))
	require.Len(t, r.Children, 2, "root level %d count %d children %d", r.Level, r.Count, len(r.Children))
	for i, pkg := range r.Children {
		assert.False(t, pkg.Level != ShareL3 || pkg.Count != 16 || len(pkg.Children) != 8 || pkg.Mask.First() != i, "package %d: level %d count %d children %d first %d", i, pkg.Level, pkg.Count, len(pkg.Children), pkg.Mask.First())
		for _, core := range pkg.Children {
			assert.False(t, core.Level != ShareL1 || core.Count != 2 || core.Children != nil, "core %s: level %d count %d", core.Mask, core.Level, core.Count)
		}
	}
	c17, _ := tp.CPU(17)
	assert.False(t, c17.Package != 1 || c17.CoreID != 0 || c17.Thread != 1, "cpu17 = %+v", c17)
	c9, _ := tp.CPU(9)
	// core_id gap: 0-3, 8-11
	assert.Equal(t, 8, c9.CoreID, "cpu9 core_id %d, want 8", c9.CoreID)
}

// Placing on one socket of the server, as bus_get_cpus narrows INTR_CPUS to
// the device's NUMA domain.
func TestServerNUMADomain(t *testing.T) {
	tp := fixture(t, "server-2s")
	socket1 := CPUSetOf(1, 3, 5, 7, 9, 11, 13, 15)
	a := NewAllocator(tp, AllocatorOptions{})
	pl := mustPlace(t, a, Request{Device: "ixl1", RxQueues: 4, TxQueues: 4, CPUs: &socket1, CPUsArePhysical: true,
		Policy: Policy{SeparateTxRx: true, UseLogicalCores: true}})
	checkCPUs(t, "rx", pl.RxCPU, []int{1, 3, 5, 7})
	checkCPUs(t, "tx", pl.TxCPU, []int{17, 19, 21, 23})
	checkNext(t, a, socket1, 9)
}

// mixedFS is a hand-made 4-CPU tree: cpu0/cpu1 SMT siblings sharing an L2,
// cpu2 and cpu3 single-thread cores with private L2, one L3.
func mixedFS() fstest.MapFS {
	m := fstest.MapFS{"online": {Data: []byte("0-3\n")}}
	add := func(cpu, sib, l2 string) {
		d := "cpu" + cpu + "/"
		m[d+"topology/physical_package_id"] = &fstest.MapFile{Data: []byte("0\n")}
		m[d+"topology/core_id"] = &fstest.MapFile{Data: []byte(cpu + "\n")}
		m[d+"topology/thread_siblings_list"] = &fstest.MapFile{Data: []byte(sib + "\n")}
		m[d+"cache/index0/level"] = &fstest.MapFile{Data: []byte("2\n")}
		m[d+"cache/index0/type"] = &fstest.MapFile{Data: []byte("Unified\n")}
		m[d+"cache/index0/shared_cpu_list"] = &fstest.MapFile{Data: []byte(l2 + "\n")}
		m[d+"cache/index1/level"] = &fstest.MapFile{Data: []byte("3\n")}
		m[d+"cache/index1/type"] = &fstest.MapFile{Data: []byte("Unified\n")}
		m[d+"cache/index1/shared_cpu_list"] = &fstest.MapFile{Data: []byte("0-3\n")}
	}
	add("0", "0-1", "0-1")
	add("1", "0-1", "0-1")
	add("2", "2", "2")
	add("3", "3", "3")
	return m
}

// loadMapFS copies a fixture directory into a MapFS so tests can break it.
func loadMapFS(t testing.TB, name string) fstest.MapFS {
	t.Helper()
	root := os.DirFS("testdata/sysfs/" + name)
	m := fstest.MapFS{}
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		m[p] = &fstest.MapFile{Data: b}
		return err
	})
	require.NoError(t, err)
	return m
}

func TestMalformedSysfs(t *testing.T) {
	cases := []struct {
		name, path string // path the error must name (prefix)
		edit       func(m fstest.MapFS)
	}{
		{"no online", "online", func(m fstest.MapFS) { delete(m, "online") }},
		{"empty online", "online", func(m fstest.MapFS) { m["online"].Data = []byte("\n") }},
		{"garbage online", "online", func(m fstest.MapFS) { m["online"].Data = []byte("0-x\n") }},
		{"reversed range", "online", func(m fstest.MapFS) { m["online"].Data = []byte("7-0\n") }},
		{"huge CPU", "online", func(m fstest.MapFS) { m["online"].Data = []byte("0-7,5000\n") }},
		{"bad core_id", "cpu3/topology/core_id", func(m fstest.MapFS) { m["cpu3/topology/core_id"].Data = []byte("three\n") }},
		{"bad package", "cpu1/topology/physical_package_id", func(m fstest.MapFS) { m["cpu1/topology/physical_package_id"].Data = []byte("\n") }},
		{"bad siblings", "cpu2/topology/core_cpus_list", func(m fstest.MapFS) { m["cpu2/topology/core_cpus_list"].Data = []byte("2,,6\n") }},
		{"siblings omit self", "cpu2/topology/core_cpus_list", func(m fstest.MapFS) {
			m["cpu2/topology/core_cpus_list"].Data = []byte("6\n")
		}},
		{"asymmetric siblings", "cpu1/topology/core_cpus_list", func(m fstest.MapFS) {
			m["cpu1/topology/core_cpus_list"].Data = []byte("1,5,6\n")
		}},
		{"siblings partly missing", "cpu4/topology/thread_siblings_list", func(m fstest.MapFS) {
			delete(m, "cpu4/topology/core_cpus_list")
			delete(m, "cpu4/topology/thread_siblings_list")
		}},
		{"bad cache level", "cpu0/cache/index2/level", func(m fstest.MapFS) { m["cpu0/cache/index2/level"].Data = []byte("L2\n") }},
		{"missing cache level", "cpu0/cache/index2/level", func(m fstest.MapFS) { delete(m, "cpu0/cache/index2/level") }},
		{"unknown cache type", "cpu0/cache/index2/type", func(m fstest.MapFS) { m["cpu0/cache/index2/type"].Data = []byte("Victim\n") }},
		{"bad shared list", "cpu5/cache/index2/shared_cpu_list", func(m fstest.MapFS) { m["cpu5/cache/index2/shared_cpu_list"].Data = []byte("1;5\n") }},
		{"L2 splits a core", "cpu0/cache (level 2)", func(m fstest.MapFS) {
			m["cpu0/cache/index2/shared_cpu_list"].Data = []byte("0\n")
			m["cpu4/cache/index2/shared_cpu_list"].Data = []byte("4\n")
		}},
		{"siblings across packages", "cpu0/topology/physical_package_id", func(m fstest.MapFS) {
			m["cpu4/topology/physical_package_id"].Data = []byte("1\n")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loadMapFS(t, "desktop-4c8t")
			c.edit(m)
			tp, err := ParseSysfs(m)
			require.ErrorIs(t, err, ErrMalformedSysfs, "err = %v (topology %v), want ErrMalformedSysfs", err, tp != nil)
			t.Log(err)
			se, ok := errors.AsType[*SysfsError](err)
			assert.False(t, !ok || !strings.HasPrefix(se.Path, c.path), "error %v does not name %s", err, c.path)
		})
	}
}

// Optional files may be missing: no cache directories (like this VM), no
// sibling lists (every CPU its own core, INTR_CPUS not physical), a package
// id of -1.
func TestSysfsMissingOptional(t *testing.T) {
	m := loadMapFS(t, "desktop-4c8t")
	for p := range m {
		if strings.Contains(p, "/cache/") {
			delete(m, p)
		}
	}
	tp, err := ParseSysfs(m)
	require.NoError(t, err)
	assert.False(t, tp.CacheKnown() || !tp.SMTKnown() || tp.L2Neighbor(0) != 4 || tp.CacheLineSize() != defaultLineSize, "no cache: known %v smt %v neighbour(0) %d line %d", tp.CacheKnown(), tp.SMTKnown(), tp.L2Neighbor(0), tp.CacheLineSize())
	for p := range m {
		if strings.HasSuffix(p, "siblings_list") || strings.HasSuffix(p, "core_cpus_list") {
			delete(m, p)
		}
		if strings.HasSuffix(p, "physical_package_id") {
			m[p].Data = []byte("-1\n")
		}
	}
	tp, err = ParseSysfs(m)
	require.NoError(t, err)
	intr, phys := tp.IntrCPUs()
	assert.False(t, tp.SMTKnown() || phys || intr != tp.Online() || tp.NumCores() != 8 || tp.NumPackages() != 1 || tp.L2Neighbor(0) != -1, "no siblings: smt %v intr %s phys %v cores %d", tp.SMTKnown(), intr, phys, tp.NumCores())
}

// Offline CPUs: sibling and cache lists name CPUs that are not online; they
// are clipped away.
func TestSysfsOfflineSibling(t *testing.T) {
	m := loadMapFS(t, "desktop-4c8t")
	m["online"].Data = []byte("0-6\n")
	tp, err := ParseSysfs(m)
	require.NoError(t, err)
	got := tp.Siblings(3)
	assert.Equal(t, CPUSetOf(3), got, "siblings of 3 with 7 offline = %s", got)
	assert.False(t, tp.L2Neighbor(3) != -1 || tp.L2Neighbor(2) != 6, "neighbours: 3→%d 2→%d", tp.L2Neighbor(3), tp.L2Neighbor(2))
	_, ok := tp.CPU(7)
	assert.False(t, ok, "offline cpu7 present")
}

func TestDiscover(t *testing.T) {
	tp, err := Discover()
	require.NoError(t, err)
	require.GreaterOrEqual(t, tp.NumCPUs(), 1, "Discover: %v", tp)
	require.False(t, tp.Online().Empty(), "Discover: %v", tp)
	_, err = os.Stat(SysfsCPUDir + "/online")
	assert.False(t, err == nil && tp.Source() != "sysfs", "source %s with sysfs present", tp.Source())
}
