package iflib_test

import (
	"testing"

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
			f := newFake(b, fakeOpts{cfg: iflib.Config{TxMode: mode}, noChecker: true})
			f.discard = true
			z := f.zone(iflib.MCLBytes, 4096)
			if err := f.ctx.Init(); err != nil {
				b.Fatal(err)
			}
			c := z.NewCache()
			b.ReportAllocs()
			b.SetBytes(64)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p, err := c.Get()
				if err != nil {
					c.Flush()
					if p, err = z.Get(); err != nil {
						b.Fatal(err)
					}
				}
				p.SetLen(64)
				if err := f.ctx.Transmit(p); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			c.Flush()
			_ = f.ctx.Stop()
			f.close(z)
		})
	}
}

// BenchmarkTransmitBatch sends batches of 32 with TransmitBatch.
func BenchmarkTransmitBatch(b *testing.B) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple} {
		b.Run(mode.String(), func(b *testing.B) {
			f := newFake(b, fakeOpts{cfg: iflib.Config{TxMode: mode}, noChecker: true})
			f.discard = true
			z := f.zone(iflib.MCLBytes, 4096)
			if err := f.ctx.Init(); err != nil {
				b.Fatal(err)
			}
			c := z.NewCache()
			batch := make([]*iflib.Packet, 32)
			drops := 0
			b.ReportAllocs()
			b.SetBytes(64)
			b.ResetTimer()
			for i := 0; i < b.N; i += len(batch) {
				for k := range batch {
					p, err := c.Get()
					if err != nil {
						c.Flush()
						if p, err = z.Get(); err != nil {
							b.Fatal(err)
						}
					}
					p.SetLen(64)
					batch[k] = p
				}
				// mpring drops what a full ring cannot take (ENOBUFS).
				n, err := f.ctx.TransmitBatch(batch)
				if err != nil && err != iflib.ErrNoBufs {
					b.Fatal(err)
				}
				drops += len(batch) - n
			}
			b.StopTimer()
			b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
			c.Flush()
			_ = f.ctx.Stop()
			f.close(z)
		})
	}
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
		if err != nil {
			b.Fatal(err)
		}
		c.Put(p)
	}
	b.StopTimer()
	c.Flush()
	f.close(z)
}
