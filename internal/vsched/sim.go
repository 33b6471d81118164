package vsched

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Op is a kind of scheduling point. internal/shm passes one before each
// operation it wraps.
type Op uint8

// The operations, as internal/shm reports them.
const (
	OpLoad   Op = iota // load of an atomic word
	OpStore            // store of an atomic word
	OpRMW              // locked read-modify-write (CAS, Add, Swap, And, Or)
	OpLock             // a mutex acquisition attempt
	OpUnlock           // a mutex release
	OpPark             // a park attempt
	OpUnpark           // an unpark
	OpYield            // runtime.Gosched
	opBlock            // internal: wait in the scheduler until woken
	opStart            // internal: a thread's first step
)

var opNames = [...]string{"load", "store", "rmw", "lock", "unlock", "park", "unpark", "yield", "block", "start"}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// active is the simulation in progress, nil when none is. Only one runs at a
// time in a process (Run serialises them).
var active atomic.Pointer[Sim]

// running serialises Run calls.
var running = make(chan struct{}, 1)

// Active reports whether a simulation is running. internal/shm falls back
// to the plain operation when none is.
func Active() bool { return active.Load() != nil }

// Point is the scheduling point before an operation op on the word at addr:
// the calling thread stops, the policy picks which thread runs next, and
// when this one is picked again its CPU is charged op's cost and the
// operation proceeds. Without a simulation it returns at once.
func Point(op Op, addr uintptr) {
	if s := active.Load(); s != nil {
		s.point(op, addr)
	}
}

// Yield is a scheduling point at which the calling thread gives way: the
// policy picks another runnable thread if there is one, and doing so is not
// a preemption. It reports false when no simulation runs (the caller then
// yields to the Go runtime).
func Yield() bool {
	s := active.Load()
	if s == nil {
		return false
	}
	s.point(OpYield, 0)
	return true
}

// Block stops the calling thread until Wake(addr) (or, spuriously, the end
// of the simulation's other threads: a simulation whose threads are all
// blocked fails with ErrDeadlock). The caller re-checks its condition after
// Block returns. Without a simulation it returns at once.
func Block(addr uintptr) {
	if s := active.Load(); s != nil {
		s.point(opBlock, addr)
	}
}

// Wake makes every thread blocked on addr runnable. It is not a scheduling
// point (the operation that made the condition true was one).
func Wake(addr uintptr) {
	if s := active.Load(); s != nil {
		s.wake(addr)
	}
}

// Errors a run may end with; each is wrapped in a *Failure naming the
// schedule that replays it.
var (
	ErrDeadlock  = errors.New("vsched: every unfinished thread is blocked")
	ErrStepLimit = errors.New("vsched: step limit reached (livelock, or raise Config.MaxSteps)")
)

type threadState uint8

const (
	runnable threadState = iota
	blocked
	done
)

type thread struct {
	id, cpu int
	fn      func()
	run     chan struct{}
	state   threadState
	op      Op      // the pending operation, executed when next resumed
	addr    uintptr // its word (or, when blocked, what it waits for)
	yielded bool    // gave way at its last point
	readyAt float64 // virtual time it became runnable (woken)
	sliceAt float64 // virtual time it got its CPU (time-sharing)
	lastRun int     // the step at which it last ran
}

// Sim is one run: the threads registered with Go, run one at a time.
type Sim struct {
	cfg     Config
	pol     Policy
	threads []*thread
	cur     *thread
	back    chan struct{}
	kill    chan struct{}
	killed  bool
	fail    error
	steps   int
	preempt int
	model   *model
	wg      sync.WaitGroup
	choices []int // the index chosen at each step, for the replay string
}

// Go registers fn as a thread of the simulation, on virtual CPU
// (number of threads registered before it) mod Config.CPUs. It must be
// called before the run starts (in the setup function).
func (s *Sim) Go(fn func()) {
	id := len(s.threads)
	cpu := id
	if s.cfg.CPUs > 0 {
		cpu = id % s.cfg.CPUs
	}
	s.threads = append(s.threads, &thread{id: id, cpu: cpu, fn: fn, run: make(chan struct{})})
}

// GoOn registers fn as a thread on virtual CPU cpu (taken mod
// Config.CPUs when that is set), as cpumap.PinCurrentThread pins a real
// one. Like Go, it must be called in the setup function.
func (s *Sim) GoOn(cpu int, fn func()) {
	if s.cfg.CPUs > 0 {
		cpu = ((cpu % s.cfg.CPUs) + s.cfg.CPUs) % s.cfg.CPUs
	} else if cpu < 0 {
		cpu = 0
	}
	s.threads = append(s.threads, &thread{id: len(s.threads), cpu: cpu, fn: fn, run: make(chan struct{})})
}

// Steps returns how many scheduling points the run has passed so far.
func (s *Sim) Steps() int { return s.steps }

// Now returns the virtual time, in nanoseconds, of the latest CPU clock.
func (s *Sim) Now() float64 {
	if s.model == nil {
		return 0
	}
	return s.model.maxClock()
}

