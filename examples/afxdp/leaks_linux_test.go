package afxdp

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/stretchr/testify/require"
)

// objects is what a process and a namespace hold that the driver could
// leak: the process's open file descriptors (by target: socket:[ino],
// anon_inode:bpf-prog, ...), its goroutines, the AF_XDP sockets of the
// rig's namespace (sock_diag, XDP_DIAG) and the XDP attachments of the
// rig's interfaces.
type objects struct {
	fds        []string
	goroutines int
	xsks       int
	attached   []string
}

func snapshot(t testing.TB, rig *Rig) objects {
	t.Helper()
	var o objects
	o.fds, o.goroutines = processObjects(t)
	o.xsks = xskCount(t, rig)
	for _, p := range rig.Pairs {
		for _, name := range []string{p.A, p.B} {
			l, err := rig.Netlink().LinkByName(name)
			require.NoError(t, err)
			if x := l.Attrs().Xdp; x != nil && x.Attached {
				o.attached = append(o.attached, name)
			}
		}
	}
	return o
}

// processObjects is the process's open file descriptors (by target,
// sorted) and its goroutine count.
func processObjects(t testing.TB) ([]string, int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var fds []string
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			fds = append(fds, target)
		}
	}
	slices.Sort(fds)
	return fds, runtime.NumGoroutine()
}

// requireSame waits briefly for asynchronous releases (the kernel frees
// sockets and programs after RCU grace periods; exiting goroutines take a
// moment), then requires that nothing is left over compared with o.
func (o objects) requireSame(t testing.TB, rig *Rig) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	after := snapshot(t, rig)
	for !o.sameAs(after) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		after = snapshot(t, rig)
	}
	require.Equal(t, o.xsks, after.xsks, "AF_XDP sockets left in the namespace")
	require.Equal(t, o.attached, after.attached, "XDP programs left attached")
	require.Equal(t, strings.Join(o.fds, "\n"), strings.Join(after.fds, "\n"), "file descriptors left open")
	require.LessOrEqual(t, after.goroutines, o.goroutines, "goroutines left running")
}

func (o objects) sameAs(a objects) bool {
	return o.xsks == a.xsks && slices.Equal(o.attached, a.attached) && slices.Equal(o.fds, a.fds) && a.goroutines <= o.goroutines
}

// assertClean checks that no socket is in the namespace and no program is
// attached to iface.
func assertClean(t testing.TB, rig *Rig, iface string) {
	t.Helper()
	require.Zero(t, xskCount(t, rig), "AF_XDP sockets left")
	l, err := rig.Netlink().LinkByName(iface)
	require.NoError(t, err)
	if x := l.Attrs().Xdp; x != nil {
		require.False(t, x.Attached, "XDP program %d still attached to %s", x.ProgId, iface)
	}
}

// ids returns the kernel's ids of the loaded program and its XSKMAP (0
// when the kernel does not say), for requireGone.
func (r *xdpRedirect) ids(t testing.TB) (ebpf.ProgramID, ebpf.MapID) {
	t.Helper()
	pi, err := r.prog.Info()
	require.NoError(t, err)
	mi, err := r.xsks.Info()
	require.NoError(t, err)
	prog, _ := pi.ID()
	m, _ := mi.ID()
	return prog, m
}

// requireGone waits until the kernel has no program and no map with these
// ids (ENOENT from BPF_PROG_GET_FD_BY_ID / BPF_MAP_GET_FD_BY_ID).
func requireGone(t testing.TB, prog ebpf.ProgramID, m ebpf.MapID) {
	t.Helper()
	require.NotZero(t, prog)
	require.NotZero(t, m)
	ok := waitFor(t, 3*time.Second, func() bool {
		p, perr := ebpf.NewProgramFromID(prog)
		if perr == nil {
			p.Close()
		}
		mp, merr := ebpf.NewMapFromID(m)
		if merr == nil {
			mp.Close()
		}
		return perr != nil && merr != nil
	})
	require.True(t, ok, "program %d or map %d still exists", prog, m)
}

// xskCount is the number of AF_XDP sockets in the rig's namespace: the
// "sockets" column of the XDP line of /proc/net/protocols, which the
// kernel keeps per namespace (sock_prot_inuse_add in xsk_create and
// xsk_release). The sock_diag view (XDP_DIAG) needs
// CONFIG_XDP_SOCKETS_DIAG, which not every kernel has.
func xskCount(t testing.TB, rig *Rig) int {
	t.Helper()
	n := -1
	require.NoError(t, rig.Do(func() error {
		b, err := os.ReadFile("/proc/thread-self/net/protocols")
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) > 2 && f[0] == "XDP" {
				n, err = strconv.Atoi(f[2])
				return err
			}
		}
		return nil
	}))
	require.GreaterOrEqual(t, n, 0, "no XDP line in /proc/net/protocols")
	return n
}
