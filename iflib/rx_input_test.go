package iflib_test

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/examples/simnic/simnictest"
	"github.com/goiflib/goiflib/iflib"
	"github.com/goiflib/goiflib/internal/testutil"
)

// TestRxPerPacketInput: Config.RxPerPacketInput hands each packet to Input
// from inside the rxeof loop, before the next packet is read (if_input per
// mbuf, before D27755's batching), with the same order and counts as
// batched delivery and RxPerPacket. The knob shows in the sysctl tree.
func TestRxPerPacketInput(t *testing.T) {
	const n = 40 // more than two passes of the default budget (16)
	frames := make([][]byte, n)
	for i := range frames {
		size := []int{60, 100, 1500, 3000}[i%4] // copy path, one cluster, two clusters
		frames[i] = frame(size, byte(i))
	}
	type call struct {
		n      int   // packets in the call
		gets   int64 // RxdPktGet calls made before it
		frames [][]byte
	}
	run := func(t *testing.T, cfg iflib.Config) ([]call, iflib.RxQueueStats) {
		var mu sync.Mutex
		var calls []call
		var gets atomic.Int64
		var f *fakeNIC
		cfg.RxBudget = 16
		cfg.TimerInterval = time.Hour // the timer kicks RX queues: no pass before RxIntr
		f = newFake(t, fakeOpts{cfg: cfg, input: func(_ *iflib.Context, _ int, pkts []*iflib.Packet) {
			c := call{n: len(pkts), gets: gets.Load()}
			for _, p := range pkts {
				c.frames = append(c.frames, simnictest.Flatten(p))
				p.Free()
			}
			mu.Lock()
			calls = append(calls, c)
			mu.Unlock()
		}})
		f.pktGet = func(*iflib.RxdInfo) error { gets.Add(1); return nil }
		f.noRxIntr = true // queue every frame first, then one interrupt
		require.NoError(t, f.ctx.Init())
		for _, fr := range frames {
			require.True(t, f.rx(fr))
		}
		f.ctx.RxIntr(0)
		testutil.Eventually(t, "every frame delivered", func() bool {
			mu.Lock()
			defer mu.Unlock()
			k := 0
			for _, c := range calls {
				k += c.n
			}
			return k == n
		})
		v, ok := f.ctx.SysctlValue("dev.fake.0.iflib.rx_per_packet_input")
		require.True(t, ok)
		require.Equal(t, cfg.RxPerPacketInput, v)
		require.NoError(t, f.ctx.Stop())
		st := rxStats(t, f.ctx)
		f.close()
		mu.Lock()
		defer mu.Unlock()
		return calls, st
	}
	flat := func(calls []call) [][]byte {
		var out [][]byte
		for _, c := range calls {
			out = append(out, c.frames...)
		}
		return out
	}

	batched, bst := run(t, iflib.Config{})
	perPkt, pst := run(t, iflib.Config{RxPerPacket: true})
	inLoop, ist := run(t, iflib.Config{RxPerPacketInput: true})

	for name, got := range map[string][]call{"batched": batched, "RxPerPacket": perPkt, "RxPerPacketInput": inLoop} {
		fl := flat(got)
		require.Len(t, fl, n, name)
		for i := range frames {
			require.True(t, bytes.Equal(frames[i], fl[i]), "%s: frame %d differs or is out of order", name, i)
		}
	}
	// Batched: the first call comes after a whole budget was taken.
	require.Greater(t, len(batched[0].frames), 1, "batched delivery hands a batch")
	require.EqualValues(t, 16, batched[0].gets, "batched: Input runs after the pass took its budget")
	// RxPerPacket: one packet per call, but still after the pass.
	require.Equal(t, 1, perPkt[0].n)
	require.EqualValues(t, 16, perPkt[0].gets, "RxPerPacket: Input runs after the pass took its budget")
	// RxPerPacketInput: packet k is delivered before packet k+1 is read.
	require.Len(t, inLoop, n)
	for k, c := range inLoop {
		require.Equal(t, 1, c.n)
		require.EqualValues(t, k+1, c.gets, "RxPerPacketInput: call %d must follow exactly %d RxdPktGet calls", k, k+1)
	}
	// Counts: the same packets and bytes; one if_input call per packet.
	for _, st := range []iflib.RxQueueStats{pst, ist} {
		require.Equal(t, bst.IPackets, st.IPackets)
		require.Equal(t, bst.IBytes, st.IBytes)
		require.Equal(t, bst.Copies, st.Copies)
		require.EqualValues(t, n, st.IfInput)
	}
	require.EqualValues(t, n, bst.IPackets)
	require.Less(t, bst.IfInput, uint64(n))

	// There is no batch to sort.
	_, err := tryFake(t, fakeOpts{cfg: iflib.Config{RxPerPacketInput: true, RxSortByFlow: true}})
	var ce *iflib.ConfigError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "RxPerPacketInput", ce.Field)
}
