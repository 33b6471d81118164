package afxdp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/iflib"
)

// tcpPath is one kernel TCP connection through an L2 forwarder of two
// drivers: a client namespace (xb0, 10.77.0.1) ↔ xa0 [driver] → iflib →
// [driver] xa1 ↔ xb1 (10.77.0.2) in a server namespace, each driver's
// input callback transmitting its batch on the other (the README's
// forwarder, both ways). The peers keep veth's default checksum offload,
// so their TCP checksums arrive partial and the drivers complete them.
type tcpPath struct {
	rig            *Rig
	client, server netNS
	a, b           *Driver
}

// In generic mode the peers' TSO and GSO are off (see below).
func newTCPPath(t *testing.T, mode XDPMode, nrxd, mtu int) *tcpPath {
	t.Helper()
	p := &tcpPath{rig: newRig(t, RigConfig{Pairs: 2, MTU: mtu})}
	for i, ns := range []*netNS{&p.client, &p.server} {
		h, err := newNetNS()
		require.NoError(t, err)
		*ns = netNS{h: h}
		t.Cleanup(ns.close)
		name := p.rig.Pairs[i].B
		require.NoError(t, p.rig.Netlink().LinkSetNsFd(mustLink(t, p.rig, name), int(h)))
		nl, err := netlink.NewHandleAt(h)
		require.NoError(t, err)
		defer nl.Close()
		for _, ifn := range []string{"lo", name} {
			l, err := nl.LinkByName(ifn)
			require.NoError(t, err)
			require.NoError(t, nl.LinkSetUp(l))
		}
		addr, err := netlink.ParseAddr(fmt.Sprintf("10.77.0.%d/24", i+1))
		require.NoError(t, err)
		l, err := nl.LinkByName(name)
		require.NoError(t, err)
		require.NoError(t, nl.AddrAdd(l, addr))
		if mode == XDPGeneric {
			// Generic XDP sees the skb the peer sent: with TSO/GSO on
			// (veth's default) a TCP super-segment of up to 64 KB that no
			// AF_XDP socket takes (native XDP makes veth turn its peer's
			// GSO off itself).
			require.NoError(t, (&netNS{h: h}).do(func() error { return ethtoolSet(name, unix.ETHTOOL_STSO, unix.ETHTOOL_SGSO) }))
		}
	}
	zone := iflib.DefaultRxZoneSize(nrxd)
	u := newUMEM(t, 2*(zone+64))
	var out [2]*iflib.Context
	var err error
	for i, pair := range p.rig.Pairs {
		other := 1 - i
		d, err2 := Attach(Config{Interface: pair.A, NetNS: p.rig.NetNSPath(), UMEM: u, XDPMode: mode, NRxd: nrxd, NTxd: 1024},
			iflib.Attachment{Config: iflib.Config{Unit: i, RxZoneSize: zone}, Input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
				_, _ = out[other].TransmitBatch(pkts) // refused packets are freed and counted by iflib
			}})
		require.NoError(t, err2)
		out[i] = d.Context()
		if i == 0 {
			p.a = d
		} else {
			p.b = d
		}
	}
	t.Cleanup(func() {
		// Both stop before either detaches: each TX ring holds packets of
		// the other's zone.
		assert.NoError(t, out[0].Stop())
		assert.NoError(t, out[1].Stop())
		assert.NoError(t, out[0].Detach())
		assert.NoError(t, out[1].Detach())
	})
	err = out[0].Init()
	require.NoError(t, err)
	require.NoError(t, out[1].Init())
	return p
}

// ethtoolSet turns the ethtool features of cmds off on ifname
// (ETHTOOL_STSO, ETHTOOL_SGSO: struct ethtool_value).
func ethtoolSet(ifname string, cmds ...uint32) error {
	for _, c := range cmds {
		v := struct{ cmd, data uint32 }{c, 0}
		if err := ethtoolIoctl(ifname, unsafe.Pointer(&v)); err != nil {
			return fmt.Errorf("ethtool %#x off on %s: %w", c, ifname, err)
		}
	}
	return nil
}

// tcpCounters reads Tcp: OutSegs and RetransSegs of a namespace.
func tcpCounters(t *testing.T, ns netNS) (out, retrans uint64) {
	t.Helper()
	var b []byte
	require.NoError(t, ns.do(func() error {
		var err error
		b, err = os.ReadFile("/proc/thread-self/net/snmp")
		return err
	}))
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "Tcp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, v := range f {
			n, _ := strconv.ParseUint(v, 10, 64)
			switch names[i] {
			case "OutSegs":
				out = n
			case "RetransSegs":
				retrans = n
			}
		}
	}
	return out, retrans
}

