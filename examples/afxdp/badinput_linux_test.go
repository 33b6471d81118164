package afxdp

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/goiflib/goiflib/iflib"
)

func TestUMEMBadFrameSize(t *testing.T) {
	for _, fs := range []int{1024, 3000, 2049, 8192, -4096} {
		_, err := NewUMEM(UMEMConfig{FrameSize: fs, Frames: 16})
		assert.ErrorIs(t, err, ErrFrameSize, "frame size %d", fs)
		var ce *ConfigError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "UMEMConfig.FrameSize", ce.Field)
		assert.Equal(t, fs, ce.Value)
	}
	_, err := NewUMEM(UMEMConfig{Frames: -1})
	assert.ErrorIs(t, err, ErrConfig)
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "UMEMConfig.Frames", ce.Field)
	for _, fs := range []int{2048, 4096} {
		u, err := NewUMEM(UMEMConfig{FrameSize: fs, Frames: 16})
		require.NoError(t, err)
		assert.Equal(t, fs, u.FrameSize())
		assert.Equal(t, 16*fs, u.Size())
		require.NoError(t, u.Close())
		assert.ErrorIs(t, u.Close(), ErrClosed)
	}
}

// DefaultFrames is a constant and so spells out iflib's default zone size:
// it must stay two RX zones, a TX zone of 2048 and the ring shadows.
func TestDefaultFramesFollowsIflib(t *testing.T) {
	require.Equal(t, 2*iflib.DefaultRxZoneSize(DefaultNRxd)+2048+64, DefaultFrames)
}

func TestUMEMZoneTooSmall(t *testing.T) {
	u, err := NewUMEM(UMEMConfig{Frames: 8})
	require.NoError(t, err)
	defer u.Close()
	z, err := u.NewZone("tx", 8)
	require.NoError(t, err)
	assert.Equal(t, 8, z.Size())
	_, err = u.NewZone("more", 1)
	assert.ErrorIs(t, err, ErrUMEMTooSmall)
}

// TestAttachBadInput: every misconfiguration is a typed error, and nothing
// (socket, program, map, fd, goroutine) is left behind by the failures.
func TestAttachBadInput(t *testing.T) {
	needAFXDP(t)
	rig := newRig(t, RigConfig{})
	p := rig.Pairs[0]
	before := snapshot(t, rig)
	cases := []struct {
		name  string
		cfg   Config
		want  error
		field string // the *ConfigError's Field; "" when the error is not one
	}{
		{"missing interface", Config{Interface: "nosuch0"}, ErrNoInterface, ""},
		{"empty interface", Config{}, ErrNoInterface, "Interface"},
		{"queue out of range", Config{Interface: p.A, QueueIDs: []int{1}}, ErrQueueID, "QueueIDs"},
		{"negative queue", Config{Interface: p.A, QueueIDs: []int{-1}}, ErrQueueID, "QueueIDs"},
		{"repeated queue", Config{Interface: p.A, QueueIDs: []int{0, 0}}, ErrQueueID, "QueueIDs"},
		{"ring not a power of two", Config{Interface: p.A, NRxd: 1000}, ErrConfig, "NRxd"},
		{"ring too small", Config{Interface: p.A, NTxd: 16}, ErrConfig, "NTxd"},
		{"bad XDP mode", Config{Interface: p.A, XDPMode: 7}, ErrConfig, "XDPMode"},
		{"bad bind mode", Config{Interface: p.A, Bind: -1}, ErrConfig, "Bind"},
		{"bad namespace", Config{Interface: p.A, NetNS: "/nonexistent/ns"}, ErrConfig, "NetNS"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.cfg.NetNS == "" {
				c.cfg.NetNS = rig.NetNSPath()
			}
			d, err := Attach(c.cfg, iflib.Attachment{})
			require.Error(t, err)
			assert.Nil(t, d)
			assert.ErrorIs(t, err, c.want)
			var ce *ConfigError
			if c.field == "" {
				assert.False(t, errors.As(err, &ce), "%v", err)
				return
			}
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, c.field, ce.Field)
			assert.Contains(t, err.Error(), c.field+" = ")
			if c.field == "NetNS" {
				assert.ErrorIs(t, err, os.ErrNotExist, "the cause is kept")
			}
		})
	}
	t.Run("UMEM too small", func(t *testing.T) {
		u, err := NewUMEM(UMEMConfig{Frames: 64})
		require.NoError(t, err)
		_, err = Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), UMEM: u, NRxd: 256}, iflib.Attachment{})
		assert.ErrorIs(t, err, ErrUMEMTooSmall)
		require.NoError(t, u.Close(), "a failed Attach must release the UMEM")
	})
	t.Run("MTU larger than MaxFrags frames", func(t *testing.T) {
		// 2048-byte frames hold 1792 bytes after the headroom: 16 of them
		// (multi-buffer) take an MTU up to 28658.
		require.NoError(t, rig.Netlink().LinkSetMTU(mustLink(t, rig, p.A), 30000))
		defer func() { require.NoError(t, rig.Netlink().LinkSetMTU(mustLink(t, rig, p.A), 1500)) }()
		u, err := NewUMEM(UMEMConfig{FrameSize: 2048, Frames: 4096})
		require.NoError(t, err)
		defer u.Close()
		_, err = Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), UMEM: u}, iflib.Attachment{})
		assert.ErrorIs(t, err, ErrFrameTooBig)
		assert.Contains(t, err.Error(), "MTU 30000 of "+p.A)
	})
	t.Run("zero-copy on veth", func(t *testing.T) {
		d, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), Bind: BindZeroCopy, NRxd: 64, NTxd: 64}, iflib.Attachment{})
		require.NoError(t, err)
		err = d.Context().Init()
		assert.ErrorIs(t, err, ErrZeroCopy)
		assertClean(t, rig, p.A)
		require.NoError(t, d.Context().Detach())
	})
	t.Run("queue taken by another socket", func(t *testing.T) {
		first, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), NRxd: 64, NTxd: 64}, iflib.Attachment{})
		require.NoError(t, err)
		require.NoError(t, first.Context().Init())
		second, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), NRxd: 64, NTxd: 64}, iflib.Attachment{})
		require.NoError(t, err)
		err = second.Context().Init()
		require.ErrorIs(t, err, unix.EBUSY)
		assert.Contains(t, err.Error(), "bind "+p.A+" queue 0: the queue is already bound by another AF_XDP socket")
		assert.NotContains(t, err.Error(), "ZEROCOPY", "the busy queue is not the zero-copy attempt's fault")
		require.NoError(t, second.Context().Detach())
		require.NoError(t, first.Context().Detach())
	})
	t.Run("UMEM busy", func(t *testing.T) {
		u, err := NewUMEM(UMEMConfig{Frames: 2048})
		require.NoError(t, err)
		d, err := Attach(Config{Interface: p.A, NetNS: rig.NetNSPath(), UMEM: u, NRxd: 64, NTxd: 64}, iflib.Attachment{})
		require.NoError(t, err)
		assert.ErrorIs(t, u.Close(), ErrBusy)
		require.NoError(t, d.Context().Detach())
		require.NoError(t, u.Close())
	})
	before.requireSame(t, rig)
}

func mustLink(t *testing.T, rig *Rig, name string) netlink.Link {
	l, err := rig.Netlink().LinkByName(name)
	require.NoError(t, err)
	return l
}
