package iflib

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// txq_max_db_deferred and txq_max_rs_deferred worked by hand from
// sys/net/iflib.c: 1024 descriptors → notify 63,
// minthresh 128; DB deferral 63 above 512 in use, 31 above 256, 7 above
// 128, else 0; RS deferral 63 / 31 / 15 / 2.
func TestDeferralTiers(t *testing.T) {
	q := &txq{size: 1024}
	for _, tc := range []struct{ inUse, db, rs int }{
		{0, 0, 2}, {128, 0, 2}, {129, 7, 15}, {256, 7, 15}, {257, 31, 31}, {512, 31, 31}, {513, 63, 63}, {1024, 63, 63},
	} {
		q.inUse = tc.inUse
		got := q.maxDBDeferred()
		assert.Equal(t, tc.db, got, "txq_max_db_deferred(%d) = %d, want %d", tc.inUse, got, tc.db)
		got = q.maxRSDeferred()
		assert.Equal(t, tc.rs, got, "txq_max_rs_deferred(in_use %d) = %d, want %d", tc.inUse, got, tc.rs)
	}
}

// get_inuse with the generation bit: equal indices mean empty or full.
func TestGetInuse(t *testing.T) {
	q := &txq{size: 8}
	for _, tc := range []struct {
		cidx, pidx int
		gen        bool
		want       int
	}{{0, 0, false, 0}, {0, 0, true, 8}, {2, 5, false, 3}, {6, 1, false, 3}, {3, 3, true, 8}} {
		q.cidx, q.pidx, q.gen = tc.cidx, tc.pidx, tc.gen
		got := q.getInuse()
		assert.Equal(t, tc.want, got, "get_inuse(cidx %d, pidx %d, gen %v) = %d, want %d", tc.cidx, tc.pidx, tc.gen, got, tc.want)
	}
}

func TestSortByFlowKeepsOrderWithinFlow(t *testing.T) {
	var pk []Packet = make([]Packet, 12)
	b := make([]*Packet, len(pk))
	for i := range pk {
		pk[i].Hdr.FlowID = uint32([]int{3, 1, 2, 1, 3, 2, 1, 1, 3, 2, 2, 1}[i])
		pk[i].Hdr.CsumData = uint32(i) // arrival order
		b[i] = &pk[i]
	}
	sortByFlow(b)
	for i := 1; i < len(b); i++ {
		a, c := b[i-1].Hdr, b[i].Hdr
		require.LessOrEqual(t, a.FlowID, c.FlowID, "not sorted stably at %d: %+v then %+v", i, a, c)
		require.False(t, a.FlowID == c.FlowID && a.CsumData > c.CsumData, "not sorted stably at %d: %+v then %+v", i, a, c)
	}
}

func TestFindClearWraps(t *testing.T) {
	fl := &freeList{size: 130, bitmap: make([]uint64, 3)}
	for i := 0; i < 130; i++ {
		fl.set(i)
	}
	got := fl.findClear(5)
	require.Equal(t, -1, got, "full bitmap: findClear = %d, want -1", got)
	fl.clr(3)
	got = fl.findClear(100)
	require.Equal(t, 3, got, "wrap: findClear(100) = %d, want 3", got)
	fl.clr(129)
	got = fl.findClear(100)
	require.Equal(t, 129, got, "findClear(100) = %d, want 129", got)
}
