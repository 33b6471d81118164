package iflib_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// TestDRBRBatchErrsPerPacket: in drbr mode a batch sent directly (the
// queue lock free) reports the driver's drop of each packet at its index
// (bufring.DRBR.TransmitBurstErrs), counts only the others as accepted,
// and TransmitBatch returns the first drop; the dropped packets are freed
// and counted in oerrors, the others go out in order.
func TestDRBRBatchErrsPerPacket(t *testing.T) {
	f := newFake(t, fakeOpts{cfg: iflib.Config{TxMode: iflib.TxModeDRBR, TimerInterval: time.Hour}})
	z := f.zone(iflib.MCLBytes, 64)
	require.NoError(t, f.ctx.Init())
	lieFor := map[int]bool{101: true, 104: true} // by ipi_len
	f.encapDone = func(pi *iflib.PktInfo) {
		if lieFor[pi.Len] {
			pi.NewPIdx = -1 // an impossible index: freed, counted, ErrBadDriverIndex
		}
	}
	batch := make([]*iflib.Packet, 6)
	for i := range batch {
		batch[i] = pkt(t, z, 100+i, byte(i))
	}
	errs := make([]error, len(batch))
	n := f.ctx.TransmitBatchErrs(batch, errs)
	require.Equal(t, 4, n, "the two dropped packets are not accepted")
	for i, err := range errs {
		if lieFor[100+i] {
			require.ErrorIs(t, err, iflib.ErrBadDriverIndex, "packet %d", i)
		} else {
			require.NoError(t, err, "packet %d", i)
		}
	}
	require.Equal(t, make([]*iflib.Packet, len(batch)), batch, "iflib took every entry")
	require.Equal(t, uint64(2), txStats(t, f.ctx).OErrors)

	// TransmitBatch: the first drop's error, every entry cleared.
	for i := range batch {
		batch[i] = pkt(t, z, 100+i, byte(i))
	}
	_, err := f.ctx.TransmitBatch(batch)
	require.ErrorIs(t, err, iflib.ErrBadDriverIndex)
	require.Equal(t, uint64(4), txStats(t, f.ctx).OErrors)
	f.encapDone = nil

	testutil.Eventually(t, "the 8 frames not dropped on the wire", func() bool { return len(f.sent()) == 8 })
	var lens []int
	for _, fr := range f.sent() {
		lens = append(lens, len(fr))
	}
	require.Equal(t, []int{100, 102, 103, 105, 100, 102, 103, 105}, lens, "the others, in order")
	f.close(z)
}
