// Command seeds reproduces the founding measurements on the simulated NIC
// (examples/simnic), on whatever machine runs it.
//
// Seed 003: 1, 2, 4, 8, 16, 32 and 64 sending goroutines on one TX queue,
// 1342-byte UDP frames built as a header buffer plus a payload buffer, in
// each transmit mode (mpring, simple, drbr), with the seed's Gb/s beside.
// The seed's figures came from a 96-core machine and a 400G NIC; here the
// "NIC" is a goroutine sharing the same cores as the senders, so compare
// shapes and ratios between modes, not absolute values.
//
// Then forwarding (seeds 000 and 004): a generator on simnic A's wire,
// iflib RX on A, a callback that transmits each packet on simnic B, iflib
// TX on B, with live per-second rates; and seed 000's comparison, RX with
// ifsd_ba reuse on and off under the IOMMU model.
//
//	go run ./examples/seeds                    # under a minute on 2 cores
//	go run ./examples/seeds -dur 2s            # longer windows
//	go run ./examples/seeds -senders 1,8,64 -modes drbr
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/goiflib/goiflib/examples/seedbench"
	"github.com/goiflib/goiflib/iflib"
)

func main() {
	dur := flag.Duration("dur", 400*time.Millisecond, "measuring window per mode and fan-in")
	senders := flag.String("senders", "1,2,4,8,16,32,64", "comma-separated sender counts")
	modes := flag.String("modes", "mpring,simple,drbr", "comma-separated transmit modes")
	fwd := flag.Duration("fwd", 3*time.Second, "forwarding measurement window (0 skips forwarding)")
	flag.Parse()
	levels, err := parseInts(*senders)
	if err != nil {
		fail(err)
	}
	var ms []iflib.TxMode
	for _, name := range strings.Split(*modes, ",") {
		m, ok := map[string]iflib.TxMode{"mpring": iflib.TxModeMPRing, "simple": iflib.TxModeSimple, "drbr": iflib.TxModeDRBR}[strings.TrimSpace(name)]
		if !ok {
			fail(fmt.Errorf("unknown mode %q", name))
		}
		ms = append(ms, m)
	}

	fmt.Printf("seed 003 on simnic: one TX queue, %d-byte frames (header + payload buffer), GOMAXPROCS %d, %v per point\n",
		seedbench.Seed003FrameLen, runtime.GOMAXPROCS(0), *dur)
	res := map[iflib.TxMode]map[int]seedbench.TxResult{}
	for _, m := range ms {
		res[m] = map[int]seedbench.TxResult{}
		r, err := seedbench.NewTxRig(m, nil, 16384)
		if err != nil {
			fail(err)
		}
		for _, n := range levels {
			x := r.RunSenders(n, *dur)
			res[m][n] = x
			fmt.Fprintf(os.Stderr, "  %-6s %2d senders: %6.2f Gb/s %6.3f Mpps  drops %d\n", m, n, x.Gbps(), x.PPS()/1e6, x.Drops)
		}
		if err := r.Close(); err != nil {
			fail(err)
		}
	}
	fmt.Println()
	fmt.Printf("%7s", "senders")
	for _, m := range ms {
		fmt.Printf(" | %-6s Gb/s  Mpps drop%%  seed", m)
	}
	fmt.Println()
	for _, n := range levels {
		fmt.Printf("%7d", n)
		for _, m := range ms {
			x := res[m][n]
			dp := 100 * float64(x.Drops) / float64(max(x.Drops+x.Frames, 1))
			fmt.Printf(" | %11.2f %5.2f %5.1f %5s", x.Gbps(), x.PPS()/1e6, dp, seedFigure(m, n))
		}
		fmt.Println()
	}
	fmt.Println("\nseed columns: Gb/s from shared/seeds/003 (96c AMD Turin, 400G bnxt).")
	if *fwd > 0 {
		forwarding(*fwd)
	}
}

// forwarding runs the two-NIC forwarding measurement with live rates, then
// seed 000's RX comparison under the IOMMU model.
func forwarding(d time.Duration) {
	fmt.Printf("\nforwarding simnic A → iflib RX → callback → iflib TX → simnic B, 64-byte frames, rx budget 32, %v:\n", d)
	res, err := seedbench.Forward(seedbench.ForwardOpts{Duration: d, Flows: 64, Config: iflib.Config{RxBudget: 32}},
		func(s seedbench.ForwardSample) { fmt.Println("  ", s) })
	if err != nil {
		fail(err)
	}
	fmt.Printf("   total: rx %.3f Mpps, forwarded %.3f Mpps, lost %.3f Mpps, RX map loads/packet %.3f\n",
		res.RxMpps(), res.FwdMpps(), res.LostMpps(), res.MapLoadsPerPacket())

	fmt.Println("\nseed 000 (D17901): 64-byte RX under the IOMMU model (300 busy-work units per map and unmap), ifsd_ba reuse off vs on:")
	var rates [2]float64
	for i, reuse := range []bool{false, true} {
		r, err := seedbench.Forward(seedbench.ForwardOpts{RxOnly: true, IOMMU: true, MapCost: 300, UnmapCost: 300,
			Duration: d / 2, Config: iflib.Config{NoRxReuse: !reuse}}, nil)
		if err != nil {
			fail(err)
		}
		rates[i] = r.RxMpps()
		fmt.Printf("   reuse %-5v rx %.3f Mpps, map loads/packet %.3f, IOMMU faults %d\n", reuse, r.RxMpps(), r.MapLoadsPerPacket(), r.IOMMU.Faults)
	}
	fmt.Printf("   reuse gain %+.0f %% (seed 000: 13.9 → 16.4 Mpps forwarding, +18 %%)\n", 100*(rates[1]/rates[0]-1))
}

func seedFigure(m iflib.TxMode, n int) string {
	for i, f := range seedbench.Seed003FanIns {
		if f == n {
			return strconv.FormatFloat(seedbench.Seed003Paper[m.String()][i], 'f', 0, 64)
		}
	}
	return "-"
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad sender count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "seeds:", err)
	os.Exit(1)
}
