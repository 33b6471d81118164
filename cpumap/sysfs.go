package cpumap

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// SysfsCPUDir is where Linux publishes the CPU topology.
const SysfsCPUDir = "/sys/devices/system/cpu"

// ParseSysfs reads a CPU topology from a tree laid out like Linux's
// /sys/devices/system/cpu (Documentation/ABI/stable/sysfs-devices-system-cpu,
// Documentation/ABI/testing/sysfs-devices-system-cpu):
//
//	online                                 CPU list of online CPUs (required)
//	cpuN/topology/physical_package_id      package; -1 (unknown) reads as 0
//	cpuN/topology/core_id                  core number within the package
//	cpuN/topology/core_cpus_list           SMT siblings (Linux ≥ 5.6), else
//	cpuN/topology/thread_siblings_list     the older name of the same list
//	cpuN/cache/indexK/{level,type,shared_cpu_list,coherency_line_size}
//
// Missing optional files are tolerated: without sibling lists every CPU is
// its own core (Topology.SMTKnown false); without cache directories every
// core has a private L2 (Topology.CacheKnown false); without
// coherency_line_size (or with 0 there) the line size is the one
// golang.org/x/sys/cpu pads to; a line size that is not a power of two from
// MinCacheLineSize to MaxCacheLineSize is malformed (ErrCacheLineSize too).
// Files that exist but do not parse, and layouts that contradict themselves
// (a sibling list that omits its own CPU, two CPUs disagreeing about their
// group) give a *SysfsError matching ErrMalformedSysfs.
func ParseSysfs(fsys fs.FS) (*Topology, error) {
	onlineText, err := fs.ReadFile(fsys, "online")
	if err != nil {
		return nil, &SysfsError{Path: "online", Err: err}
	}
	online, err := ParseCPUList(string(onlineText))
	if err != nil {
		return nil, &SysfsError{Path: "online", Err: err}
	}
	if online.Empty() {
		return nil, &SysfsError{Path: "online", Err: ErrEmptyCPUSet}
	}
	lineSize := 0
	var raws []rawCPU
	for id := online.First(); id >= 0; id = online.Next(id) {
		r, line, err := readSysfsCPU(fsys, id)
		if err != nil {
			return nil, err
		}
		if lineSize == 0 {
			lineSize = line
		}
		raws = append(raws, r)
	}
	if lineSize == 0 {
		lineSize = defaultLineSize
	}
	t, err := newTopology(raws, lineSize, "sysfs")
	if le, ok := errors.AsType[*layoutError](err); ok {
		return nil, &SysfsError{Path: fmt.Sprintf("cpu%d/%s", le.cpu, le.file), Err: errors.New(le.msg)}
	}
	return t, err
}

// readSysfsCPU reads cpuN's topology and cache files.
func readSysfsCPU(fsys fs.FS, id int) (r rawCPU, lineSize int, err error) {
	dir := fmt.Sprintf("cpu%d", id)
	r = rawCPU{id: id, coreID: id}
	if v, ok, err := readInt(fsys, path.Join(dir, "topology/physical_package_id")); err != nil {
		return r, 0, err
	} else if ok && v >= 0 {
		r.pkg = v
	}
	if v, ok, err := readInt(fsys, path.Join(dir, "topology/core_id")); err != nil {
		return r, 0, err
	} else if ok {
		r.coreID = v
	}
	for _, name := range []string{"topology/core_cpus_list", "topology/thread_siblings_list"} {
		s, ok, err := readList(fsys, path.Join(dir, name))
		if err != nil {
			return r, 0, err
		}
		if ok {
			r.siblings, r.sibFile = s, name
			break
		}
	}
	entries, err := fs.ReadDir(fsys, path.Join(dir, "cache"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return r, 0, nil
		}
		return r, 0, &SysfsError{Path: path.Join(dir, "cache"), Err: err}
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "index") {
			continue
		}
		idx := path.Join(dir, "cache", e.Name())
		level, ok, err := readInt(fsys, path.Join(idx, "level"))
		if err != nil {
			return r, 0, err
		}
		if !ok {
			return r, 0, &SysfsError{Path: path.Join(idx, "level"), Err: fs.ErrNotExist}
		}
		typ, err := fs.ReadFile(fsys, path.Join(idx, "type"))
		if err != nil {
			return r, 0, &SysfsError{Path: path.Join(idx, "type"), Err: err}
		}
		switch strings.TrimSpace(string(typ)) {
		case "Instruction":
			continue
		case "Data", "Unified":
		default:
			return r, 0, &SysfsError{Path: path.Join(idx, "type"), Err: fmt.Errorf("unknown cache type %q", typ)}
		}
		if lineSize == 0 {
			name := path.Join(idx, "coherency_line_size")
			if v, ok, err := readInt(fsys, name); err != nil {
				return r, 0, err
			} else if ok && v != 0 { // 0: the kernel does not know
				if !validLineSize(v) {
					return r, 0, &SysfsError{Path: name, Err: fmt.Errorf("%w: %d", ErrCacheLineSize, v)}
				}
				lineSize = v
			}
		}
		if level != 2 && level != 3 {
			continue
		}
		shared, ok, err := readList(fsys, path.Join(idx, "shared_cpu_list"))
		if err != nil {
			return r, 0, err
		}
		if !ok {
			return r, 0, &SysfsError{Path: path.Join(idx, "shared_cpu_list"), Err: fs.ErrNotExist}
		}
		if level == 2 {
			r.l2 = shared
		} else {
			r.l3 = shared
		}
	}
	return r, lineSize, nil
}

// readInt reads a file holding one decimal integer. ok is false if the file
// does not exist.
func readInt(fsys fs.FS, name string) (v int, ok bool, err error) {
	b, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, &SysfsError{Path: name, Err: err}
	}
	v, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, false, &SysfsError{Path: name, Err: err}
	}
	return v, true, nil
}

// readList reads a file holding a CPU list. ok is false if the file does
// not exist.
func readList(fsys fs.FS, name string) (s CPUSet, ok bool, err error) {
	b, err := fs.ReadFile(fsys, name)
	if errors.Is(err, fs.ErrNotExist) {
		return CPUSet{}, false, nil
	}
	if err != nil {
		return CPUSet{}, false, &SysfsError{Path: name, Err: err}
	}
	if s, err = ParseCPUList(string(b)); err != nil {
		return CPUSet{}, false, &SysfsError{Path: name, Err: err}
	}
	return s, true, nil
}
