package iflib_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/cpumap"
	"github.com/goiflib/goiflib/iflib"
)

// Issue 20 §2 item 4: every numeric field of Config, SharedCtx and
// SoftcCtx, given nonsense (0 where it has no default, negative, odd, huge,
// values whose products overflow), is refused by Register with a
// *ConfigError naming the field, or clamped as documented; nothing stays
// allocated after a refusal.
func TestConfigNonsenseIsConfigError(t *testing.T) {
	const huge = 1 << 40
	type tc struct {
		field  string
		cfg    func(*iflib.Config)
		shared func(*iflib.SharedCtx)
		softc  func(*iflib.SoftcCtx)
	}
	cases := []tc{
		{field: "Unit", cfg: func(c *iflib.Config) { c.Unit = -1 }},
		{field: "RxBudget", cfg: func(c *iflib.Config) { c.RxBudget = huge }},
		{field: "RxBudget", cfg: func(c *iflib.Config) { c.RxBudget = math.MaxInt }},
		{field: "RxBudget", cfg: func(c *iflib.Config) { c.RxBudget = -1 }},
		{field: "DRBRSize", cfg: func(c *iflib.Config) { c.TxMode, c.DRBRSize = iflib.TxModeDRBR, 1 }},
		{field: "DRBRSize", cfg: func(c *iflib.Config) { c.TxMode, c.DRBRSize = iflib.TxModeDRBR, huge }},
		{field: "DRBRSize", cfg: func(c *iflib.Config) { c.DRBRSize = 3 }},
		{field: "DRBRSize", cfg: func(c *iflib.Config) { c.DRBRSize = math.MinInt }},
		{field: "DRBRDrainQuota", cfg: func(c *iflib.Config) { c.DRBRDrainQuota = -1 }},
		{field: "CoreOffset", cfg: func(c *iflib.Config) { c.CoreOffset = huge }},
		{field: "CoreOffset", cfg: func(c *iflib.Config) { c.CoreOffset = math.MaxInt }},
		{field: "OverrideNTxds[0]", cfg: func(c *iflib.Config) { c.OverrideNTxds[0] = 3 }},
		{field: "OverrideNRxds[0]", cfg: func(c *iflib.Config) { c.OverrideNRxds[0] = -8 }},
		{field: "TxReclaimThresh", cfg: func(c *iflib.Config) { c.TxReclaimThresh = -1 }},
		{field: "TxReclaimThresh", cfg: func(c *iflib.Config) { c.TxReclaimThresh = huge }},
		{field: "TxMode", cfg: func(c *iflib.Config) { c.TxMode = 7 }},
		{field: "RxZoneSize", cfg: func(c *iflib.Config) { c.RxZoneSize = -1 }},
		{field: "RxZoneSize", cfg: func(c *iflib.Config) { c.RxZoneSize = huge }},
		{field: "PollInterval", cfg: func(c *iflib.Config) { c.PollInterval = -1 }},
		{field: "TimerInterval", cfg: func(c *iflib.Config) { c.TimerInterval = math.MinInt64 }},
		{field: "StopTimeout", cfg: func(c *iflib.Config) { c.StopTimeout = -1 }},
		{field: "OverrideNTxQs", cfg: func(c *iflib.Config) { c.OverrideNTxQs = -1 }},

		{field: "QAlign", shared: func(s *iflib.SharedCtx) { s.QAlign = 3 }},
		{field: "QAlign", shared: func(s *iflib.SharedCtx) { s.QAlign = huge }},
		{field: "QAlign", shared: func(s *iflib.SharedCtx) { s.QAlign = -4096 }},
		{field: "TxMaxSize", shared: func(s *iflib.SharedCtx) { s.TxMaxSize = -1 }},
		{field: "TSOMaxSegSize", shared: func(s *iflib.SharedCtx) { s.TSOMaxSegSize = -1 }},
		{field: "RxMaxSegSize", shared: func(s *iflib.SharedCtx) { s.RxMaxSegSize = -1 }},
		{field: "RxNSegments", shared: func(s *iflib.SharedCtx) { s.RxNSegments = -1 }},
		{field: "NTxd{Min,Max}[0]", shared: func(s *iflib.SharedCtx) { s.NTxdMax[0] = huge }},
		{field: "NTxdDefault[0]", shared: func(s *iflib.SharedCtx) { s.NTxdMax[0], s.NTxdDefault[0] = iflib.MaxRingSize, huge }},
		{field: "NRxd{Min,Max}[0]", shared: func(s *iflib.SharedCtx) { s.NRxdMin[0] = -1 }},
		{field: "NTxQs", shared: func(s *iflib.SharedCtx) { s.NTxQs = 9 }},
		// Positive but useless: every packet would be ErrTooBig or need
		// more segments than any budget (audit20 finding 4).
		{field: "TxMaxSize", shared: func(s *iflib.SharedCtx) { s.TxMaxSize = 1 }},
		{field: "TxMaxSize", shared: func(s *iflib.SharedCtx) { s.TxMaxSize = huge }},
		{field: "TSOMaxSize", shared: func(s *iflib.SharedCtx) { s.TSOMaxSize = 59 }},
		{field: "TxMaxSegSize", shared: func(s *iflib.SharedCtx) { s.TxMaxSegSize = 1 }},
		{field: "TSOMaxSegSize", shared: func(s *iflib.SharedCtx) { s.TSOMaxSegSize = 255 }},
		{field: "RxMaxSize", shared: func(s *iflib.SharedCtx) { s.RxMaxSize = iflib.MaxTxMaxSize + 1 }},
		{field: "RxMaxSegSize", shared: func(s *iflib.SharedCtx) { s.RxMaxSegSize = huge }},
		{field: "RxNSegments", shared: func(s *iflib.SharedCtx) { s.RxNSegments = iflib.MaxRxSegs + 1 }},
		{field: "NFL", shared: func(s *iflib.SharedCtx) { s.NFL = 2 }},

		{field: "NTxQSetsMax", softc: func(s *iflib.SoftcCtx) { s.NTxQSetsMax = huge }},
		{field: "NRxQSetsMax", softc: func(s *iflib.SoftcCtx) { s.NRxQSetsMax = 0 }},
		// A power of two far beyond any NIC: once an RSS table of 2^40
		// entries was allocated (FuzzModel).
		{field: "RSSTableSize", softc: func(s *iflib.SoftcCtx) { s.RSSTableSize = 1 << 40 }},
		{field: "MaxFrameSize", softc: func(s *iflib.SoftcCtx) { s.MaxFrameSize = -1 }},
		{field: "CapEnable", softc: func(s *iflib.SoftcCtx) { s.Capabilities, s.CapEnable = iflib.CapTxCsum, iflib.CapTSO4 }},
		{field: "NTxd[0]", softc: func(s *iflib.SoftcCtx) { s.NTxd[0] = 3 }},
		{field: "NTxd[0]", softc: func(s *iflib.SoftcCtx) { s.NTxd[0] = huge }},
		{field: "NTxd[0]", softc: func(s *iflib.SoftcCtx) { s.NTxd[0] = 2 }}, // no room for one packet and the pad
		{field: "NRxd[0]", softc: func(s *iflib.SoftcCtx) { s.NRxd[0] = -256 }},
		{field: "TxdSize[0]", softc: func(s *iflib.SoftcCtx) { s.TxdSize[0] = huge }},
		// TxdSize × NTxd overflows int: once a 256-byte ring was accepted.
		{field: "TxdSize[0]", softc: func(s *iflib.SoftcCtx) { s.TxdSize[0] = math.MaxInt/256 + 2 }},
		{field: "TxQSizes[0]", softc: func(s *iflib.SoftcCtx) { s.TxQSizes[0] = huge }},
		{field: "RxQSizes[0]", softc: func(s *iflib.SoftcCtx) { s.RxQSizes[0] = -1 }},
		{field: "TxNSegments", softc: func(s *iflib.SoftcCtx) { s.TxNSegments = 0 }},
		{field: "TxTSOSegmentsMax", softc: func(s *iflib.SoftcCtx) { s.TxTSOSegmentsMax = -1 }},
		{field: "TxTSOSizeMax", softc: func(s *iflib.SoftcCtx) { s.TxTSOSizeMax = -1 }},
		{field: "TxPad", softc: func(s *iflib.SoftcCtx) { s.TxPad = -1 }},
		{field: "TxPad", softc: func(s *iflib.SoftcCtx) { s.TxPad = huge }},
		{field: "RSSTableSize", softc: func(s *iflib.SoftcCtx) { s.RSSTableSize = 3 }},
		{field: "DMAWidth", softc: func(s *iflib.SoftcCtx) { s.DMAWidth = 65 }},
		{field: "MinFrameSize", softc: func(s *iflib.SoftcCtx) { s.MinFrameSize = huge }},
		{field: "MinFrameSize", softc: func(s *iflib.SoftcCtx) { s.MinFrameSize = -1 }},
		{field: "MaxFrameSize", softc: func(s *iflib.SoftcCtx) { s.MaxFrameSize = huge }},
		{field: "RxdBufSize[0]", softc: func(s *iflib.SoftcCtx) { s.RxdBufSize[0] = huge }},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			space, err := busdma.NewSimSpace(busdma.SimConfig{Size: 8 << 20, ContigSize: 2 << 20})
			require.NoError(t, err)
			o := fakeOpts{space: space, shared: c.shared, softc: c.softc}
			if c.cfg != nil {
				c.cfg(&o.cfg)
			}
			_, err = tryFake(t, o)
			require.ErrorIs(t, err, iflib.ErrConfig)
			var ce *iflib.ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, c.field, ce.Field, "%v", err)
			require.Zero(t, space.Allocated(), "a refused Register left memory allocated")
			if c.field == "CoreOffset" {
				require.ErrorIs(t, err, cpumap.ErrCoreOffset)
			}
		})
	}

	// Documented clamps.
	f := newFake(t, fakeOpts{softc: func(s *iflib.SoftcCtx) {
		s.NTxQSets, s.NRxQSets = huge, -1 // the maximum (1)
		s.TxNSegments = huge              // min(ntxd/12, IFLIB_MAX_TX_SEGS)
		s.TxTSOSegmentsMax = huge
	}, cfg: iflib.Config{OverrideNRxds: [8]int{1 << 20}, RxZoneSize: 1024}}) // clamped to NRxdMax
	sc := f.ctx.Softc()
	require.Equal(t, 1, f.ctx.NumTxQueues())
	require.Equal(t, 1, f.ctx.NumRxQueues())
	require.Equal(t, 256/iflib.MaxSinglePacketFraction, sc.TxNSegments)
	require.Equal(t, 256/iflib.MaxSinglePacketFraction, sc.TxTSOSegmentsMax)
	require.Equal(t, 4096, sc.NRxd[0])
	f.close()
	f = newFake(t, fakeOpts{ntxd: 4096, softc: func(s *iflib.SoftcCtx) { s.TxNSegments = huge }})
	require.Equal(t, iflib.MaxTxSegs, f.ctx.Softc().TxNSegments)
	f.close()
}
