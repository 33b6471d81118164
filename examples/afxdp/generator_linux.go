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
// over, as fast as the kernel takes them: up to 256 descriptors per
// sendto(2), no system call per frame.
type generator struct {
	u    *UMEM
	s    *xsk
	stop atomic.Bool
	done chan struct{}
	sent atomic.Uint64
	tid  atomic.Int32 // the loop's OS thread (it is locked to it)
}

// genFrames is the generator's UMEM (of MinFrameSize frames) and the size
// of its TX and completion rings.
const genFrames = 2048

func startGenerator(ns netNS, ifindex int, frame []byte) (*generator, error) {
	u, err := NewUMEM(UMEMConfig{FrameSize: MinFrameSize, Frames: genFrames})
	if err != nil {
		return nil, err
	}
	g := &generator{u: u, done: make(chan struct{})}
	for i := 0; i < genFrames; i++ {
		copy(u.mem[i<<u.frameShift:], frame)
	}
	err = ns.do(func() error {
		var err error
		if g.s, err = newSocket(u, ringSizes{fill: 64, comp: genFrames, tx: genFrames}); err != nil {
			return err
		}
		return g.s.bind(ifName(ifindex), ifindex, 0, BindCopy, false, nil)
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
	next := uint32(0)         // next frame index to send
	free := uint32(genFrames) // frames not on the TX ring or in flight
	for !g.stop.Load() {
		if c := s.comp.peekAvail(); c > 0 {
			s.comp.cachedCons += c
			s.comp.release()
			free += c
		}
		if k := min(free, s.tx.free(free), 256); k > 0 {
			for i := uint32(0); i < k; i++ {
				d := s.tx.desc(s.tx.cachedProd + i)
				d.Addr, d.Len, d.Options = uint64((next+i)%genFrames)<<g.u.frameShift, flen, 0
			}
			next += k
			s.tx.cachedProd += k
			s.tx.publish()
			free -= k
			g.sent.Add(uint64(k))
		}
		if s.tx.needWakeup() || !s.wakeup {
			if err := s.kickTx(); err == unix.ENETDOWN || err == unix.ENXIO {
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
