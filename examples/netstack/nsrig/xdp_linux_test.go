package nsrig

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/goiflib/goiflib/examples/afxdp"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/race"
)

// xdpBlob is what the AF_XDP tests download: 10 MB, 4 MB under the race
// detector (each byte crosses gVisor and iflib under it).
func xdpBlob() []byte {
	if race.Enabled {
		return Blob(4<<20, 3)
	}
	return Blob(10<<20, 3)
}

// needXDP skips without root or without the client tools the test runs
// (.ci/run installs them).
func needXDP(t *testing.T, tools ...string) {
	t.Helper()
	if err := afxdp.RigAvailable(); err != nil {
		t.Skipf("AF_XDP tests need Linux and root: %v", err)
	}
	for _, tool := range append([]string{"nsenter"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install curl iputils-ping util-linux)", tool)
		}
	}
}

// inNS runs a command in the network namespace at path and returns its
// combined output.
func inNS(ctx context.Context, path string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + path}, args...)...).CombinedOutput()
	return string(out), err
}

// addAddr puts a /24 address on an interface of a namespace's netlink
// handle and sets it up.
func addAddr(t *testing.T, nl *netlink.Handle, name string, a netip.Prefix) {
	t.Helper()
	l, err := nl.LinkByName(name)
	require.NoError(t, err)
	require.NoError(t, nl.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: a.Addr().AsSlice(), Mask: net.CIDRMask(a.Bits(), 32)}}))
	require.NoError(t, nl.LinkSetUp(l))
}

// txChecksumOn reports whether an interface of a namespace keeps TX
// checksum offload (the Linux default for veth) when ethtool is there.
func txChecksumOn(t *testing.T, ns, name string) {
	t.Helper()
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Logf("ethtool not installed: not checking %s's offloads", name)
		return
	}
	out, err := inNS(context.Background(), ns, "ethtool", "-k", name)
	require.NoError(t, err, out)
	require.Contains(t, out, "tx-checksumming: on", "the peer keeps veth's default TX checksum offload")
}

// curlSHA downloads url in namespace ns with curl and returns the
// SHA-256 of what it saved.
func curlSHA(t *testing.T, ns, url string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "blob")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := inNS(ctx, ns, "curl", "-sS", "--max-time", "90", "-o", f, url)
	require.NoError(t, err, "curl %s: %s", url, out)
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestXDPCurlAndPing: the Go stack on the AF_XDP driver on a veth in a
// private namespace; curl and ping run in that namespace against it, with
// the peer's default offloads (its TCP leaves checksums partial). ping
// gets every reply; curl gets the page and downloads the blob byte for
// byte (SHA-256), in each TX mode.
func TestXDPCurlAndPing(t *testing.T) {
	needXDP(t, "curl", "ping")
	rig, err := afxdp.NewRig(afxdp.RigConfig{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, rig.Close()) }()
	p := rig.Pairs[0]
	addAddr(t, rig.Netlink(), p.B, netip.MustParsePrefix("10.77.0.1/24"))
	txChecksumOn(t, rig.NetNSPath(), p.B)
	blob := xdpBlob()
	want := sha256.Sum256(blob)

	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		t.Run(mode.String(), func(t *testing.T) {
			x, err := NewXDPStack(XDPConfig{Interface: p.A, NetNS: rig.NetNSPath(), Addr: netip.MustParsePrefix("10.77.0.2/24"),
				Config: iflib.Config{TxMode: mode}})
			require.NoError(t, err)
			defer func() { assert.NoError(t, x.Close()) }()
			sv := NewServer()
			defer sv.Close()
			require.NoError(t, sv.HTTP(x.Stack, netip.MustParseAddr("10.77.0.2"), "hello from gVisor on goiflib "+mode.String(), blob))

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := inNS(ctx, rig.NetNSPath(), "ping", "-c", "10", "-i", "0.05", "-W", "2", "10.77.0.2")
			require.NoError(t, err, out)
			assert.Contains(t, out, " 0% packet loss", out)

			out, err = inNS(ctx, rig.NetNSPath(), "curl", "-sS", "--max-time", "20", "http://10.77.0.2/")
			require.NoError(t, err, out)
			assert.Equal(t, "hello from gVisor on goiflib "+mode.String()+"\n", out)
			out, err = inNS(ctx, rig.NetNSPath(), "curl", "-sS", "--max-time", "20", "http://10.77.0.2/sha256")
			require.NoError(t, err, out)
			assert.Equal(t, hex.EncodeToString(want[:])+"\n", out)
			for range 2 {
				assert.Equal(t, hex.EncodeToString(want[:]), curlSHA(t, rig.NetNSPath(), "http://10.77.0.2/blob"))
			}

			ds := x.Driver.Stats()
			ts := x.Stack.Stats()
			t.Logf("driver: %+v\nendpoint: %v\ngVisor: tcp checksum errors %d, segments retransmitted %d",
				ds, x.EP.Stats(), ts.TCP.ChecksumErrors.Value(), ts.TCP.Retransmits.Value())
			assert.NotZero(t, ds.PartialChecksums, "the peer's TCP left checksums partial (veth's default offload) and the driver completed them")
			assert.Zero(t, ts.TCP.ChecksumErrors.Value(), "no segment reached gVisor with a bad checksum")
		})
	}
}

