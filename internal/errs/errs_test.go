package errs_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/bufring"
	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/errs"
	"github.com/goiflib/goiflib/mpring"
)

// TestOneClass: a bad argument refused by each package is one error
// class: errors.Is matches every package's ErrInvalid (one value),
// errors.As finds the one *ConfigError type naming the package and the
// field, and the message names both.
func TestOneClass(t *testing.T) {
	space, dev, m := simMap(t)
	topo, err := cpumap.Synthetic(cpumap.SyntheticConfig{Packages: 1, CoresPerPackage: 4, ThreadsPerCore: 1})
	require.NoError(t, err)
	nop := func(*mpring.Ring[int], int, int) int { return 0 }
	never := func(*mpring.Ring[int]) bool { return false }

	for _, c := range []struct {
		pkg, field string
		value      any
		msg        string
		kind       error // a package sentinel it matches too (nil: none)
		call       func() error
	}{
		{"iflib", "Zone.space", nil, "iflib: invalid Zone.space: nil address space", nil,
			func() error { _, err := iflib.NewZone(nil, "tx", iflib.MCLBytes, 8); return err }},
		{"busdma", "TagConfig.Alignment", 3, "busdma: invalid TagConfig.Alignment = 3: not a power of two", nil,
			func() error {
				_, err := busdma.NewTag(dev.Tag(), busdma.TagConfig{Alignment: 3, MaxSize: 64, NSegments: 1, MaxSegSize: 64})
				return err
			}},
		{"busdma", "Load buffer", nil, "busdma: invalid Load buffer: nil, empty or larger than the tag's maxsize", nil,
			func() error { _, err := m.Load(nil, nil); return err }},
		{"bufring", "New(size)", 3, "bufring: invalid New(size) = 3: want a power of two in [2, 2^31]", nil,
			func() error { _, err := bufring.New[int](3); return err }},
		{"bufring", "DRBRConfig.Xmit", nil, "bufring: invalid DRBRConfig.Xmit: want a non-nil func", nil,
			func() error { _, err := bufring.NewDRBRWith(bufring.DRBRConfig[int]{}); return err }},
		{"mpring", "New(size)", 1, "mpring: invalid New(size) = 1: want 3..65536", nil,
			func() error { _, err := mpring.New(1, nop, never); return err }},
		{"cpumap", "Request.RxQueues, TxQueues", "0, 0",
			"cpumap: invalid Request.RxQueues, TxQueues = 0, 0: want 0..65535 each, at least one queue: queue count out of range",
			cpumap.ErrQueueCount,
			func() error {
				_, err := cpumap.NewAllocator(topo, cpumap.AllocatorOptions{}).Place(cpumap.Request{})
				return err
			}},
		{"cpumap", "Policy.CoreOffset", 9, "cpumap: invalid Policy.CoreOffset = 9: out of range [0, 3]: core offset out of range",
			cpumap.ErrCoreOffset,
			func() error {
				_, err := cpumap.NewAllocator(topo, cpumap.AllocatorOptions{}).Place(cpumap.Request{RxQueues: 1, TxQueues: 1,
					Policy: cpumap.Policy{CoreOffset: cpumap.Offset(9)}})
				return err
			}},
		{"simnic", "Config.Unit", -1, "simnic: invalid Config.Unit = -1: negative", nil,
			func() error { _, err := simnic.New(space, simnic.Config{Unit: -1}); return err }},
	} {
		t.Run(c.pkg+"/"+c.field, func(t *testing.T) {
			err := c.call()
			require.Error(t, err)
			for _, sentinel := range []error{iflib.ErrInvalid, iflib.ErrConfig, busdma.ErrInvalid, bufring.ErrInvalid,
				mpring.ErrInvalid, cpumap.ErrInvalid, simnic.ErrConfig} {
				assert.ErrorIs(t, err, sentinel)
			}
			if c.kind != nil {
				assert.ErrorIs(t, err, c.kind)
			}
			var ce *iflib.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, c.pkg, ce.Pkg)
			assert.Equal(t, c.field, ce.Field)
			assert.Equal(t, c.value, ce.Value)
			assert.EqualError(t, err, c.msg)
			// The aliases are one type: As into any package's finds it.
			var be *busdma.ConfigError
			var ce2 *cpumap.ConfigError
			assert.True(t, errors.As(err, &be) && errors.As(err, &ce2))
		})
	}
}

