// Command xdpfwd forwards frames between two veth pairs in a private network
// namespace through the AF_XDP iflib driver (mp_ring and simple_tx modes)
// and, beside it, through a hand-written AF_XDP loop over the same rings,
// printing live rates and a table. It needs Linux and the capabilities of
// afxdp.RigAvailable (root has them); elsewhere it prints why it skipped.
//
// Each of -rounds rounds runs every forwarder for -dur in each mode, the
// order rotated a round, so that iflib's rate and CPU per frame are divided
// by the hand loop's of the same round (paired): the table gives each
// ratio's median and [min..max] over the rounds, as the benchmark does
// with benchstat. One window alone swings with the machine's load.
//
//	go run ./examples/afxdp/cmd/xdpfwd                  # native and generic, 5 rounds of 1 s
//	go run ./examples/afxdp/cmd/xdpfwd -rounds 9 -dur 2s -modes native -fw iflib-simple,hand
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/goiflib/goiflib/examples/afxdp"
)

func main() {
	dur := flag.Duration("dur", time.Second, "measuring window per forwarder, mode and round")
	rounds := flag.Int("rounds", 5, "rounds: each runs every forwarder in every mode, the order rotated")
	modes := flag.String("modes", "native,generic", "XDP modes: native, generic")
	nrxd := flag.Int("nrxd", afxdp.ForwardNRxd, "RX descriptors per queue")
	ntxd := flag.Int("ntxd", afxdp.DefaultNTxd, "TX descriptors per queue")
	flen := flag.Int("len", 64, "frame length")
	burst := flag.Int("burst", afxdp.DefaultBurst, "frames per RX pass of every forwarder (iflib's rx_budget, the hand loop's burst)")
	fws := flag.String("fw", "iflib,iflib-simple,hand", "forwarders: iflib (mp_ring), iflib-simple (simple_tx), hand")
	live := flag.Bool("live", false, "print the live rate every second")
	flag.Parse()
	var ms []afxdp.XDPMode
	for _, m := range strings.Split(*modes, ",") {
		switch strings.TrimSpace(m) {
		case "native":
			ms = append(ms, afxdp.XDPNative)
		case "generic":
			ms = append(ms, afxdp.XDPGeneric)
		default:
			fmt.Fprintf(os.Stderr, "xdpfwd: unknown mode %q\n", m)
			os.Exit(2)
		}
	}
	if *rounds < 1 {
		fmt.Fprintf(os.Stderr, "xdpfwd: -rounds %d: want at least 1\n", *rounds)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	fmt.Printf("AF_XDP forwarding: %d-byte frames, veth pair 0 → forwarder → veth pair 1, %d rounds of %v per forwarder and mode\n", *flen, *rounds, *dur)
	opts := afxdp.ForwardOptions{
		Duration: *dur, Rounds: *rounds, Modes: ms, FrameLen: *flen, NRxd: *nrxd, NTxd: *ntxd, Burst: *burst,
		Forwarders: strings.Split(*fws, ","),
	}
	if *live {
		opts.Progress = func(r afxdp.Rate) {
			fmt.Printf("  %-12s %-7s %5.1fs %7.3f Mpps\n", r.Forwarder, r.Mode, r.Elapsed.Seconds(), r.Mpps)
		}
	}
	res, err := afxdp.RunForward(ctx, opts)
	if errors.Is(err, afxdp.ErrUnavailable) {
		fmt.Printf("AF_XDP section skipped: %v\n", err)
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "xdpfwd: %v\n", err)
		os.Exit(1)
	}
	fmt.Println()
	printTable(res)
}

// printTable prints, per mode and forwarder, the medians over rounds and
// the paired ratios to the hand loop of the same round and mode.
func printTable(res []afxdp.Result) {
	type key struct {
		mode  afxdp.XDPMode
		fw    string
		round int
	}
	byKey := map[key]afxdp.Result{}
	var order []key // first appearance of each (mode, forwarder)
	for _, r := range res {
		k := key{r.Mode, r.Forwarder, r.Round}
		byKey[k] = r
		if !slices.ContainsFunc(order, func(o key) bool { return o.mode == k.mode && o.fw == k.fw }) {
			order = append(order, key{r.Mode, r.Forwarder, 0})
		}
	}
	fmt.Printf("%-8s %-12s %7s %15s %11s %23s %23s\n", "mode", "forwarder", "Mpps", "fwd-cpu-ns/pkt", "sendto/pkt", "Mpps × hand", "cpu/pkt × hand")
	for _, o := range order {
		var mpps, cpu, kicks, ratio, cpuRatio []float64
		for _, r := range res {
			if r.Mode != o.mode || r.Forwarder != o.fw {
				continue
			}
			mpps = append(mpps, r.Mpps)
			cpu = append(cpu, r.FwdCPUNsPerPkt)
			if r.Packets > 0 {
				kicks = append(kicks, float64(r.Counts.TxKicks)/float64(r.Packets))
			}
			h, ok := byKey[key{r.Mode, afxdp.FwdHand, r.Round}]
			if ok && r.Forwarder != afxdp.FwdHand && h.Mpps > 0 && h.FwdCPUNsPerPkt > 0 {
				ratio = append(ratio, r.Mpps/h.Mpps)
				cpuRatio = append(cpuRatio, r.FwdCPUNsPerPkt/h.FwdCPUNsPerPkt)
			}
		}
		fmt.Printf("%-8s %-12s %7.3f %15.0f %11.3f %23s %23s\n", o.mode, o.fw, median(mpps), median(cpu), median(kicks), spread(ratio), spread(cpuRatio))
	}
	fmt.Println("(medians over rounds; × hand: the ratio to the hand loop of the same round, median [min..max])")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func spread(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f [%.2f..%.2f]", median(v), slices.Min(v), slices.Max(v))
}
