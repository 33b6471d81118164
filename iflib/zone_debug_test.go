package iflib_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/race"
)

// TestUseAfterFreeCaughtByDefaultUnderRace is issue 23 item 6: a Transmit
// that failed freed the packet; the caller retries it after another owner
// took a packet from the zone. With the LIFO depot the other owner got the
// same packet, and the retry would send its data with a nil error; in
// debug mode, on by default under -race, the depot is a FIFO quarantine, so
// the other owner gets another packet and the retry is ErrUseAfterFree,
// reported with the site of the free. Without -race the test shows the
// hazard of the default and turns debug mode on by hand.
func TestUseAfterFreeCaughtByDefaultUnderRace(t *testing.T) {
	f := newFake(t, fakeOpts{})
	z := f.zone(iflib.MCLBytes, 8)
	require.Equal(t, race.Enabled, iflib.DebugZonesByDefault)
	require.Equal(t, race.Enabled, z.Debug(), "debug mode is on by default exactly in race builds")
	require.NoError(t, f.ctx.Init())
	if !race.Enabled {
		p := pkt(t, z, 100, 1)
		p.Free()
		q := pkt(t, z, 100, 2)
		require.Same(t, p, q, "without debug mode the depot hands the freed packet out again at once")
		q.Free()
		z.SetDebug(&iflib.ZoneDebug{})
		require.True(t, z.Debug())
	}
	p := pkt(t, z, 100, 1)
	p.Hdr.Len = 7 // a bad length: Transmit frees p
	require.ErrorIs(t, f.ctx.Transmit(p), iflib.ErrBadLength)
	q := pkt(t, z, 100, 2) // another owner
	require.NotSame(t, p, q, "the quarantine hands out another packet")
	require.ErrorIs(t, f.ctx.Transmit(p), iflib.ErrUseAfterFree, "the retry is refused")
	reps := f.takeClientReports()
	require.Len(t, reps, 1)
	assert.Contains(t, reps[0].Msg, "used after free")
	assert.Contains(t, reps[0].Msg, "freed at ")
	assert.Contains(t, reps[0].Msg, "zone_debug_test.go", "the free site is the failed Transmit here")
	assert.Equal(t, byte(2), q.Bytes()[0], "the other owner's packet is untouched")
	q.Free()
	z.SetDebug(nil)
	assert.False(t, z.Debug(), "SetDebug(nil) turns it off, also under -race")
	f.close(z)
}

// TestZoneDepotOrder: the depot ring hands out the newest free packet
// (LIFO) normally and the oldest (FIFO) in debug mode, across wraps of the
// ring, and never loses or repeats one.
func TestZoneDepotOrder(t *testing.T) {
	f := newFake(t, fakeOpts{})
	z := f.zone(iflib.MCLBytes, 5)
	for _, debug := range []bool{false, true} {
		if debug {
			z.SetDebug(&iflib.ZoneDebug{})
		} else {
			z.SetDebug(nil)
		}
		var held []*iflib.Packet
		for range 3 {
			p, err := z.Get()
			require.NoError(t, err)
			held = append(held, p)
		}
		for round := range 20 {
			// Free the oldest held packet, then take one: LIFO gives it
			// back, FIFO gives the packet freed longest ago.
			freed := held[0]
			held = held[1:]
			freed.Free()
			p, err := z.Get()
			require.NoError(t, err)
			if debug {
				require.NotSame(t, freed, p, "round %d", round)
			} else {
				require.Same(t, freed, p, "round %d", round)
			}
			held = append(held, p)
			seen := map[*iflib.Packet]bool{}
			for _, h := range held {
				require.False(t, seen[h], "a packet held twice")
				seen[h] = true
			}
			require.Equal(t, 2, z.Available())
		}
		for _, p := range held {
			p.Free()
		}
		require.Equal(t, 5, z.Available())
		require.Zero(t, z.Outstanding())
	}
	f.close(z)
}

// BenchmarkZoneDebug is what debug mode costs a Get and Free outside
// race builds (under -race it is on by default, and -race timings mean
// nothing): through a ZoneCache (the queues' path; debug mode passes it
// through to the depot) and on the depot itself.
//
//	go test -run '^$' -bench BenchmarkZoneDebug -count 5 ./iflib
func BenchmarkZoneDebug(b *testing.B) {
	for _, c := range []struct {
		name         string
		debug, cache bool
	}{
		{"cache/off", false, true}, {"cache/debug", true, true},
		{"depot/off", false, false}, {"depot/debug", true, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newFake(b, fakeOpts{noChecker: true})
			z := f.zone(iflib.MCLBytes, 4096)
			if c.debug {
				z.SetDebug(&iflib.ZoneDebug{})
			} else {
				z.SetDebug(nil)
			}
			zc := z.NewCache()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				var p *iflib.Packet
				var err error
				if c.cache {
					p, err = zc.Get()
				} else {
					p, err = z.Get()
				}
				if err != nil {
					b.Fatal(err)
				}
				if c.cache {
					zc.Put(p)
				} else {
					p.Free()
				}
			}
			b.StopTimer()
			zc.Flush()
			f.close(z)
		})
	}
}
