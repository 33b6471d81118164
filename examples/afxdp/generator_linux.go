package afxdp

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// generator is the traffic source of the forwarding measurements: an
// AF_XDP socket that only transmits (copy mode) on the peer end of the
// input pair, sending one prebuilt frame from every UMEM frame, over and
// over, as fast as the kernel takes them. It is the fastest sender Linux
// offers on veth (about 1 Mpps on one core here).
type generator struct {
	u    *UMEM
	s    *xsk
	n    uint32 // frames
	stop atomic.Bool
	done chan struct{}
	sent atomic.Uint64
	tid  atomic.Int32 // the loop's OS thread (it is locked to it)
}

func startGenerator(ns netNS, ifindex int, frame []byte) (*generator, error) {
	const frames = 2048
	u, err := NewUMEM(UMEMConfig{FrameSize: 2048, Frames: frames})
	if err != nil {
		return nil, err
	}
	g := &generator{u: u, n: frames, done: make(chan struct{})}
	for i := 0; i < frames; i++ {
		copy(u.mem[i*2048:], frame)
	}
	err = ns.do(func() error {
		var err error
		if g.s, err = newSocket(u, ringSizes{fill: 64, comp: frames, tx: frames}); err != nil {
			return err
		}
		return g.s.bind(ifindex, 0, BindCopy, nil)
	})
	if err != nil {
		if g.s != nil {
			g.s.close()
		}
		_ = u.Close()
		return nil, err
	}
	go g.loop(uint32(len(frame)))
	return g, nil
}

func (g *generator) loop(flen uint32) {
	defer close(g.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g.tid.Store(int32(unix.Gettid()))
	s := g.s
	next := uint32(0) // next frame index to send
	free := g.n       // frames not on the TX ring or in flight
	for !g.stop.Load() {
		if c := s.comp.peekAvail(); c > 0 {
			s.comp.cachedCons += c
			s.comp.release()
			free += c
		}
		if k := min(free, s.tx.free(free), 256); k > 0 {
			for i := uint32(0); i < k; i++ {
				d := s.tx.desc(s.tx.cachedProd + i)
				d.Addr, d.Len, d.Options = uint64((next+i)%g.n)*2048, flen, 0
			}
			next += k
			s.tx.cachedProd += k
			s.tx.publish()
			free -= k
			g.sent.Add(uint64(k))
		}
		if s.tx.needWakeup() || !s.wakeup {
			_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
			if e == unix.ENETDOWN || e == unix.ENXIO {
				return
			}
		}
	}
}

// cpuTime is the CPU time of the generator's thread so far
// (clock_gettime on the thread's CPU clock), 0 before the loop started.
func (g *generator) cpuTime() time.Duration {
	return threadCPUTime(int(g.tid.Load()))
}

// threadCPUTime reads the CPU clock of a thread of this process:
// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) of the kernel's
// posix-cpu-timers, what pthread_getcpuclockid returns.
func threadCPUTime(tid int) time.Duration {
	if tid <= 0 {
		return 0
	}
	const cpuclockSched, cpuclockPerThread = 2, 4
	var ts unix.Timespec
	if unix.ClockGettime(int32(^tid<<3|cpuclockPerThread|cpuclockSched), &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

func (g *generator) close() {
	g.stop.Store(true)
	<-g.done
	g.s.close()
	_ = g.u.Close()
}
