package afxdp

import (
	"errors"
	"fmt"
	"net"
	"runtime"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netNS is a network namespace the driver works in: the interface index,
// the AF_XDP sockets, the XDP attachment and the netlink sockets all
// resolve in the namespace of the thread that creates them, so those calls
// run on a locked OS thread switched into it (setns(2)). The zero value
// (h == -1 after openNetNS("")) means the caller's namespace: no switch.
type netNS struct {
	h netns.NsHandle
}

func openNetNS(path string) (netNS, error) {
	if path == "" {
		return netNS{h: netns.None()}, nil
	}
	h, err := netns.GetFromPath(path)
	if err != nil {
		return netNS{h: netns.None()}, &ConfigError{Pkg: "afxdp", Field: "NetNS", Value: path, Reason: "cannot open the network namespace", Err: err}
	}
	return netNS{h: h}, nil
}

func (n netNS) isSet() bool { return n.h.IsOpen() }

// do runs fn on a thread in the namespace. If the thread cannot be switched
// back, it stays locked, so Go retires it when the goroutine ends and no
// other goroutine runs in the wrong namespace.
func (n netNS) do(fn func() error) error {
	if !n.isSet() {
		return fn()
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("afxdp: current network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(n.h); err != nil {
		runtime.UnlockOSThread()
		if errors.Is(err, unix.EPERM) {
			// setns(2) needs CAP_SYS_ADMIN: cannot run here.
			return fmt.Errorf("%w: setns into the interface's network namespace: %w", ErrUnavailable, err)
		}
		return fmt.Errorf("afxdp: setns: %w", err)
	}
	ferr := fn()
	if err := netns.Set(orig); err == nil {
		runtime.UnlockOSThread()
	}
	return ferr
}

func (n *netNS) close() {
	if n.isSet() {
		_ = n.h.Close()
	}
	n.h = netns.None()
}

// ifName is the name of interface ifindex in the calling thread's
// namespace, for messages ("ifindex N" if it has none).
func ifName(ifindex int) string {
	if ifi, err := net.InterfaceByIndex(ifindex); err == nil {
		return ifi.Name
	}
	return fmt.Sprintf("ifindex %d", ifindex)
}