// transfer sends for d (or until n bytes) from the client to the server
// over one TCP connection and checks every byte; it returns the bytes
// moved and the client's segments sent and retransmitted meanwhile.
func (p *tcpPath) transfer(t *testing.T, d time.Duration, n int64) (moved int64, segs, retrans uint64) {
	t.Helper()
	var ln net.Listener
	require.NoError(t, p.server.do(func() error {
		var err error
		ln, err = net.Listen("tcp4", "10.77.0.2:5001")
		return err
	}))
	defer ln.Close()
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		var got int64
		buf := make([]byte, 1<<16)
		for {
			m, err := c.Read(buf)
			for i := 0; i < m; i++ {
				if buf[i] != byte((got+int64(i))%251) {
					done <- result{got + int64(i), fmt.Errorf("byte %d is %d, want %d", got+int64(i), buf[i], (got+int64(i))%251)}
					return
				}
			}
			got += int64(m)
			if err == io.EOF {
				done <- result{n: got}
				return
			}
			if err != nil {
				done <- result{got, err}
				return
			}
		}
	}()
	out0, re0 := tcpCounters(t, p.client)
	var c net.Conn
	require.NoError(t, p.client.do(func() error {
		var err error
		c, err = net.DialTimeout("tcp4", "10.77.0.2:5001", 5*time.Second)
		return err
	}))
	pattern := make([]byte, 251*256)
	for i := range pattern {
		pattern[i] = byte(i % 251)
	}
	var sent int64
	deadline := time.Now().Add(d)
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(d+10*time.Second)))
	for (d > 0 && time.Now().Before(deadline)) || (n > 0 && sent < n) {
		chunk := pattern[sent%251:]
		if n > 0 {
			chunk = chunk[:min(int64(len(chunk)), n-sent)]
		}
		m, err := c.Write(chunk)
		sent += int64(m)
		require.NoError(t, err, "after %d bytes (drivers %+v / %+v)", sent, p.a.Stats(), p.b.Stats())
	}
	require.NoError(t, c.Close())
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Equal(t, sent, r.n, "bytes received")
	case <-time.After(20 * time.Second):
		require.FailNow(t, fmt.Sprintf("the server never saw the end of the stream (drivers %+v / %+v)", p.a.Stats(), p.b.Stats()))
	}
	out1, re1 := tcpCounters(t, p.client)
	return sent, out1 - out0, re1 - re0
}

// TestTCPForward (review P1, P6): one kernel TCP connection passes through
// two drivers forwarding each other's batches, with the peers' default TX
// checksum offload (the drivers complete the partial checksums): every
// byte arrives, in order. With AFXDP_TCP_SECONDS set it measures instead,
// for that long per RX ring size, the client's retransmitted segments
// (each a segment the forwarder's RX ring had no room for):
//
//	AFXDP_TCP_SECONDS=5 go test -run TestTCPForward -v ./examples/afxdp/
func TestTCPForward(t *testing.T) {
	needAFXDP(t)
	secs, _ := strconv.Atoi(os.Getenv("AFXDP_TCP_SECONDS"))
	if secs <= 0 {
		for _, mode := range []XDPMode{XDPNative, XDPGeneric} {
			t.Run(mode.String(), func(t *testing.T) {
				p := newTCPPath(t, mode, 1024, 1500)
				moved, segs, _ := p.transfer(t, 0, 4<<20)
				require.Equal(t, int64(4<<20), moved)
				assert.Positive(t, segs)
				assert.Positive(t, p.a.Stats().PartialChecksums+p.b.Stats().PartialChecksums, "the peers' checksums arrived complete: the test no longer covers the veth trap")
			})
		}
		// Jumbo frames: MTU 9000 everywhere, so every data segment is a
		// three-fragment frame in, a three-descriptor packet out, and its
		// partial checksum is completed across the fragments.
		t.Run("native/mtu9000", func(t *testing.T) {
			p := newTCPPath(t, XDPNative, 1024, 9000)
			if !p.a.MultiBuffer() {
				t.Skip("this kernel has no XDP multi-buffer (BPF_F_XDP_HAS_FRAGS)")
			}
			moved, _, _ := p.transfer(t, 0, 4<<20)
			require.Equal(t, int64(4<<20), moved)
			assert.Positive(t, p.a.Stats().PartialChecksums)
		})
		return
	}
	for _, nrxd := range []int{1024, 2048, 4096} {
		for _, mode := range []XDPMode{XDPNative, XDPGeneric} {
			t.Run(fmt.Sprintf("%s/nrxd=%d", mode, nrxd), func(t *testing.T) {
				p := newTCPPath(t, mode, nrxd, 1500)
				moved, segs, retrans := p.transfer(t, time.Duration(secs)*time.Second, 0)
				st := p.a.Stats()
				t.Logf("%s NRxd %4d: %6.2f Gb/s, %d segments, %d retransmitted (%.2f %%); forwarder RxDropped %d, RxFillRingEmpty %d, RxRingFull %d",
					mode, nrxd, float64(moved)*8/float64(secs)/1e9, segs, retrans, 100*float64(retrans)/float64(max(segs, 1)),
					st.RxDropped, st.RxFillRingEmpty, st.RxRingFull)
			})
		}
	}
}
