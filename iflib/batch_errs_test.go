package iflib_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// TestTransmitBatchErrs: one batch mixing good packets, a bad length, a
// nil, a foreign packet and (mpring, simple) more packets than the rings
// take while the device holds its completions. Each packet's outcome is
// reported at its index, the entries iflib took are nil and only the
// foreign packet is left, the counters move by exactly the refusals, and
// once the device runs every accepted packet is sent, in order, and every
// packet of the zone comes back.
func TestTransmitBatchErrs(t *testing.T) {
	for _, tc := range []struct {
		mode iflib.TxMode
		fill int // good packets after the mixed head
		full bool
	}{
		// 64 descriptors (62 usable); mpring: 2046 more in the mp_ring.
		{iflib.TxModeMPRing, 2200, true},
		{iflib.TxModeSimple, 100, true},
		// drbr never drops for lack of room (a sender waits): no overflow.
		{iflib.TxModeDRBR, 100, false},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			f := newFake(t, fakeOpts{ntxd: 64, cfg: iflib.Config{TxMode: tc.mode, TimerInterval: time.Hour}})
			z := f.zone(iflib.MCLBytes, 4096)
			require.NoError(t, f.ctx.Init())
			f.setHold(true)

			good := func(id int) *iflib.Packet {
				p, err := z.Get()
				require.NoError(t, err)
				var b [64]byte
				binary.BigEndian.PutUint32(b[:], uint32(id))
				p.Append(b[:])
				return p
			}
			badLen := func() *iflib.Packet {
				p := good(-1)
				p.Hdr.Len = 63
				return p
			}
			foreign := &iflib.Packet{}

			// want[i]: the error expected at i (nil: accepted, or ErrNoBufs
			// once the rings are full); ids[i]: the id of a good packet.
			var pkts []*iflib.Packet
			var want []error
			var ids []int
			add := func(p *iflib.Packet, err error, id int) {
				pkts, want, ids = append(pkts, p), append(want, err), append(ids, id)
			}
			id := 0
			addGood := func() { add(good(id), nil, id); id++ }
			addGood()
			add(badLen(), iflib.ErrBadLength, -1)
			add(nil, iflib.ErrNilPacket, -1)
			add(foreign, iflib.ErrForeignPacket, -1)
			addGood()
			for i := 0; i < tc.fill; i++ {
				addGood()
			}
			add(badLen(), iflib.ErrBadLength, -1)
			add(foreign, iflib.ErrForeignPacket, -1)
			addGood()

			before := txStats(t, f.ctx)
			errs := make([]error, len(pkts))
			n := f.ctx.TransmitBatchErrs(pkts, errs)

			var accepted []int
			nobufs, refused := 0, 0
			for i, err := range errs {
				switch {
				case ids[i] >= 0 && err == nil:
					accepted = append(accepted, ids[i])
				case ids[i] >= 0 && tc.full && err == iflib.ErrNoBufs:
					nobufs++
				case ids[i] >= 0:
					require.FailNow(t, fmt.Sprintf("packet %d (good, id %d): %v", i, ids[i], err))
				default:
					require.ErrorIs(t, err, want[i], "packet %d", i)
					refused++
				}
				if want[i] == iflib.ErrForeignPacket {
					assert.Same(t, foreign, pkts[i], "entry %d: the foreign packet stays the caller's", i)
				} else {
					assert.Nil(t, pkts[i], "entry %d: iflib took it", i)
				}
			}
			require.Equal(t, len(accepted), n, "the count is the packets with a nil error")
			if tc.full {
				require.Positive(t, nobufs, "the rings overflowed")
				// Once full, full: the device holds every completion.
				last := accepted[len(accepted)-1]
				require.Less(t, last, id-nobufs, "an accepted packet after a refused one")
			}
			after := txStats(t, f.ctx)
			assert.Equal(t, uint64(nobufs), after.OQDrops-before.OQDrops, "oqdrops: the ErrNoBufs refusals")
			assert.Equal(t, uint64(4), after.OErrors-before.OErrors, "oerrors: two bad lengths, two foreign")

			// The device runs: exactly the accepted packets go out, in order.
			f.setHold(false)
			f.complete(-1)
			f.ctx.TxIntr(0)
			require.Eventually(t, func() bool { return len(f.sent()) == len(accepted) }, 10*time.Second, time.Millisecond)
			for k, fr := range f.sent() {
				require.Len(t, fr, 64)
				require.Equal(t, uint32(accepted[k]), binary.BigEndian.Uint32(fr), "frame %d", k)
			}
			// The consumer publishes its pass's counters after the doorbell:
			// wait for them rather than read them beside the wire.
			testutil.Eventually(t, "opackets published", func() bool {
				return txStats(t, f.ctx).OPackets-before.OPackets >= uint64(len(accepted))
			})
			assert.Equal(t, uint64(len(accepted)), txStats(t, f.ctx).OPackets-before.OPackets)

			// After Stop: the good packet is dropped as not running, the
			// nil and the foreign one are refused without being taken.
			require.NoError(t, f.ctx.Stop())
			late := []*iflib.Packet{good(id), nil, foreign}
			lateErrs := make([]error, 3)
			require.Zero(t, f.ctx.TransmitBatchErrs(late, lateErrs))
			require.Equal(t, []error{iflib.ErrNotRunning, iflib.ErrNilPacket, iflib.ErrForeignPacket}, lateErrs)
			require.Equal(t, []*iflib.Packet{nil, nil, foreign}, late)
			f.close(z) // every packet of the zone is back
		})
	}
}

