package afxdp

import (
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The driver asks the interface's kernel driver two things netlink does
// not carry, through the ethtool ioctl (SIOCETHTOOL, include/uapi/linux/
// ethtool.h): how many RX queues are in use (ETHTOOL_GCHANNELS: an AF_XDP
// bind checks the queue id against real_num_rx_queues, which netlink's
// IFLA_NUM_RX_QUEUES, the allocated maximum, is not) and the link speed
// (ETHTOOL_GSET). Both run in the caller's thread's network namespace.

// ifreqData is struct ifreq with ifr_data: the name and a pointer, padded
// to sizeof(struct ifreq).
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolChannels is struct ethtool_channels.
type ethtoolChannels struct {
	cmd                                         uint32
	maxRx, maxTx, maxOther, maxCombined         uint32
	rxCount, txCount, otherCount, combinedCount uint32
}

// ethtoolCmd is struct ethtool_cmd (ETHTOOL_GSET), the fields up to the
// speed's high half; the tail is padding the kernel writes.
type ethtoolCmd struct {
	cmd           uint32
	supported     uint32
	advertising   uint32
	speed         uint16
	duplex        uint8
	port          uint8
	phyAddress    uint8
	transceiver   uint8
	autoneg       uint8
	mdioSupport   uint8
	maxtxpkt      uint32
	maxrxpkt      uint32
	speedHi       uint16
	ethTpMdix     uint8
	ethTpMdixCtrl uint8
	lpAdvertising uint32
	reserved      [2]uint32
}

// ifreqHW is struct ifreq with ifr_hwaddr (a struct sockaddr), as
// SIOCADDMULTI and SIOCDELMULTI take it.
type ifreqHW struct {
	name   [unix.IFNAMSIZ]byte
	family uint16
	data   [14]byte
	_      [8]byte
}

// multicastIoctl is SIOCADDMULTI (add) or SIOCDELMULTI on ifname
// (dev_mc_add_global, dev_mc_del_global: what `ip maddr add` does), in the
// calling thread's namespace.
func multicastIoctl(ifname string, addr [6]byte, add bool) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	req := ifreqHW{family: unix.AF_UNSPEC}
	copy(req.name[:unix.IFNAMSIZ-1], ifname)
	copy(req.data[:], addr[:])
	op := uintptr(unix.SIOCDELMULTI)
	if add {
		op = unix.SIOCADDMULTI
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), op, uintptr(unsafe.Pointer(&req))); e != 0 {
		return e
	}
	return nil
}

// globalMulticast lists the global multicast entries of ifname
// (/proc/net/dev_mcast of the calling thread's namespace: "index name
// users global address").
func globalMulticast(ifname string) ([][6]byte, error) {
	b, err := os.ReadFile("/proc/thread-self/net/dev_mcast")
	if err != nil {
		return nil, err
	}
	var out [][6]byte
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || f[1] != ifname || f[3] != "1" {
			continue
		}
		var a [6]byte
		if h, err := hex.DecodeString(f[4]); err == nil && len(h) == 6 {
			copy(a[:], h)
			out = append(out, a)
		}
	}
	return out, nil
}

// speedUnknown is SPEED_UNKNOWN (-1 as a u32; its low 16 bits in speed).
const speedUnknown = 0xffffffff

func ethtoolIoctl(ifname string, data unsafe.Pointer) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = data
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if e != 0 {
		return e
	}
	return nil
}

// rxQueuesInUse is the number of RX queues the interface uses now
// (rx_count + combined_count of ETHTOOL_GCHANNELS), or ok = false when
// its driver does not report channels (EOPNOTSUPP).
func rxQueuesInUse(ifname string) (n int, ok bool, err error) {
	ch := ethtoolChannels{cmd: unix.ETHTOOL_GCHANNELS}
	if err := ethtoolIoctl(ifname, unsafe.Pointer(&ch)); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("afxdp: ETHTOOL_GCHANNELS on %s: %w", ifname, err)
	}
	return int(ch.rxCount + ch.combinedCount), true, nil
}

// linkSpeed is the interface's speed in Mb/s (ETHTOOL_GSET), 0 when it
// is unknown or not reported.
func linkSpeed(ifname string) uint64 {
	c := ethtoolCmd{cmd: unix.ETHTOOL_GSET}
	if err := ethtoolIoctl(ifname, unsafe.Pointer(&c)); err != nil {
		return 0
	}
	s := uint32(c.speedHi)<<16 | uint32(c.speed)
	if s == speedUnknown || s == 0 {
		return 0
	}
	return uint64(s)
}
