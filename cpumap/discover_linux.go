package cpumap

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
)

// Discover returns this machine's topology. On Linux it parses
// /sys/devices/system/cpu (see ParseSysfs); if that directory or its
// "online" file does not exist (sysfs not mounted) it falls back to
// Flat(runtime.NumCPU()). A sysfs that exists but is malformed is an error.
func Discover() (*Topology, error) {
	t, err := ParseSysfs(os.DirFS(SysfsCPUDir))
	if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrEmptyCPUSet) {
		if se, ok := errors.AsType[*SysfsError](err); ok && se.Path == "online" {
			return Flat(runtime.NumCPU())
		}
	}
	return t, err
}
