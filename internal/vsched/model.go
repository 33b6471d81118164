package vsched

// Costs are the cost model's parameters, in nanoseconds of virtual time.
type Costs struct {
	Name string

	// L1 is an atomic load or store that hits the CPU's own copy of the
	// line (state modified, or shared for a load).
	L1 float64
	// Locked is a locked read-modify-write (LOCK XADD, LOCK CMPXCHG,
	// XCHG) on a line the CPU already holds modified: the uncontended cost.
	Locked float64
	// XferCore is one transfer of a line from another core's cache in the
	// same core complex (CCX, sharing an L3): half a cross-core round trip.
	XferCore float64
	// XferCCX is the same transfer between cores of different CCXs.
	XferCCX float64
	// Fill is the first touch of a line no CPU holds (from L3 or memory).
	Fill float64
	// CCXSize is how many virtual CPUs share a CCX: CPUs c and d are in
	// one CCX when c/CCXSize == d/CCXSize. 0 puts them all in one.
	CCXSize int
	// Yield is runtime.Gosched when no other goroutine waits for the CPU.
	Yield float64
	// ContextSwitch is a CPU switching from one thread to another (a
	// goroutine switch at a Gosched, a time slice ending).
	ContextSwitch float64
	// Wake is from Wake (an Unpark, an Unlock with a waiter) until the
	// blocked thread runs again: a lock or park hand-off.
	Wake float64
	// Quantum is the time slice after which another runnable thread of the
	// same CPU takes over (a producer preempted inside its reservation
	// window, as the Go scheduler's preemption does); 0 never slices.
	Quantum float64
	// Step is charged at every scheduling point for the plain
	// instructions between two shared-memory operations.
	Step float64
}

// line states per CPU: MESI without E (a first load takes the line shared).
const (
	invalid uint8 = iota
	shared
	modified
)

type cacheLine struct {
	st   []uint8 // per CPU
	busy float64 // virtual time until which an exclusive transfer holds the line
}

// model is the per-run state of the cost model: a clock per virtual CPU,
// the thread each CPU runs, and each touched line's state per CPU.
type model struct {
	c     Costs
	clock []float64
	occ   []*thread // the thread each CPU runs now
	lines map[uintptr]*cacheLine
	// Counted for reports.
	transfers, hits int
}

func newModel(c Costs, cpus int) *model {
	return &model{c: c, clock: make([]float64, cpus), occ: make([]*thread, cpus), lines: map[uintptr]*cacheLine{}}
}

func (m *model) maxClock() float64 {
	var x float64
	for _, c := range m.clock {
		x = max(x, c)
	}
	return x
}

// ready is when thread t can next run: its CPU's clock, or later when it
// was woken later.
func (m *model) ready(t *thread) float64 { return max(m.clock[t.cpu], t.readyAt) }

// xfer is one line transfer from CPU a to CPU b.
func (m *model) xfer(a, b int) float64 {
	if m.c.CCXSize <= 0 || a/m.c.CCXSize == b/m.c.CCXSize {
		return m.c.XferCore
	}
	return m.c.XferCCX
}

// charge runs t's pending operation on its CPU: the clock moves to when t
// can run, plus a context switch if the CPU ran another thread, plus the
// operation's cost.
func (m *model) charge(t *thread) {
	now := m.ready(t)
	if o := m.occ[t.cpu]; o != t {
		if o != nil {
			now += m.c.ContextSwitch
		}
		m.occ[t.cpu] = t
		t.sliceAt = now
	}
	now += m.c.Step
	switch t.op {
	case OpLoad:
		now += m.access(t.cpu, t.addr, false, false, now)
	case OpStore, OpUnpark:
		now += m.access(t.cpu, t.addr, true, false, now)
	case OpRMW, OpLock, OpUnlock, OpPark:
		now += m.access(t.cpu, t.addr, true, true, now)
	case OpYield:
		now += m.c.Yield
	}
	m.clock[t.cpu] = now
}

// access is the cost of one access by cpu to the line holding addr at
// virtual time now, and the line's new state.
func (m *model) access(cpu int, addr uintptr, write, locked bool, now float64) float64 {
	key := addr >> 6
	l := m.lines[key]
	if l == nil {
		l = &cacheLine{st: make([]uint8, len(m.clock))}
		m.lines[key] = l
	}
	op := m.c.L1
	if locked {
		op = m.c.Locked
	}
	if !write {
		if l.st[cpu] != invalid {
			m.hits++
			return m.c.L1
		}
		lat, src := m.c.Fill, -1
		for d, st := range l.st {
			if st != invalid && (src < 0 || m.xfer(d, cpu) < lat) {
				lat, src = m.xfer(d, cpu), d
			}
		}
		start := max(now, l.busy)
		if src >= 0 {
			m.transfers++
			for d, st := range l.st {
				if st == modified {
					l.st[d] = shared
				}
			}
		}
		l.st[cpu] = shared
		return start - now + lat
	}
	start := max(now, l.busy)
	lat := 0.0
	if l.st[cpu] != modified {
		lat = m.c.Fill
		held := false
		for d, st := range l.st {
			if d == cpu || st == invalid {
				continue
			}
			if x := m.xfer(d, cpu); !held || x > lat {
				lat = x
			}
			held = true
			l.st[d] = invalid
		}
		if held {
			m.transfers++
		}
		l.st[cpu] = modified
	} else {
		m.hits++
	}
	l.busy = start + lat + op
	return start - now + lat + op
}