// TestTransmitBatchErrsShort: an errs shorter than pkts sends only what it
// can report; the rest is left in pkts, still the caller's. TransmitBatch
// on a mixed batch returns the first failed packet's error and clears
// every entry.
func TestTransmitBatchErrsShort(t *testing.T) {
	f := newFake(t, fakeOpts{})
	z := f.zone(iflib.MCLBytes, 64)
	require.NoError(t, f.ctx.Init())
	get := func() *iflib.Packet {
		p, err := z.Get()
		require.NoError(t, err)
		p.SetLen(64)
		return p
	}
	pkts := []*iflib.Packet{get(), get(), get(), get()}
	rest := append([]*iflib.Packet(nil), pkts[2:]...)
	errs := make([]error, 2)
	require.Equal(t, 2, f.ctx.TransmitBatchErrs(pkts, errs))
	require.Equal(t, []error{nil, nil}, errs)
	require.Equal(t, []*iflib.Packet{nil, nil, rest[0], rest[1]}, pkts)
	for _, p := range rest {
		p.Free()
	}

	bad := get()
	bad.Hdr.Len = 1
	batch := []*iflib.Packet{get(), nil, bad, get()}
	n, err := f.ctx.TransmitBatch(batch)
	require.Equal(t, 2, n)
	require.ErrorIs(t, err, iflib.ErrNilPacket, "the first failed packet in pkts order")
	require.Equal(t, make([]*iflib.Packet, 4), batch)
	require.Eventually(t, func() bool { return len(f.sent()) == 4 }, 10*time.Second, time.Millisecond)
	f.close(z)
}

// BenchmarkTransmitBatchErrs is BenchmarkTransmitBatch's loop through
// TransmitBatchErrs: the per-packet report costs no allocation.
//
//	go test -run '^$' -bench 'TransmitBatch' -benchmem ./iflib/
func BenchmarkTransmitBatchErrs(b *testing.B) {
	for _, mode := range []iflib.TxMode{iflib.TxModeMPRing, iflib.TxModeSimple, iflib.TxModeDRBR} {
		b.Run(mode.String(), func(b *testing.B) {
			f, z, c := benchFake(b, mode)
			batch := make([]*iflib.Packet, 32)
			errs := make([]error, len(batch))
			drops := 0
			b.ReportAllocs()
			b.SetBytes(64)
			b.ResetTimer()
			for i := 0; i < b.N; i += len(batch) {
				for k := range batch {
					batch[k] = benchPacket(b, z, c)
				}
				n := f.ctx.TransmitBatchErrs(batch, errs)
				for _, err := range errs {
					if err != nil && err != iflib.ErrNoBufs {
						b.Fatal(err)
					}
				}
				drops += len(batch) - n
			}
			b.StopTimer()
			b.ReportMetric(float64(drops)/float64(b.N), "drops/op")
			benchDone(f, z, c)
		})
	}
}