// TestXDPPartialChecksumTrap is the trap itself: with the driver told to
// keep frames as the kernel delivers them, the peer's TCP segments reach
// gVisor with partial checksums and are dropped (counted as checksum
// errors), so curl cannot connect while ping (ICMP checksums are
// computed in software) still works.
func TestXDPPartialChecksumTrap(t *testing.T) {
	needXDP(t, "curl", "ping")
	rig, err := afxdp.NewRig(afxdp.RigConfig{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, rig.Close()) }()
	p := rig.Pairs[0]
	addAddr(t, rig.Netlink(), p.B, netip.MustParsePrefix("10.77.0.1/24"))
	x, err := NewXDPStack(XDPConfig{Interface: p.A, NetNS: rig.NetNSPath(), Addr: netip.MustParsePrefix("10.77.0.2/24"),
		KeepPartialChecksums: true})
	require.NoError(t, err)
	defer func() { assert.NoError(t, x.Close()) }()
	sv := NewServer()
	defer sv.Close()
	require.NoError(t, sv.HTTP(x.Stack, netip.MustParseAddr("10.77.0.2"), "hello", nil))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := inNS(ctx, rig.NetNSPath(), "ping", "-c", "3", "-i", "0.05", "-W", "2", "10.77.0.2")
	require.NoError(t, err, out)
	out, err = inNS(ctx, rig.NetNSPath(), "curl", "-sS", "--connect-timeout", "2", "http://10.77.0.2/")
	require.Error(t, err, "curl must not connect: %s", out)
	assert.NotZero(t, x.Stack.Stats().TCP.ChecksumErrors.Value(), "gVisor dropped the partial SYNs as checksum errors")
	assert.Zero(t, x.Driver.Stats().PartialChecksums)
}

