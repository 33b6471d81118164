// Command xdpfwd forwards frames between two veth pairs in a private network
// namespace through the AF_XDP iflib driver (mp_ring and simple_tx modes)
// and, beside it, through a hand-written AF_XDP loop over the same rings,
// printing live rates and a table. It needs Linux and root; elsewhere it
// prints why it skipped.
//
//	go run ./examples/afxdp/cmd/xdpfwd                  # native and generic, 3 s each
//	go run ./examples/afxdp/cmd/xdpfwd -dur 10s -modes native -fw iflib-simple,hand
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/goiflib/goiflib/examples/afxdp"
)

func main() {
	dur := flag.Duration("dur", 3*time.Second, "measuring window per forwarder and mode")
	modes := flag.String("modes", "native,generic", "XDP modes: native, generic")
	nrxd := flag.Int("nrxd", afxdp.ForwardNRxd, "RX descriptors per queue")
	ntxd := flag.Int("ntxd", afxdp.DefaultNTxd, "TX descriptors per queue")
	flen := flag.Int("len", 64, "frame length")
	burst := flag.Int("burst", afxdp.DefaultBurst, "frames per RX pass of every forwarder (iflib's rx_budget, the hand loop's burst)")
	fws := flag.String("fw", "iflib,iflib-simple,hand", "forwarders: iflib (mp_ring), iflib-simple (simple_tx), hand")
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
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	fmt.Printf("AF_XDP forwarding: %d-byte frames, veth pair 0 → forwarder → veth pair 1, %v per run\n", *flen, *dur)
	res, err := afxdp.RunForward(ctx, afxdp.ForwardOptions{
		Duration: *dur, Modes: ms, FrameLen: *flen, NRxd: *nrxd, NTxd: *ntxd, Burst: *burst,
		Forwarders: strings.Split(*fws, ","),
		Progress: func(r afxdp.Rate) {
			fmt.Printf("  %-12s %-7s %5.1fs %7.3f Mpps\n", r.Forwarder, r.Mode, r.Elapsed.Seconds(), r.Mpps)
		},
	})
	if errors.Is(err, afxdp.ErrUnavailable) {
		fmt.Printf("AF_XDP section skipped: %v\n", err)
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "xdpfwd: %v\n", err)
		os.Exit(1)
	}
	fmt.Println()
	fmt.Printf("%-8s %-12s %8s %11s %15s %11s %10s\n", "mode", "forwarder", "Mpps", "cpu-ns/pkt", "fwd-cpu-ns/pkt", "sendto/pkt", "× hand")
	byKey := map[string]afxdp.Result{}
	for _, r := range res {
		byKey[r.Mode.String()+r.Forwarder] = r
	}
	for _, r := range res {
		ratio := ""
		if h, ok := byKey[r.Mode.String()+afxdp.FwdHand]; ok && r.Forwarder != afxdp.FwdHand && h.Mpps > 0 {
			ratio = fmt.Sprintf("%.2f", r.Mpps/h.Mpps)
		}
		kicks := 0.0
		if r.Packets > 0 {
			kicks = float64(r.Counts.TxKicks) / float64(r.Packets)
		}
		fmt.Printf("%-8s %-12s %8.3f %11.0f %15.0f %11.3f %10s\n", r.Mode, r.Forwarder, r.Mpps, r.CPUNsPerPkt, r.FwdCPUNsPerPkt, kicks, ratio)
	}
}
