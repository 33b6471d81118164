package cpumap

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// PlacementTable places the same devices, in order, once per behaviour (each
// behaviour with a fresh Allocator over t, so the registry starts empty) and
// renders the result as a text table: one row per queue pair (RX queue q and
// TX queue q of a device) with the CPUs each behaviour gives them, then per
// behaviour how many TX queues share their RX queue's CPU, how many sit on
// another CPU of that CPU's L2 group, and how many distinct CPUs the queues
// use. It is the comparison review D24094 is about, for any
// machine: pass a fixture (the Atom C2758 of that review's measurement) or
// Discover's topology.
//
// The default behaviours are BeforeD24094 and FreeBSD: the change itself.
func PlacementTable(t *Topology, reqs []Request, behaviors ...Behavior) (string, error) {
	if len(behaviors) == 0 {
		behaviors = []Behavior{BeforeD24094, FreeBSD}
	}
	cols := make([][]*Placement, len(behaviors))
	for i, b := range behaviors {
		a := NewAllocator(t, AllocatorOptions{Behavior: b})
		for _, r := range reqs {
			pl, err := a.Place(r)
			if err != nil {
				return "", fmt.Errorf("cpumap: %s placement of %q: %w", b, r.Device, err)
			}
			cols[i] = append(cols[i], pl)
		}
	}
	var sb strings.Builder
	w := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "queue")
	for _, b := range behaviors {
		fmt.Fprintf(w, "\t%s", b)
	}
	fmt.Fprint(w, "\n")
	for range behaviors {
		fmt.Fprint(w, "\trx  tx")
	}
	fmt.Fprint(w, "\n")
	cell := func(cpus []int, q int) string {
		if q >= len(cpus) {
			return "-"
		}
		return fmt.Sprint(cpus[q])
	}
	for d, r := range reqs {
		name := r.Device
		if name == "" {
			name = fmt.Sprintf("dev%d", d)
		}
		for q := range max(r.RxQueues, r.TxQueues) {
			fmt.Fprintf(w, "%s q%d", name, q)
			for i := range behaviors {
				pl := cols[i][d]
				fmt.Fprintf(w, "\t%-3s %s", cell(pl.RxCPU, q), cell(pl.TxCPU, q))
			}
			fmt.Fprint(w, "\n")
		}
	}
	// Per behaviour: TX queues on their RX queue's CPU, on another CPU of
	// its L2 group, out of the queue pairs; and the distinct CPUs used.
	type summary struct {
		same, near, pairs int
		used              CPUSet
	}
	sums := make([]summary, len(behaviors))
	for i := range behaviors {
		s := &sums[i]
		for _, pl := range cols[i] {
			for _, c := range pl.RxCPU {
				s.used.Set(c)
			}
			for q, c := range pl.TxCPU {
				s.used.Set(c)
				if q >= len(pl.RxCPU) {
					continue
				}
				s.pairs++
				switch rx := pl.RxCPU[q]; {
				case c == rx:
					s.same++
				case t.L2Group(rx).Has(c):
					s.near++
				}
			}
		}
	}
	fmt.Fprint(w, "tx on its rx cpu")
	for _, s := range sums {
		fmt.Fprintf(w, "\t%d/%d", s.same, s.pairs)
	}
	fmt.Fprint(w, "\ntx on an L2 neighbour")
	for _, s := range sums {
		fmt.Fprintf(w, "\t%d/%d", s.near, s.pairs)
	}
	fmt.Fprint(w, "\ndistinct cpus")
	for _, s := range sums {
		fmt.Fprintf(w, "\t%d", s.used.Count())
	}
	fmt.Fprintln(w)
	if err := w.Flush(); err != nil {
		return "", err
	}
	return sb.String(), nil
}