// TestXDPForwarder: kernel TCP and UDP through an iflib L2 forwarder of
// two AF_XDP drivers (the README's forwarding snippet), between two
// namespaces whose veths keep their default offloads: curl in one
// downloads from a net/http server in the other, byte for byte, and UDP
// datagrams arrive. The forwarder completes the partial checksums of both
// directions; the kernels at both ends verify them.
func TestXDPForwarder(t *testing.T) {
	needXDP(t, "curl")
	cli, err := afxdp.NewRig(afxdp.RigConfig{Pairs: 2})
	require.NoError(t, err)
	defer func() { assert.NoError(t, cli.Close()) }()
	srv, err := afxdp.NewRig(afxdp.RigConfig{})
	require.NoError(t, err)
	defer func() { assert.NoError(t, srv.Close()) }()

	// client xb0 ── xa0 [forwarder] xa1 ── xb1 (moved to the server's namespace)
	in, out, far := cli.Pairs[0].A, cli.Pairs[1].A, cli.Pairs[1].B
	h, err := netns.GetFromPath(srv.NetNSPath())
	require.NoError(t, err)
	defer h.Close()
	l, err := cli.Netlink().LinkByName(far)
	require.NoError(t, err)
	require.NoError(t, cli.Netlink().LinkSetNsFd(l, int(h)))
	addAddr(t, cli.Netlink(), cli.Pairs[0].B, netip.MustParsePrefix("10.78.0.1/24"))
	addAddr(t, srv.Netlink(), far, netip.MustParsePrefix("10.78.0.2/24"))
	txChecksumOn(t, cli.NetNSPath(), cli.Pairs[0].B)
	txChecksumOn(t, srv.NetNSPath(), far)

	u, err := afxdp.NewUMEM(afxdp.UMEMConfig{Frames: 2*iflib.DefaultRxZoneSize(afxdp.DefaultNRxd) + 128})
	require.NoError(t, err)
	defer func() { assert.NoError(t, u.Close()) }()
	var dIn, dOut *afxdp.Driver
	dIn, err = afxdp.Attach(afxdp.Config{Interface: in, NetNS: cli.NetNSPath(), UMEM: u},
		iflib.Attachment{Input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) { _, _ = dOut.Context().TransmitBatch(pkts) }})
	require.NoError(t, err)
	dOut, err = afxdp.Attach(afxdp.Config{Interface: out, NetNS: cli.NetNSPath(), UMEM: u},
		iflib.Attachment{Input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) { _, _ = dIn.Context().TransmitBatch(pkts) }})
	require.NoError(t, err)
	defer func() {
		// Each holds the other's received packets on its TX ring until it
		// stops: stop both, then detach.
		assert.NoError(t, dIn.Context().Stop())
		assert.NoError(t, dOut.Context().Stop())
		assert.NoError(t, dIn.Context().Detach())
		assert.NoError(t, dOut.Context().Detach())
	}()
	require.NoError(t, dIn.Context().Init())
	require.NoError(t, dOut.Context().Init())

	blob := xdpBlob()
	want := sha256.Sum256(blob)
	var ln net.Listener
	var uc net.PacketConn
	require.NoError(t, srv.Do(func() (err error) {
		if ln, err = net.Listen("tcp4", "10.78.0.2:80"); err != nil {
			return err
		}
		uc, err = net.ListenPacket("udp4", "10.78.0.2:9")
		return err
	}))
	defer uc.Close()
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "blob", time.Time{}, strings.NewReader(string(blob)))
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()

	assert.Equal(t, hex.EncodeToString(want[:]), curlSHA(t, cli.NetNSPath(), "http://10.78.0.2/blob"))

	const datagrams = 50
	var uo net.Conn
	require.NoError(t, cli.Do(func() (err error) { uo, err = net.Dial("udp4", "10.78.0.2:9"); return err }))
	defer uo.Close()
	got := make(chan int, 1)
	go func() {
		buf := make([]byte, 2048)
		n := 0
		for n < datagrams {
			_ = uc.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, _, err := uc.ReadFrom(buf); err != nil {
				break
			}
			n++
		}
		got <- n
	}()
	for i := range datagrams {
		_, err := fmt.Fprintf(uo, "datagram %d %s", i, strings.Repeat("x", 200))
		require.NoError(t, err)
		time.Sleep(2 * time.Millisecond)
	}
	assert.Equal(t, datagrams, <-got, "every UDP datagram crossed the forwarder with a valid checksum")

	si, so := dIn.Stats(), dOut.Stats()
	t.Logf("forwarder in: %+v\nforwarder out: %+v", si, so)
	assert.NotZero(t, si.PartialChecksums, "client→server frames came partial and were completed")
	assert.NotZero(t, so.PartialChecksums, "server→client frames came partial and were completed")
}
