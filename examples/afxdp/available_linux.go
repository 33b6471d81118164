package afxdp

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Available says why AF_XDP cannot run here, or nil if it can: the process
// must be able to create network namespaces and veth pairs (root:
// CAP_SYS_ADMIN, CAP_NET_ADMIN), AF_XDP sockets (CAP_NET_RAW and a kernel
// with CONFIG_XDP_SOCKETS) and BPF programs and maps (CAP_BPF or
// CAP_SYS_ADMIN). The error wraps ErrUnavailable and names the failing
// step with its errno.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (euid %d): network namespaces, veth pairs and XDP need CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF", ErrUnavailable, os.Geteuid())
	}
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: socket(AF_XDP): %w", ErrUnavailable, err)
	}
	_ = unix.Close(fd)
	r, err := loadRedirect(1)
	if err != nil {
		return err
	}
	_ = r.close()
	h, err := newNetNS()
	if err != nil {
		return err
	}
	_ = h.Close()
	return nil
}
