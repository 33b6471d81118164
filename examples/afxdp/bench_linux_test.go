package afxdp

import (
	"context"
	"testing"
	"time"

	"github.com/goiflib/goiflib/iflib"
)

// BenchmarkXDPForward: forwarding 64-byte frames from veth pair 0 to pair
// 1 through iflib (two drivers on one UMEM) and through the hand-written
// loop over the same rings, with the same generator, in native and
// generic XDP mode. b.N is frames forwarded (counted by the kernel at the
// output pair's peer); Mpps is the rate, cpu-ns/pkt the process's CPU time
// per forwarded frame (the generator's included, equally for both).
//
//	go test -run XXX -bench XDPForward -benchtime 2000000x -count 5 ./examples/afxdp/
func BenchmarkXDPForward(b *testing.B) {
	needAFXDP(b)
	for _, fw := range []string{"iflib", "hand"} {
		b.Run(fw, func(b *testing.B) {
			for _, mode := range []XDPMode{XDPNative, XDPGeneric} {
				b.Run(mode.String(), func(b *testing.B) { benchForward(b, fw, mode) })
			}
		})
	}
}

func benchForward(b *testing.B, fw string, mode XDPMode) {
	fx, err := newFwdFixture(64)
	if err != nil {
		b.Fatal(err)
	}
	defer fx.close()
	stop, err := fx.start(fw, mode, DefaultNRxd, DefaultNTxd, iflib.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			b.Error(err)
		}
	}()
	time.Sleep(200 * time.Millisecond) // warm-up
	c0, err := fx.sinkCount()
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	t0 := time.Now()
	deadline := t0.Add(time.Duration(b.N)*10*time.Microsecond + 10*time.Second)
	var c uint64
	for {
		if c, err = fx.sinkCount(); err != nil {
			b.Fatal(err)
		}
		if c-c0 >= uint64(b.N) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("forwarded %d of %d frames", c-c0, b.N)
		}
		time.Sleep(2 * time.Millisecond)
	}
	el := time.Since(t0)
	b.StopTimer()
	n := float64(c - c0)
	b.ReportMetric(n/el.Seconds()/1e6, "Mpps")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/n, "cpu-ns/pkt")
	b.ReportMetric(0, "ns/op")
}

// TestRunForward: RunForward measures both forwarders and reports live
// rates; each forwards frames.
func TestRunForward(t *testing.T) {
	needAFXDP(t)
	var rates int
	res, err := RunForward(context.Background(), ForwardOptions{
		Duration: 300 * time.Millisecond, Interval: 100 * time.Millisecond, Modes: []XDPMode{XDPNative},
		NRxd: 256, NTxd: 256, Progress: func(Rate) { rates++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Forwarder != "iflib" || res[1].Forwarder != "hand" {
		t.Fatalf("results %+v", res)
	}
	for _, r := range res {
		t.Logf("%s %s: %.3f Mpps, %.0f cpu-ns/pkt, %d of %d generated", r.Forwarder, r.Mode, r.Mpps, r.CPUNsPerPkt, r.Packets, r.Generated)
		if r.Packets == 0 || r.Mpps <= 0 {
			t.Errorf("%s forwarded nothing: %+v", r.Forwarder, r)
		}
	}
	if rates == 0 {
		t.Error("no live rate reported")
	}
}
