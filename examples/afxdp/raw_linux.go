package afxdp

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// EtherTypeTest is the EtherType of the rig's test frames: IEEE 802 local
// experimental EtherType 1 (0x88B5), which no protocol of the kernel
// answers.
const EtherTypeTest = 0x88B5

// RawSocket is an AF_PACKET socket on one interface of a Rig, bound to
// EtherTypeTest: a generator and sink on the peer end of a veth pair that
// sees only incoming test frames.
type RawSocket struct {
	fd      int
	ifindex int
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// OpenRaw opens a RawSocket on interface name of the rig.
func (r *Rig) OpenRaw(name string) (*RawSocket, error) {
	l, err := r.nl.LinkByName(name)
	if err != nil {
		return nil, err
	}
	rs := &RawSocket{fd: -1, ifindex: l.Attrs().Index}
	err = r.Do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(EtherTypeTest)))
		if err != nil {
			return err
		}
		rs.fd = fd
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(EtherTypeTest), Ifindex: rs.ifindex})
	})
	if err != nil {
		rs.Close()
		return nil, fmt.Errorf("afxdp: raw socket on %s: %w", name, err)
	}
	// A large receive buffer, so a sink that reads after a burst loses
	// nothing to its own socket.
	_ = unix.SetsockoptInt(rs.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 32<<20)
	return rs, nil
}

// Send transmits one frame. ENOBUFS means the frame was dropped on the
// way (veth's peer queue full); the caller may retry.
func (rs *RawSocket) Send(frame []byte) error {
	_, err := unix.Write(rs.fd, frame)
	return err
}

// Recv reads one incoming frame into buf, waiting up to timeout; it returns
// 0 and no error on timeout.
func (rs *RawSocket) Recv(buf []byte, timeout time.Duration) (int, error) {
	fds := []unix.PollFd{{Fd: int32(rs.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(timeout.Milliseconds()))
	if err != nil && err != unix.EINTR {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	m, _, err := unix.Recvfrom(rs.fd, buf, unix.MSG_DONTWAIT)
	if err == unix.EAGAIN {
		return 0, nil
	}
	return m, err
}

// Drops returns the frames the socket's receive queue dropped
// (PACKET_STATISTICS tp_drops; reading resets the kernel's counters, so
// the socket keeps the sum).
func (rs *RawSocket) Drops() (uint64, error) {
	st, err := unix.GetsockoptTpacketStats(rs.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return 0, err
	}
	return uint64(st.Drops), nil
}

// Close closes the socket.
func (rs *RawSocket) Close() {
	if rs.fd >= 0 {
		_ = unix.Close(rs.fd)
		rs.fd = -1
	}
}

// TestFrame builds a test frame of n bytes (n ≥ 22) from src to dst with
// EtherTypeTest, a sequence number at bytes 14..21, and a payload pattern
// derived from it.
func TestFrame(buf []byte, n int, dst, src []byte, seq uint64) []byte {
	f := buf[:n]
	copy(f[0:6], dst)
	copy(f[6:12], src)
	f[12], f[13] = EtherTypeTest>>8, EtherTypeTest&0xff
	for i := 0; i < 8; i++ {
		f[14+i] = byte(seq >> (8 * i))
	}
	for i := 22; i < n; i++ {
		f[i] = byte(seq*31 + uint64(i))
	}
	return f
}

// FrameSeq reads the sequence number of a test frame; ok is false for
// anything else.
func FrameSeq(f []byte) (seq uint64, ok bool) {
	if len(f) < 22 || f[12] != EtherTypeTest>>8 || f[13] != EtherTypeTest&0xff {
		return 0, false
	}
	for i := 0; i < 8; i++ {
		seq |= uint64(f[14+i]) << (8 * i)
	}
	return seq, true
}
