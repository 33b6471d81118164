package iflib_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/iflib"
)

// Test support shared by iflib's black-box tests, on the fake device and on
// simnic alike: TX sender and RX pump goroutines, and the conservation
// ledger. The wait helpers are internal/testutil's.

// txSenders starts n goroutines on wg that each take packets of size bytes
// from their own cache of z and hand them to ic.Transmit, counting each
// in handed (and, when accepted is not nil, each that Transmit accepted
// there): each packets apiece (an empty cache uses up a turn), or, with
// each < 0, until stop is closed (an empty cache is retried after a
// yield). Transmit's errors are the ledger's business (requireTxLedger).
func txSenders(wg *sync.WaitGroup, ic *iflib.Context, z *iflib.Zone, n, each, size int, stop <-chan struct{}, handed, accepted *atomic.Uint64) {
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := z.NewCache()
			defer c.Flush()
			for i := 0; each < 0 || i < each; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p, err := c.Get()
				if err != nil {
					runtime.Gosched()
					continue
				}
				p.SetLen(size)
				p.Hdr.Len = size
				handed.Add(1)
				if ic.Transmit(p) == nil && accepted != nil {
					accepted.Add(1)
				}
			}
		}()
	}
}

// rxPump starts a goroutine on wg that offers frame i = 0, 1, … to the
// device (rx reports whether the device took it), counting those taken in
// took, until stop is closed; after a refusal (no buffer posted: stopped,
// or the ring is full) it yields.
func rxPump(wg *sync.WaitGroup, stop <-chan struct{}, rx func(i int) bool, took *atomic.Uint64) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if rx(i) {
				took.Add(1)
			} else {
				runtime.Gosched()
			}
		}
	}()
}

// txTotals sums the TX queue statistics over ic's queues.
func txTotals(t testing.TB, ic *iflib.Context) iflib.TxQueueStats {
	t.Helper()
	var sum iflib.TxQueueStats
	for q := range ic.NumTxQueues() {
		st, err := ic.TxQueueStats(q)
		require.NoError(t, err)
		sum.OQDrops += st.OQDrops
		sum.OErrors += st.OErrors
		sum.StopDiscards += st.StopDiscards
	}
	return sum
}

// requireTxLedger is iflib's TX conservation check (nothing lost
// silently): every packet handed to Transmit was put on a descriptor ring
// by the driver (onRing) or counted as dropped before that (oqdrops,
// oerrors), summed over the TX queues. simnic's driver counts onRing
// (DriverStats.TxEncapped); the fake's is fakeNIC.onRing.
func requireTxLedger(t testing.TB, ic *iflib.Context, handed, onRing uint64) {
	t.Helper()
	st := txTotals(t, ic)
	require.Equal(t, handed, onRing+st.OQDrops+st.OErrors,
		"TX ledger: handed %d ≠ on a ring %d + oqdrops %d + oerrors %d", handed, onRing, st.OQDrops, st.OErrors)
}

// onRing is what the fake's driver put on its ring: the frames it sent
// and the packets Stop freed from the ring before a completion
// (stop_discards).
func (f *fakeNIC) onRing(t testing.TB) uint64 {
	t.Helper()
	return uint64(len(f.sent())) + txTotals(t, f.ctx).StopDiscards
}

// requireRxLedger is iflib's RX conservation check on queue 0: every
// frame the device wrote is counted once (ipackets, ierrors, or
// rx_stop_discards when Stop found it), and every packet counted in
// ipackets was delivered to the input callback or counted as dropped there
// (iqdrops) or filtered (RxFilter).
func requireRxLedger(t testing.TB, ic *iflib.Context, written, delivered uint64) {
	t.Helper()
	rx := rxStats(t, ic)
	require.Equal(t, written, rx.IPackets+rx.IErrors+rx.StopDiscards, "RX ledger: written ≠ ipackets + ierrors + rx_stop_discards: %+v", rx)
	require.Equal(t, rx.IPackets, delivered+rx.IQDrops+rx.Filtered, "RX ledger: ipackets ≠ delivered + iqdrops + filtered: %+v", rx)
}

// hangTx has the fake hold every TX completion (a queue the device
// stopped completing) and hands it n packets of 100 bytes.
func (f *fakeNIC) hangTx(t testing.TB, z *iflib.Zone, n int) {
	t.Helper()
	f.setHold(true)
	for i := range n {
		require.NoError(t, f.ctx.Transmit(pkt(t, z, 100, byte(i))))
	}
}
