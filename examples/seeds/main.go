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
