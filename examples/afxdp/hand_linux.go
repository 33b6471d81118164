package afxdp

import (
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
// by UMEM offset, in bursts of up to handBurst, with one index update per
// burst and ring. It has no packet objects, no busdma maps, no software
// queue and no per-packet bookkeeping: the cost floor of the rings.
type handForwarder struct {
	u        *UMEM
	in, out  *xsk
	prog     *xdpRedirect
	dst      [6]byte
	stop     atomic.Bool
	done     chan struct{}
	started  bool
	fwd      atomic.Uint64 // frames put on the TX ring
	kicks    atomic.Uint64
	idlePoll atomic.Uint64
}

// handBurst is the loop's batch: the kernel's own RX batch in xsk (the
// 64 of NAPI_POLL_WEIGHT).
const handBurst = 64

// startHand binds in (RX) and out (TX) on their queue 0, attaches the
// redirect program to in, posts every UMEM frame to in's fill ring and
// starts the loop. Frames are the UMEM's, all of them.
func startHand(ns netNS, u *UMEM, inIdx, outIdx int, mode XDPMode, nrxd, ntxd int, dst net.HardwareAddr) (*handForwarder, error) {
	h := &handForwarder{u: u, done: make(chan struct{})}
	copy(h.dst[:], dst)
	frames := uint32(u.Frames())
	ok := false
	defer func() {
		if !ok {
			h.close()
		}
	}()
	var err error
	if h.prog, err = loadRedirect(1); err != nil {
		return nil, err
	}
	fill := uint32(1)
	for fill < 2*frames {
		fill <<= 1
	}
	err = ns.do(func() error {
		var err error
		if h.in, err = newSocket(u, ringSizes{fill: fill, comp: 64, rx: uint32(nrxd)}); err != nil {
			return err
		}
		if err := h.in.bind(inIdx, 0, BindCopy, nil); err != nil {
			return err
		}
		if h.out, err = newSocket(u, ringSizes{fill: 64, comp: fill, tx: uint32(ntxd)}); err != nil {
			return err
		}
		if err := h.out.bind(outIdx, 0, BindCopy, nil); err != nil {
			return err
		}
		if err := h.prog.set(0, h.in.fd); err != nil {
			return err
		}
		return h.prog.attach(inIdx, mode)
	})
	if err != nil {
		return nil, err
	}
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
		n := min(in.rx.peekAvail(), handBurst)
		if n > 0 {
			if f := out.tx.free(n); f < n {
				n = f
			}
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
			h.fwd.Add(uint64(n))
			if out.tx.needWakeup() {
				h.kicks.Add(1)
				_ = out.kickTx()
			}
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
		if n == 0 && m == 0 {
			if out.tx.pending() > 0 {
				h.kicks.Add(1)
				_ = out.kickTx()
				continue
			}
			h.idlePoll.Add(1)
			_, _ = unix.Poll(fds, 1)
		}
	}
}

// close stops the loop and removes the program and the sockets.
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
	if err != nil {
		return fmt.Errorf("afxdp: hand forwarder: %w", err)
	}
	return nil
}
