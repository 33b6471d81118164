//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/goiflib/goiflib/examples/afxdp"
)

// xdpAvailable says why the AF_XDP section (a private network namespace
// with veth pairs) cannot run, or nil.
func xdpAvailable() error { return afxdp.RigAvailable() }

// afxdpSection forwards over a veth pair with AF_XDP through iflib and
// through the hand-written loop, Rounds times; each round runs the
// forwarders in a new random order in each XDP mode, and each iflib
// forwarder's Mpps is divided by the hand loop's of the same round.
func (r *runner) afxdpSection() *AFXDP {
	sec := &AFXDP{Setup: fmt.Sprintf("in a private network namespace, a generator sends 64-byte frames into veth pair 0; the forwarder receives them with AF_XDP "+
		"and transmits them on veth pair 1, whose peer counts them; iflib (two drivers on one UMEM, the transmitting one in mp_ring and in simple_tx mode) and the hand-written loop over the same rings, "+
		"native and generic XDP, %v each, in a new random order every round, GOMAXPROCS=%d", r.o.XDPDur, r.full)}
	if err := afxdp.RigAvailable(); err != nil {
		sec.Skipped = err.Error()
		return sec
	}
	fws := []string{afxdp.FwdIflib, afxdp.FwdIflibSimple, afxdp.FwdHand}
	var a acc
	for round := range r.o.Rounds {
		order := make([]string, len(fws))
		for i, j := range r.rng.Perm(len(fws)) {
			order[i] = fws[j]
		}
		sec.Orders = append(sec.Orders, order)
		res, err := afxdp.RunForward(context.Background(), afxdp.ForwardOptions{Duration: r.o.XDPDur, Interval: r.o.XDPDur, Forwarders: order})
		if err != nil {
			if errors.Is(err, afxdp.ErrUnavailable) {
				sec.Skipped = err.Error()
			} else {
				sec.Skipped = "failed: " + err.Error()
			}
			sec.Points = nil
			return sec
		}
		hand := map[afxdp.XDPMode]float64{}
		for _, x := range res {
			if x.Forwarder == afxdp.FwdHand {
				hand[x.Mode] = x.Mpps
			}
		}
		var line []string
		for _, x := range res {
			k := pkey{variant: x.Mode.String() + "/" + x.Forwarder, proc: r.full}
			a.add(k, MMpps, x.Mpps)
			a.add(k, MCPU, x.CPUNsPerPkt)
			a.add(k, MFwdCPU, x.FwdCPUNsPerPkt)
			a.add(k, MOffered, float64(x.Generated)/max(x.Elapsed.Seconds(), 1e-9)/1e6)
			if x.Forwarder != afxdp.FwdHand && hand[x.Mode] > 0 {
				a.add(k, MToHand, x.Mpps/hand[x.Mode])
			}
			a.addCounts(k, Counts{ElapsedNs: x.Elapsed.Nanoseconds(), CPUNs: int64(x.CPUNsPerPkt * float64(x.Packets)), Packets: x.Packets, Offered: x.Generated})
			line = append(line, fmt.Sprintf("%s/%s %.3f Mpps %.0f cpu-ns/pkt", x.Mode, x.Forwarder, x.Mpps, x.CPUNsPerPkt))
		}
		r.prog.step("%s round %d/%d %v", SecAFXDP, round+1, r.o.Rounds, line)
	}
	sec.Points = a.points()
	return sec
}
