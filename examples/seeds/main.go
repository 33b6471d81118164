// Command seeds reproduces the founding measurements on this machine.
//
// Until the iflib packages land it runs seed 003's comparison with
// bufring.DRBR alone: N senders push items through one transmit queue whose
// transmit callback does a fixed amount of work standing in for descriptor
// encap, once with DRBR (producer-limited deferral, MaxProducers 1) and once
// with a plain mutex (iflib's simple_tx). It prints items/s per fan-in with
// the seed's Gb/s figures beside for orientation: those came from a 96-core
// machine and a 400G NIC, so compare shapes and ratios, not absolute values.
//
//	go run ./examples/seeds                   # about 5 s
//	go run ./examples/seeds -dur 2s -work 512 # longer, heavier encap
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goiflib/goiflib/bufring"
)

// Seed 003 (simple_tx with buf_ring/drbr deferral), Gb/s at 1/2/4/8/16/32/64
// sending threads on one queue, worst of three runs, 96c AMD Turin, 400G bnxt.
var (
	seedFanIn   = []int{1, 2, 4, 8, 16, 32, 64}
	seedMpring  = []float64{20, 44, 48, 35, 14, 7, 4}
	seedSimple  = []float64{44, 44, 44, 43, 40, 36, 32}
	seedDRBRGbs = []float64{44, 90, 90, 86, 57, 50, 35}
)

func main() {
	dur := flag.Duration("dur", 300*time.Millisecond, "measuring time per fan-in and mode")
	work := flag.Int("work", 256, "encap work per item (xorshift rounds, about 0.4 ns each)")
	pre := flag.Int("pre", 64, "per-item work by the sender before Transmit (packet build)")
	maxP := flag.Int("maxproducers", bufring.DefaultMaxProducers, "DRBR MaxProducers (net.iflib.simple_max_producers)")
	size := flag.Int("ring", 2048, "DRBR ring size (net.iflib.simple_txbr_size)")
	senders := flag.String("senders", "1,2,4,8,16,32,64", "comma-separated fan-in levels")
	flag.Parse()

	levels, err := parseLevels(*senders)
	if err != nil {
		fmt.Fprintln(os.Stderr, "seeds:", err)
		os.Exit(2)
	}
	fmt.Printf("seed 003: DRBR (MaxProducers %d) vs plain mutex (simple_tx), GOMAXPROCS %d, encap %d, pre %d, %v per point\n\n",
		*maxP, runtime.GOMAXPROCS(0), *work, *pre, *dur)
	fmt.Printf("%7s %12s %12s %7s %9s | %s\n", "senders", "mutex Mit/s", "drbr Mit/s", "ratio", "deferred", "seed 003 Gb/s: mp_ring simple_tx drbr (ratio)")
	for _, n := range levels {
		mutexRate, _, err := run(n, *dur, *work, *pre, -1, *size)
		if err != nil {
			fmt.Fprintln(os.Stderr, "seeds:", err)
			os.Exit(1)
		}
		drbrRate, st, err := run(n, *dur, *work, *pre, *maxP, *size)
		if err != nil {
			fmt.Fprintln(os.Stderr, "seeds:", err)
			os.Exit(1)
		}
		sent := st.Direct + st.Deferred
		line := fmt.Sprintf("%7d %12.2f %12.2f %6.2fx %8.1f%% |", n, mutexRate/1e6, drbrRate/1e6, drbrRate/mutexRate,
			100*float64(st.Deferred)/float64(max(sent, 1)))
		for i, f := range seedFanIn {
			if f == n {
				line += fmt.Sprintf(" %4.0f %4.0f %4.0f (%.2fx)", seedMpring[i], seedSimple[i], seedDRBRGbs[i], seedDRBRGbs[i]/seedSimple[i])
			}
		}
		fmt.Println(line)
	}
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad -senders entry %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// spin is the fixed work: dependent xorshift rounds.
func spin(v uint64, rounds int) uint64 {
	for i := 0; i < rounds; i++ {
		v ^= v << 13
		v ^= v >> 7
		v ^= v << 17
	}
	return v
}

// run drives n senders for dur and returns items/s. maxP < 0 selects the
// plain mutex sender.
func run(n int, dur time.Duration, work, pre, maxP, size int) (float64, bufring.DRBRStats, error) {
	var sink uint64 // written only under the queue lock
	xmit := func(v uint64) bool { sink += spin(v, work); return true }
	var send func(v uint64)
	var d *bufring.DRBR[uint64]
	if maxP >= 0 {
		var err error
		if d, err = bufring.NewDRBR(size, maxP, xmit); err != nil {
			return 0, bufring.DRBRStats{}, err
		}
		send = func(v uint64) { _ = d.Transmit(v) }
	} else {
		var mu sync.Mutex
		send = func(v uint64) { mu.Lock(); xmit(v); mu.Unlock() }
	}
	var stop atomic.Bool
	var count atomic.Uint64
	var wg sync.WaitGroup
	start := time.Now()
	for s := 0; s < n; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local uint64
			for v := uint64(s) << 40; !stop.Load(); v++ {
				send(spin(v, pre))
				local++
			}
			count.Add(local)
		}()
	}
	time.Sleep(dur)
	stop.Store(true)
	wg.Wait()
	el := time.Since(start)
	_ = sink
	var st bufring.DRBRStats
	if d != nil {
		st = d.Stats()
		if d.Pending() != 0 {
			return 0, st, fmt.Errorf("%d items left in the ring after every sender returned", d.Pending())
		}
	}
	return float64(count.Load()) / el.Seconds(), st, nil
}