// Clock returns virtual CPU cpu's clock in nanoseconds (0 without a cost
// model).
func (s *Sim) Clock(cpu int) float64 {
	if s.model == nil || cpu < 0 || cpu >= len(s.model.clock) {
		return 0
	}
	return s.model.clock[cpu]
}

func (s *Sim) point(op Op, addr uintptr) {
	t := s.cur
	if s.killed || t == nil {
		// A thread of an abandoned run, or a goroutine outside the
		// simulation: the run is over for it.
		runtime.Goexit()
	}
	t.op, t.addr = op, addr
	t.yielded = op == OpYield
	if op == opBlock {
		t.state = blocked
	}
	s.back <- struct{}{}
	select {
	case <-t.run:
	case <-s.kill:
		runtime.Goexit()
	}
}

func (s *Sim) wake(addr uintptr) {
	for _, t := range s.threads {
		if t.state == blocked && t.addr == addr {
			t.state = runnable
			t.op = opStart // the block itself costs nothing more
			if s.model != nil {
				t.readyAt = s.model.clock[s.cur.cpu] + s.model.c.Wake
			}
		}
	}
}

// start runs t's body on its goroutine, handing back to the controller at
// the end (or on a panic, recorded as the run's failure).
func (s *Sim) start(t *thread) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-t.run:
		case <-s.kill:
			return
		}
		finished := false
		defer func() {
			if !finished {
				if r := recover(); r != nil && !s.killed {
					s.fail = fmt.Errorf("thread %d panicked: %v", t.id, r)
				}
				// A Goexit (t.Fatal in a thread, or a kill) lands
				// here with r == nil.
				if s.killed {
					return
				}
				if s.fail == nil {
					s.fail = fmt.Errorf("thread %d exited (runtime.Goexit, e.g. t.FailNow in a thread)", t.id)
				}
			}
			t.state = done
			s.back <- struct{}{}
		}()
		t.fn()
		finished = true
	}()
}

// run drives the threads to completion under s.pol.
func (s *Sim) run() error {
	for _, t := range s.threads {
		t.op = opStart
		s.start(t)
	}
	var last *thread
	for {
		if s.fail != nil {
			return s.abandon(s.fail)
		}
		_, timed := s.pol.(*timedPolicy)
		opts, curOK := s.options(last, !timed)
		if len(opts) == 0 {
			for _, t := range s.threads {
				if t.state != done {
					return s.abandon(ErrDeadlock)
				}
			}
			return nil
		}
		if s.steps >= s.cfg.maxSteps() {
			return s.abandon(ErrStepLimit)
		}
		i := s.pol.choose(s, opts, curOK)
		if i < 0 || i >= len(opts) {
			return s.abandon(fmt.Errorf("vsched: policy chose option %d of %d", i, len(opts)))
		}
		if curOK && i != 0 {
			s.preempt++
		}
		next := opts[i]
		next.lastRun = s.steps
		s.steps++
		s.choices = append(s.choices, i)
		if s.cfg.Trace != nil {
			fmt.Fprintf(s.cfg.Trace, "%d: thread %d %v %#x (option %d of %d)\n", s.steps-1, next.id, next.op, next.addr, i, len(opts))
		}
		if s.model != nil {
			s.model.charge(next)
		}
		s.cur = next
		last = next
		next.run <- struct{}{}
		<-s.back
	}
}

// options lists the runnable threads, the last one to run first when it is
// still runnable and did not give way (curOK): continuing it is not a
// preemption. With giveWay, threads whose pending operation is a yield are
// left out while any other thread can run (as Rust's loom treats
// yield_now): a spin loop that yields cannot starve the thread it waits
// for, and the exploration does not enumerate a spinner's idle re-checks.
// When every runnable thread is yielding, the one that ran least recently
// is the only option (round robin, no branching): spinners re-check in
// turn until one of them sees a change. The Timed policy handles yields
// itself (giveWay false).
func (s *Sim) options(last *thread, giveWay bool) (opts []*thread, curOK bool) {
	opts = make([]*thread, 0, len(s.threads))
	active := false
	var oldest *thread
	for _, t := range s.threads {
		if t.state != runnable {
			continue
		}
		if !t.yielded {
			active = true
			break
		}
		if oldest == nil || t.lastRun < oldest.lastRun {
			oldest = t
		}
	}
	if giveWay && !active && oldest != nil {
		return append(opts, oldest), false
	}
	skip := func(t *thread) bool { return t.state != runnable || giveWay && active && t.yielded }
	if last != nil && !skip(last) && !(giveWay && last.yielded) {
		opts = append(opts, last)
		curOK = true
	}
	for _, t := range s.threads {
		if t == last && curOK || skip(t) {
			continue
		}
		opts = append(opts, t)
	}
	return opts, curOK
}

// abandon ends a failed run: every thread still parked in the scheduler
// exits (runtime.Goexit) without running further.
func (s *Sim) abandon(err error) error {
	s.killed = true
	close(s.kill)
	s.wg.Wait()
	return err
}
