package afxdp

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// handForwarder is the baseline: an AF_XDP forwarding loop written by hand
// over the same rings, without iflib, the way l2fwd in the kernel's
// xdpsock sample and libxdp users do it. One goroutine moves frames
//
//	RX ring of "in" ─▶ (rewrite the destination MAC) ─▶ TX ring of "out" ─▶ sendto
//	completion ring of "out" ─▶ fill ring of "in"
//
// by UMEM offset, in bursts of up to burst frames, with one index update
// per burst and ring and one kick per burst. It has no packet objects, no
// busdma maps, no software queue and no per-packet bookkeeping: the cost
// floor of the rings.
//
// What it shares with the iflib forwarder, so that the comparison is of
// the software alone: the generator, the veth pairs, the XDP program, the
// rings' sizes (fill 2×nrxd, RX nrxd, TX 2×ntxd, completion ntxd, as
// Driver makes them), the frames in circulation (nrxd + ntxd: iflib posts
// nrxd-1 and keeps up to ntxd-2 on the TX ring), the burst (iflib's
// rx_budget), the kick (sendto when the kernel asks, after each burst) and
// the wakeup (poll(2) on the RX socket when there is nothing to do).
type handForwarder struct {
	u       *UMEM
	in, out *xsk
	prog    *xdpRedirect
	dst     [6]byte
	burst   uint32
	stop    atomic.Bool
	done    chan struct{}
	started bool
	kicks   atomic.Uint64 // sendto(2) calls
	polls   atomic.Uint64 // poll(2) calls
}

// startHand maps a UMEM of nrxd+ntxd frames, binds in (RX) and out (TX) on
// their queue 0, attaches the redirect program to in, posts every frame to
// in's fill ring and starts the loop.
func startHand(ns netNS, inIdx, outIdx int, mode XDPMode, nrxd, ntxd, burst int, dst net.HardwareAddr) (*handForwarder, error) {
	u, err := NewUMEM(UMEMConfig{Frames: nrxd + ntxd})
	if err != nil {
		return nil, err
	}
	h := &handForwarder{u: u, done: make(chan struct{}), burst: uint32(burst)}
	copy(h.dst[:], dst)
	ok := false
	defer func() {
		if !ok {
			_ = h.close()
		}
	}()
	if h.prog, err = loadRedirect(1, false); err != nil {
		return nil, err
	}
	rx, tx := uint32(nrxd), uint32(ntxd)
	err = ns.do(func() error {
		var err error
		// The rings a side does not use stay at the minimum.
		if h.in, err = newSocket(u, ringSizes{fill: 2 * rx, comp: MinRingSize, rx: rx}); err != nil {
			return err
		}
		if err := h.in.bind(ifName(inIdx), inIdx, 0, BindCopy, false, nil); err != nil {
			return err
		}
		if h.out, err = newSocket(u, ringSizes{fill: MinRingSize, comp: tx, tx: 2 * tx}); err != nil {
			return err
		}
		if err := h.out.bind(ifName(outIdx), outIdx, 0, BindCopy, false, nil); err != nil {
			return err
		}
		if err := h.prog.set(0, h.in.fd); err != nil {
			return err
		}
		return h.prog.attach(ifName(inIdx), inIdx, mode, false)
	})
	if err != nil {
		return nil, err
	}
	// nrxd+ntxd frames fit the fill ring (2×nrxd) when ntxd <= nrxd; the
	// rest wait on the completion side's free count below.
	frames := min(uint32(u.Frames()), h.in.fill.free(uint32(u.Frames())))
	for i := uint32(0); i < frames; i++ {
		*h.in.fill.addr(h.in.fill.cachedProd) = uint64(i) << u.frameShift
		h.in.fill.cachedProd++
	}
	h.in.fill.publish()
	ok = true
	h.started = true
	go h.loop()
	return h, nil
}

func (h *handForwarder) loop() {
	defer close(h.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	in, out := h.in, h.out
	mask := ^uint64(h.u.frameSize - 1)
	mem := h.u.mem
	fds := []unix.PollFd{{Fd: int32(in.fd), Events: unix.POLLIN}}
	for !h.stop.Load() {
		// RX → TX.
		n := min(in.rx.peekAvail(), h.burst)
		if n > 0 {
			n = min(n, out.tx.free(n))
			for i := uint32(0); i < n; i++ {
				d := in.rx.desc(in.rx.cachedCons + i)
				copy(mem[d.Addr:d.Addr+6], h.dst[:])
				t := out.tx.desc(out.tx.cachedProd + i)
				t.Addr, t.Len, t.Options = d.Addr, d.Len, 0
			}
			in.rx.cachedCons += n
			in.rx.release()
			out.tx.cachedProd += n
			out.tx.publish()
		}
		// One kick per burst, and one for what an earlier kick left
		// (the kernel's budget, back-pressure) before going idle.
		if out.tx.needWakeup() && out.tx.pending() > 0 {
			h.kicks.Add(1)
			_ = out.kickTx()
		}
		// Completions → fill.
		m := out.comp.peekAvail()
		if m > 0 {
			m = min(m, in.fill.free(m))
			for i := uint32(0); i < m; i++ {
				*in.fill.addr(in.fill.cachedProd + i) = *out.comp.addr(out.comp.cachedCons + i) & mask
			}
			out.comp.cachedCons += m
			out.comp.release()
			in.fill.cachedProd += m
			in.fill.publish()
			if in.fill.needWakeup() {
				in.kickRx()
			}
		}
		if n == 0 && m == 0 && out.tx.pending() == 0 {
			h.polls.Add(1)
			_, _ = unix.Poll(fds, 1)
		}
	}
}

func (h *handForwarder) counts() FwdCounts {
	c := FwdCounts{TxKicks: h.kicks.Load(), Polls: h.polls.Load()}
	if st, err := h.in.stats(); err == nil {
		c.RxRingFull, c.FillRingEmpty = st.Rx_ring_full, st.Rx_fill_ring_empty_descs
	}
	return c
}

// close stops the loop and removes the program, the sockets and the UMEM.
func (h *handForwarder) close() error {
	if h.started {
		h.started = false
		h.stop.Store(true)
		<-h.done
	}
	var err error
	if h.prog != nil {
		err = h.prog.close()
	}
	for _, s := range []*xsk{h.in, h.out} {
		if s != nil {
			s.close()
		}
	}
	err = errors.Join(err, h.u.Close())
	if err != nil {
		return fmt.Errorf("afxdp: hand forwarder: %w", err)
	}
	return nil
}
