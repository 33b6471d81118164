package afxdp

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Capabilities the driver needs (include/uapi/linux/capability.h).
const (
	capNetAdmin = 12 // CAP_NET_ADMIN: attach XDP, an XSKMAP, netlink changes
	capNetRaw   = 13 // CAP_NET_RAW: AF_XDP sockets
	capIPCLock  = 14 // CAP_IPC_LOCK: pin the UMEM beyond RLIMIT_MEMLOCK
	capSysAdmin = 21 // CAP_SYS_ADMIN: BPF before CAP_BPF; network namespaces
	capBPF      = 39 // CAP_BPF (Linux 5.8+): BPF maps and programs
)

// effectiveCaps returns the process's effective capability set.
func effectiveCaps() (uint64, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return 0, err
	}
	return uint64(data[1].Effective)<<32 | uint64(data[0].Effective), nil
}

// Available says why the driver cannot run here, or nil if it can: it
// checks the capabilities the driver needs — CAP_NET_ADMIN, CAP_NET_RAW,
// and CAP_BPF or CAP_SYS_ADMIN; root has them all, and so does a process
// given them as file or ambient capabilities — and then creates what it
// creates: an AF_XDP socket (a kernel with CONFIG_XDP_SOCKETS) and an
// XSKMAP and XDP program (bpf(2)). Pinning the UMEM also needs
// CAP_IPC_LOCK or an RLIMIT_MEMLOCK as large as the UMEM (per socket);
// without either Init fails saying so. The error wraps ErrUnavailable and
// names what is missing, with the errno. The test rig needs more
// (network namespaces and veth pairs): RigAvailable.
func Available() error {
	caps, err := effectiveCaps()
	if err != nil {
		return fmt.Errorf("%w: capget: %w", ErrUnavailable, err)
	}
	has := func(c uint) bool { return caps&(1<<c) != 0 }
	var missing []string
	if !has(capNetAdmin) {
		missing = append(missing, "CAP_NET_ADMIN (attach XDP, create an XSKMAP, netlink changes)")
	}
	if !has(capNetRaw) {
		missing = append(missing, "CAP_NET_RAW (AF_XDP sockets)")
	}
	if !has(capBPF) && !has(capSysAdmin) {
		missing = append(missing, "CAP_BPF or CAP_SYS_ADMIN (BPF maps and programs)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing capabilities %s (effective set %#x): run as root or grant them (setcap, ambient capabilities)",
			ErrUnavailable, strings.Join(missing, ", "), caps)
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: socket(AF_XDP): %w", ErrUnavailable, err)
	}
	_ = unix.Close(fd)
	r, err := loadRedirect(1, false)
	if err != nil {
		return err
	}
	_ = r.close()
	return nil
}

// RigAvailable says why the test rig (NewRig: a network namespace with
// veth pairs) cannot be built here, or nil: Available, and CAP_SYS_ADMIN
// to create a network namespace. The error wraps ErrUnavailable.
func RigAvailable() error {
	if err := Available(); err != nil {
		return err
	}
	h, err := newNetNS()
	if err != nil {
		return err
	}
	_ = h.Close()
	return nil
}
