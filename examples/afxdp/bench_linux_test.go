package afxdp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goiflib/goiflib/internal/race"
)

// BenchmarkXDPForward: forwarding 64-byte frames from veth pair 0 to pair
// 1 through iflib (two drivers on one UMEM, TransmitBatch from the input
// callback; in FreeBSD's default mp_ring mode and in simple_tx mode) and
// through the hand-written loop over the same rings, with the same
// generator, ring sizes and burst, in native and generic XDP mode; within a
// mode the forwarders run one after the other, so that a comparison is
// measured side by side. b.N is frames forwarded (counted by the kernel at
// the output pair's peer). Metrics:
//
//   - Mpps: the rate;
//   - cpu-ns/pkt: the process's CPU time per forwarded frame (the
//     generator's included, equally for all);
//   - fwd-cpu-ns/pkt: the same without the generator's thread: the
//     forwarder's code and the kernel work of its system calls;
//   - sendto/pkt, poll/pkt, wakeups/pkt: the forwarder's TX kicks, poll(2)
//     sleeps and goroutine hand-offs (interrupt → task) per frame.
//
// Medians of interleaved rounds (the machine is shared):
//
//	for i in 1 2 3 4 5 6 7; do go test -run '^$' -bench XDPForward -benchtime 1000000x -count 1 ./examples/afxdp/; done | tee fwd.txt
//	benchstat -col /fw fwd.txt
func BenchmarkXDPForward(b *testing.B) {
	needAFXDP(b)
	for _, mode := range []XDPMode{XDPNative, XDPGeneric} {
		b.Run("mode="+mode.String(), func(b *testing.B) {
			for _, fw := range []string{FwdIflib, FwdIflibSimple, FwdHand} {
				b.Run("fw="+fw, func(b *testing.B) { benchForward(b, fw, mode) })
			}
		})
	}
}

func benchForward(b *testing.B, fw string, mode XDPMode) {
	fx, err := newFwdFixture(64)
	require.NoError(b, err)
	defer fx.close()
	var opts ForwardOptions
	require.NoError(b, opts.resolve())
	fwd, err := fx.start(fw, mode, opts)
	require.NoError(b, err)
	defer func() {
		assert.NoError(b, fwd.close())
	}()
	time.Sleep(200 * time.Millisecond) // warm-up
	c0, err := fx.sinkCount()
	require.NoError(b, err)
	m0 := fx.mark(fwd)
	b.ResetTimer()
	t0 := time.Now()
	deadline := t0.Add(time.Duration(b.N)*10*time.Microsecond + 10*time.Second)
	var c uint64
	for {
		// No testify call per poll: the timer runs.
		if c, err = fx.sinkCount(); err != nil {
			require.NoError(b, err)
		}
		if c-c0 >= uint64(b.N) {
			break
		}
		if time.Now().After(deadline) {
			require.FailNow(b, fmt.Sprintf("forwarded %d of %d frames", c-c0, b.N))
		}
		time.Sleep(2 * time.Millisecond)
	}
	el := time.Since(t0)
	b.StopTimer()
	d := fx.mark(fwd).sub(m0)
	n := float64(c - c0)
	b.ReportMetric(n/el.Seconds()/1e6, "Mpps")
	b.ReportMetric(float64(d.cpu)/n, "cpu-ns/pkt")
	b.ReportMetric(float64(d.cpu-d.genCPU)/n, "fwd-cpu-ns/pkt")
	b.ReportMetric(float64(d.counts.TxKicks)/n, "sendto/pkt")
	b.ReportMetric(float64(d.counts.Polls)/n, "poll/pkt")
	b.ReportMetric(float64(d.counts.Wakeups)/n, "wakeups/pkt")
	b.ReportMetric(0, "ns/op")
}

// TestRunForward: RunForward measures every forwarder and reports live
// rates; each forwards frames and kicks the kernel; afterwards the process
// holds no more file descriptors (sockets, programs, maps, the namespace)
// and goroutines than before; an unknown forwarder is ErrConfig, before
// any forwarder runs.
func TestRunForward(t *testing.T) {
	needAFXDP(t)
	fds0, g0 := processObjects(t)
	var rates int
	// A window long enough that a forwarder gets the CPU in it on a
	// loaded machine under the race detector (300 ms was not: the hand
	// loop once forwarded nothing while the generator filled its ring).
	window := 300 * time.Millisecond
	if race.Enabled {
		window = time.Second
	}
	res, err := RunForward(context.Background(), ForwardOptions{
		Duration: window, Interval: 100 * time.Millisecond, Modes: []XDPMode{XDPNative},
		NRxd: 256, NTxd: 256, Progress: func(Rate) { rates++ },
	})
	require.NoError(t, err)
	require.Len(t, res, 3)
	for i, fw := range []string{FwdIflib, FwdIflibSimple, FwdHand} {
		r := res[i]
		assert.Equal(t, fw, r.Forwarder)
		t.Logf("%s %s: %.3f Mpps, %.0f cpu-ns/pkt (%.0f forwarder), %d of %d generated, %+v",
			r.Forwarder, r.Mode, r.Mpps, r.CPUNsPerPkt, r.FwdCPUNsPerPkt, r.Packets, r.Generated, r.Counts)
		assert.Positive(t, r.Packets, "%s forwarded nothing", fw)
		assert.Positive(t, r.Mpps, fw)
		assert.Positive(t, r.Counts.TxKicks, "%s never kicked the kernel", fw)
	}
	assert.Positive(t, rates, "no live rate reported")
	waitFor(t, 3*time.Second, func() bool {
		fds, g := processObjects(t)
		return slices.Equal(fds, fds0) && g <= g0
	})
	fds, g := processObjects(t)
	assert.Equal(t, strings.Join(fds0, "\n"), strings.Join(fds, "\n"), "file descriptors left open")
	assert.LessOrEqual(t, g, g0, "goroutines left running")
	// Rounds: the order rotates a forwarder a round, so that each round
	// pairs every forwarder with the hand loop under the same load.
	res, err = RunForward(context.Background(), ForwardOptions{Duration: 50 * time.Millisecond, Rounds: 2, Modes: []XDPMode{XDPNative},
		NRxd: 256, NTxd: 256, Forwarders: []string{FwdHand, FwdIflibSimple}})
	require.NoError(t, err)
	var got []string
	for _, r := range res {
		got = append(got, fmt.Sprintf("%d:%s", r.Round, r.Forwarder))
	}
	assert.Equal(t, []string{"0:hand", "0:iflib-simple", "1:iflib-simple", "1:hand"}, got)
	res, err = RunForward(context.Background(), ForwardOptions{Duration: 10 * time.Millisecond, Forwarders: []string{FwdHand, "nope"}})
	assert.ErrorIs(t, err, ErrConfig)
	assert.Empty(t, res, "an unknown forwarder is refused before any runs")
}
