package afxdp

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/iflib"
)

// TestAvailableChecksCapabilities: Available asks for capabilities, not
// root: with CAP_NET_ADMIN and CAP_BPF/CAP_SYS_ADMIN dropped from the
// effective set of the calling thread it names exactly those, wrapped in
// ErrUnavailable; with them back it passes.
func TestAvailableChecksCapabilities(t *testing.T) {
	needAFXDP(t)
	require.NoError(t, Available())
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var orig [2]unix.CapUserData
	require.NoError(t, unix.Capget(&hdr, &orig[0]))
	drop := orig
	for _, c := range []uint{capNetAdmin, capBPF, capSysAdmin} {
		drop[c/32].Effective &^= 1 << (c % 32)
	}
	require.NoError(t, unix.Capset(&hdr, &drop[0]))
	err := Available()
	if unix.Capset(&hdr, &orig[0]) == nil {
		runtime.UnlockOSThread() // else the thread dies with the goroutine
	}
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "missing capabilities CAP_NET_ADMIN (attach XDP, create an XSKMAP, netlink changes), CAP_BPF or CAP_SYS_ADMIN")
	assert.NotContains(t, err.Error(), "CAP_NET_RAW")
	assert.NotContains(t, err.Error(), "root (euid")
	require.NoError(t, Available())
}

// TestAttachWithoutPrivilegeWrapsUnavailable (review P9): an Attach into a
// network namespace refused for lack of privilege (setns without
// CAP_SYS_ADMIN: EPERM) wraps ErrUnavailable, "cannot run here".
func TestAttachWithoutPrivilegeWrapsUnavailable(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	runtime.LockOSThread()
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var orig [2]unix.CapUserData
	require.NoError(t, unix.Capget(&hdr, &orig[0]))
	drop := orig
	drop[capSysAdmin/32].Effective &^= 1 << (capSysAdmin % 32)
	require.NoError(t, unix.Capset(&hdr, &drop[0]))
	d, err := Attach(Config{Interface: rig.Pairs[0].A, NetNS: rig.NetNSPath()}, iflib.Attachment{})
	if unix.Capset(&hdr, &orig[0]) == nil {
		runtime.UnlockOSThread()
	}
	assert.Nil(t, d)
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, err, unix.EPERM)
}