// TestSentinels: each package's name for the invalid-argument sentinel is
// one value; cpumap's bad-argument sentinels match it, its environment
// sentinels do not.
func TestSentinels(t *testing.T) {
	for _, s := range []error{iflib.ErrInvalid, iflib.ErrConfig, busdma.ErrInvalid, bufring.ErrInvalid,
		mpring.ErrInvalid, cpumap.ErrInvalid, simnic.ErrConfig} {
		assert.Same(t, errs.ErrInvalid, s)
	}
	for _, s := range []error{cpumap.ErrQueueCount, cpumap.ErrBehavior, cpumap.ErrCacheLineSize, cpumap.ErrEmptyCPUSet,
		cpumap.ErrCPUNotInTopology, cpumap.ErrCoreOffset, cpumap.ErrBadCPUList, cpumap.ErrBadSynthetic, cpumap.ErrCPURange} {
		assert.ErrorIs(t, s, errs.ErrInvalid, s.Error())
		assert.NotSame(t, errs.ErrInvalid, s)
	}
	for _, s := range []error{cpumap.ErrMalformedSysfs, cpumap.ErrCPUNotOnline, cpumap.ErrPinNotPermitted,
		cpumap.ErrPinUnsupported, cpumap.ErrUnpinThread} {
		assert.NotErrorIs(t, s, errs.ErrInvalid, s.Error())
	}
	_, err := cpumap.ParseCPUList("0-x")
	assert.ErrorIs(t, err, cpumap.ErrInvalid, "a CPU list that does not parse is a bad argument")
}

// TestConfigErrorFormat: the message leaves out a nil value and the
// cause's prefix when it is the same package's; Unwrap gives the cause.
func TestConfigErrorFormat(t *testing.T) {
	cause := errors.New("x: no such thing")
	e := &errs.ConfigError{Pkg: "x", Field: "F", Value: 0, Reason: "bad", Err: cause}
	assert.EqualError(t, e, "x: invalid F = 0: bad: no such thing")
	assert.ErrorIs(t, e, cause)
	assert.ErrorIs(t, e, errs.ErrInvalid)
	assert.EqualError(t, &errs.ConfigError{Pkg: "y", Field: "G", Err: cause}, "y: invalid G: x: no such thing")
	kind := errs.Invalid("x: kind")
	assert.ErrorIs(t, kind, errs.ErrInvalid)
	assert.EqualError(t, kind, "x: kind")
}

// TestHotPathNoAlloc: the load path's bad-argument errors are built once.
func TestHotPathNoAlloc(t *testing.T) {
	_, _, m := simMap(t)
	var segs [2]busdma.Segment
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := m.Load(nil, segs[:0]); !errors.Is(err, busdma.ErrInvalid) {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// simMap returns a device without a checker on a new sim space (closed at
// cleanup) and a map of a one-segment 2 KiB tag: what a bad load needs.
func simMap(t *testing.T) (*busdma.SimSpace, *busdma.Device, *busdma.Map) {
	t.Helper()
	space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 1 << 20})
	require.NoError(t, err)
	dev, err := busdma.NewDevice(space, busdma.DeviceConfig{Name: "t0"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	tag, err := busdma.NewTag(dev.Tag(), busdma.TagConfig{MaxSize: 2048, NSegments: 1, MaxSegSize: 2048})
	require.NoError(t, err)
	m, err := tag.CreateMap()
	require.NoError(t, err)
	return space, dev, m
}
