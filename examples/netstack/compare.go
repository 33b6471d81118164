package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/goiflib/goiflib/examples/netstack/nsrig"
)

// compare measures TCP goodput (one connection, A→B, checked by hash),
// CPU time per MB and 64-byte request/response round trips between two
// gVisor stacks over goiflib (two simnics, mp_ring, no busdma checker:
// as configured by default, with simnic's checksum offload and TSO, and
// with the endpoint's LRO) and over gVisor's own link/pipe and
// link/channel, at MTU 1500
// and 9000, in interleaved rounds (the order of the links rotates each
// round), and prints medians with [min..max] and each link's goodput as a
// multiple of the pipe's in the same round.
func compare(ctx context.Context, o options, out io.Writer) error {
	links := []string{nsrig.LinkIflib, nsrig.LinkIflibOffload, nsrig.LinkIflibLRO, nsrig.LinkPipe, nsrig.LinkChannel}
	mtus := []int{1500, 9000}
	type key struct {
		mtu  int
		link string
	}
	res := map[key][]nsrig.Result{}
	const rr = 2000
	fmt.Fprintf(out, "go run ./examples/netstack -compare -rounds %d -bytes %d: %d interleaved rounds of %d MB one way and %d round trips per cell\n",
		o.rounds, o.bytes, o.rounds, o.bytes/1e6, rr)
	for round := range o.rounds {
		for _, mtu := range mtus {
			for i := range links {
				link := links[(i+round)%len(links)]
				st, err := nsrig.Open(link, mtu, nsrig.DefaultBenchPair())
				if err != nil {
					return err
				}
				mctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
				r, err := st.Measure(mctx, o.bytes, rr)
				cancel()
				if cerr := st.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return fmt.Errorf("round %d, %s at MTU %d: %w", round+1, link, mtu, err)
				}
				res[key{mtu, link}] = append(res[key{mtu, link}], r)
				fmt.Fprintf(out, "  round %d MTU %d %-13s %7.1f MB/s %6.2f CPU ms/MB %6.0f µs RTT\n",
					round+1, mtu, link, r.MBps, float64(r.CPUPerMB)/1e6, float64(r.RTT)/1e3)
			}
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| MTU | link | MB/s | × pipe (paired) | CPU ms/MB | × pipe CPU/MB | 64 B round trip µs |")
	fmt.Fprintln(out, "|---|---|---|---|---|---|---|")
	for _, mtu := range mtus {
		pipe := res[key{mtu, nsrig.LinkPipe}]
		for _, link := range links {
			rs := res[key{mtu, link}]
			var mbps, cpu, rtt, ratio, cpuRatio []float64
			for i, r := range rs {
				mbps = append(mbps, r.MBps)
				cpu = append(cpu, float64(r.CPUPerMB)/1e6)
				rtt = append(rtt, float64(r.RTT)/1e3)
				ratio = append(ratio, r.MBps/pipe[i].MBps)
				cpuRatio = append(cpuRatio, float64(r.CPUPerMB)/float64(pipe[i].CPUPerMB))
			}
			fmt.Fprintf(out, "| %d | %s | %s | %s | %s | %s | %s |\n", mtu, link,
				spread(mbps, "%.1f"), spread(ratio, "%.2f"), spread(cpu, "%.2f"), spread(cpuRatio, "%.2f"), spread(rtt, "%.0f"))
		}
	}
	return nil
}

// spread renders median [min..max].
func spread(v []float64, f string) string {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return "-"
	}
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf(f+" ["+f+".."+f+"]", med, s[0], s[len(s)-1])
}
