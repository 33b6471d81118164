package seedbench

import (
	"strconv"
	"testing"

	"github.com/goiflib/goiflib/bufring"
	"github.com/goiflib/goiflib/iflib"
)

// drbrRoundPkts is how many transmit attempts one round of
// BenchmarkDRBRRounds gives each mode before the next mode's turn.
const drbrRoundPkts = 20000

// BenchmarkDRBRRounds is BenchmarkSeed003 with the modes measured side
// by side: one rig per mode, all open at once, and the b.N attempts of
// each mode made in rounds of drbrRoundPkts, the modes taking turns
// (mpring, simple, drbr, drbr-2048, then the reverse order), so that load
// from elsewhere on the machine falls on every mode alike. drbr is iflib's
// drbr mode with a buf_ring of bufring.DefaultDRBRSize (256) slots;
// drbr-2048 is the same with 2048 slots, the size both defaults had
// before, kept as the comparison that shows what the ring's depth costs
// (packets deferred behind a full descriptor ring wait in memory that
// has left the cache by the time the device reads them). Besides each
// mode's Gb/s and cpu-ns/pkt (process CPU time per frame on the wire) it
// reports the ratios of the drbr targets:
// drbr-cpu-x-simple (drbr's cpu-ns/pkt ÷ simple_tx's, target ≤ 1) and
// drbr-gbps-x-mpring (drbr's Gb/s ÷ mp_ring's, target ≥ 1 from 2 senders).
//
//	go test -run '^$' -bench '^BenchmarkDRBRRounds$' -benchtime 200000x -cpu 1,2 -count 5 ./examples/seedbench/
func BenchmarkDRBRRounds(b *testing.B) {
	modes := []struct {
		name string
		cfg  iflib.Config
	}{
		{"mpring", iflib.Config{TxMode: iflib.TxModeMPRing}},
		{"simple", iflib.Config{TxMode: iflib.TxModeSimple}},
		{"drbr", iflib.Config{TxMode: iflib.TxModeDRBR, DRBRSize: bufring.DefaultDRBRSize}},
		{"drbr-2048", iflib.Config{TxMode: iflib.TxModeDRBR, DRBRSize: 2048}},
	}
	for _, n := range FanIns {
		b.Run("senders="+strconv.Itoa(n), func(b *testing.B) {
			rigs := make([]*TxRig, len(modes))
			for i, m := range modes {
				r, err := NewTxRig(TxOptions{Config: m.cfg})
				if err != nil {
					b.Fatal(err)
				}
				rigs[i] = r
			}
			res := make([]TxResult, len(modes))
			b.ReportAllocs()
			b.ResetTimer()
			for k := range max(b.N/drbrRoundPkts, 1) {
				for j := range modes {
					i := j
					if k%2 == 1 {
						i = len(modes) - 1 - j
					}
					res[i] = res[i].Plus(rigs[i].RunCount(n, drbrRoundPkts))
				}
			}
			b.StopTimer()
			for i, m := range modes {
				if err := rigs[i].Close(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(res[i].Gbps(), m.name+"-Gb/s")
				b.ReportMetric(res[i].CPUNsPerPkt(), m.name+"-cpu-ns")
			}
			mp, simple, drbr := res[0], res[1], res[2]
			b.ReportMetric(drbr.CPUNsPerPkt()/simple.CPUNsPerPkt(), "drbr-cpu-x-simple")
			b.ReportMetric(drbr.Gbps()/mp.Gbps(), "drbr-gbps-x-mpring")
		})
	}
}
