package iflib_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
)

// Benchmarks of iflib's transmit path on the fake device (busdma checker
// off), which completes every doorbell at once: the figures are iflib's own
// cost plus the device's read of each frame, per mode, one sender. BenchmarkZoneGetFree
// is the baseline of the packet zone alone.
//
//	go test -run '^$' -bench . -benchmem ./iflib/
func BenchmarkTransmit(b *testing.B) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		b.Run(mode.String(), func(b *testing.B) {
			f, z, c := benchFake(b, mode)
			drops := 0
			b.ReportAllocs()
			b.SetBytes(64)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// mpring drops what a full ring cannot take (ENOBUFS): on a
				// busy machine the consumer can fall behind one sender.
				switch err := f.ctx.Transmit(benchPacket(b, z, c)); err {
				case nil:
				case iflib.ErrNoBufs:
					drops++
				default:
					if err != nil { // no testify call per iteration: the timed loop stays bare
						require.NoError(b, err)
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
			benchDone(f, z, c)
		})
	}
}

// BenchmarkTransmitBatch sends batches of 32 with TransmitBatch.
func BenchmarkTransmitBatch(b *testing.B) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple} {
		b.Run(mode.String(), func(b *testing.B) {
			f, z, c := benchFake(b, mode)
			batch := make([]*iflib.Packet, 32)
			drops := 0
			b.ReportAllocs()
			b.SetBytes(64)
			b.ResetTimer()
			for i := 0; i < b.N; i += len(batch) {
				for k := range batch {
					batch[k] = benchPacket(b, z, c)
				}
				n, err := f.ctx.TransmitBatch(batch)
				if err != nil && err != iflib.ErrNoBufs { // no testify call per batch in the timed loop
					require.NoError(b, err)
				}
				drops += len(batch) - n
			}
			b.StopTimer()
			b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
			benchDone(f, z, c)
		})
	}
}

// benchFake is a running fake device in mode that discards what it sends,
// with a TX zone and a cache in front of it.
func benchFake(b *testing.B, mode iflib.TxMode) (*fakeNIC, *iflib.Zone, *iflib.ZoneCache) {
	// No timer in the timed loop: its watchdog pass could reset the
	// interface under load (ENETDOWN), and it is not the transmit path.
	f := newFake(b, fakeOpts{cfg: iflib.Config{TxMode: mode, TimerInterval: time.Hour}, noChecker: true})
	f.discard = true
	z := f.zone(iflib.MCLBytes, 4096)
	require.NoError(b, f.ctx.Init())
	return f, z, z.NewCache()
}

// benchPacket is a 64-byte packet from the cache (or, when the cache is
// dry because the ring holds its packets, from the zone).
func benchPacket(b *testing.B, z *iflib.Zone, c *iflib.ZoneCache) *iflib.Packet {
	p, err := c.Get()
	if err != nil {
		c.Flush()
		p, err = z.Get()
		require.NoError(b, err)
	}
	p.SetLen(64)
	return p
}

func benchDone(f *fakeNIC, z *iflib.Zone, c *iflib.ZoneCache) {
	c.Flush()
	_ = f.ctx.Stop()
	f.close(z)
}

// BenchmarkZoneGetFree is a packet's round trip through a zone cache, the
// floor under every transmit above.
func BenchmarkZoneGetFree(b *testing.B) {
	f := newFake(b, fakeOpts{noChecker: true})
	z := f.zone(iflib.MCLBytes, 4096)
	c := z.NewCache()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := c.Get()
		if err != nil { // no testify call per iteration: the timed loop stays bare
			require.NoError(b, err)
		}
		c.Put(p)
	}
	b.StopTimer()
	c.Flush()
	f.close(z)
}
