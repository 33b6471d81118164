package iflib_test

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/busdma"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// Issue 11 item 7: after a reset caused by an RX device error, with the
// checker on and under the IOMMU, no stale descriptor comes back: the
// device writes only to current mappings (zero IOMMU faults) and no
// corrupted frame reaches the input callback. iflib zeroes the descriptor
// rings at stop with a POSTREAD|POSTWRITE sync first, so the device's last
// write-backs cannot be written back over the zeros later (the checker
// models that non-coherent hazard).
func TestRxResetUnderIOMMUNoStaleDescriptors(t *testing.T) {
	for _, inject := range []string{"length", "slot"} {
		t.Run(inject, func(t *testing.T) {
			env := simnictest.NewEnv(t, simnictest.EnvOptions{IOMMU: true, Sim: busdma.SimConfig{Size: 32 << 20, ContigSize: 1 << 20}})
			nic, err := env.NewNIC(simnic.Config{NRxd: 64, NTxd: 64})
			require.NoError(t, err)
			nic.SetPeer(&simnic.Sink{})
			var mu sync.Mutex
			var good, bad int
			seen := map[uint32]bool{}
			input := func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range pkts {
					if id, ok := checkFrame(p.Bytes()); ok && !seen[id] {
						seen[id] = true
						good++
					} else {
						bad++
					}
					p.Free()
				}
			}
			drv, err := env.Attach(nic, iflib.Attachment{Input: input, Config: iflib.Config{RxZoneSize: 512}})
			require.NoError(t, err)
			ctx := drv.Context()
			require.NoError(t, ctx.Init())
			id := uint32(0)
			send := func(n int) {
				for i := 0; i < n; i++ {
					f := makeFrame(id, 200+int(id%900))
					testutil.Eventually(t, "the NIC to take a frame", func() bool { return nic.Receive(f) })
					id++
				}
			}
			count := func() int { mu.Lock(); defer mu.Unlock(); return good + bad }
			send(100)
			testutil.Eventually(t, "the first frames", func() bool { return count() >= 100 })
			for r := 1; r <= 3; r++ {
				if inject == "length" {
					nic.InjectRxBadLength()
				} else {
					nic.InjectRxBadSlot()
				}
				send(1)
				testutil.Eventually(t, "a reset", func() bool { return ctx.Resets() >= uint64(r) })
				testutil.Eventually(t, "running again", ctx.Running)
				send(200)
			}
			st, _ := ctx.RxQueueStats(0)
			// Every frame: delivered, a counted error, discarded by a reset's
			// stop, or missed at the wire (the FIFO overflows while the queue
			// resets). Nothing lost, nothing twice.
			testutil.Eventually(t, "every frame accounted for", func() bool {
				st, _ = ctx.RxQueueStats(0)
				return uint64(count())+st.IErrors+st.StopDiscards+nic.Stats().RxMissed == uint64(id)
			})
			t.Logf("sent %d good %d bad %d ierrors %d stopdiscards %d missed %d iqdrops %d nic %+v", id, good, bad, st.IErrors, st.StopDiscards, nic.Stats().RxMissed, st.IQDrops, nic.Stats())
			mu.Lock()
			require.Zero(t, bad, "corrupted or duplicated frames reached the stack")
			mu.Unlock()
			require.Zero(t, env.IOMMU.Stats().Faults, "IOMMU faults after resets")
			require.NoError(t, env.Close()) // also fails on any checker report or IOMMU fault
		})
	}
}

// makeFrame is an n-byte Ethernet frame (n ≥ 22) to the broadcast address
// (which a NIC's receive filter passes, as it would not a random
// destination), EtherType 0x88b5 (local experimental), carrying id, n and
// a pattern derived from id.
func makeFrame(id uint32, n int) []byte {
	b := make([]byte, n)
	copy(b[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(b[6:12], []byte{0x02, 0, 0, 0, 0, 0x99})
	binary.BigEndian.PutUint16(b[12:14], 0x88b5)
	binary.BigEndian.PutUint32(b[14:18], id)
	binary.BigEndian.PutUint32(b[18:22], uint32(n))
	for i := 22; i < n; i++ {
		b[i] = byte(id) ^ byte(i*13)
	}
	return b
}

// checkFrame verifies a frame made by makeFrame and returns its id.
func checkFrame(b []byte) (uint32, bool) {
	if len(b) < 22 {
		return 0, false
	}
	id := binary.BigEndian.Uint32(b[14:18])
	if int(binary.BigEndian.Uint32(b[18:22])) != len(b) {
		return id, false
	}
	for i := 22; i < len(b); i++ {
		if b[i] != byte(id)^byte(i*13) {
			return id, false
		}
	}
	return id, true
}
