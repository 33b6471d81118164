package vsched

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// A Policy picks the thread that runs next at each scheduling point. Make
// one with Random, Timed or Replay.
type Policy interface {
	choose(s *Sim, opts []*thread, curOK bool) int
	name() string
}

// Random is a seeded random policy: at each point the running thread is
// preempted with probability switchProb (in favour of a uniformly chosen
// other runnable thread); when it cannot continue, the next is chosen
// uniformly. The same seed gives the same schedule.
func Random(seed uint64, switchProb float64) Policy {
	return &randomPolicy{seed: seed, p: switchProb, rng: rand.New(rand.NewPCG(seed, 0x76736368))}
}

type randomPolicy struct {
	seed uint64
	p    float64
	rng  *rand.Rand
}

func (r *randomPolicy) name() string { return fmt.Sprintf("Random(%#x, %g)", r.seed, r.p) }

func (r *randomPolicy) choose(_ *Sim, opts []*thread, curOK bool) int {
	if curOK {
		if len(opts) > 1 && r.rng.Float64() < r.p {
			return 1 + r.rng.IntN(len(opts)-1)
		}
		return 0
	}
	return r.rng.IntN(len(opts))
}

// Timed runs the simulation in virtual time: at each point the thread
// whose CPU is furthest behind runs next (ties broken by the seed), so the
// operations execute in the order of their virtual start times, a
// conservative discrete-event simulation. A CPU with several runnable
// threads runs the one it ran last until it yields, blocks, or has run for
// Costs.Quantum; then the next in turn. It needs Config.Costs.
func Timed(seed uint64) Policy {
	return &timedPolicy{seed: seed, rng: rand.New(rand.NewPCG(seed, 0x74696d65))}
}

type timedPolicy struct {
	seed uint64
	rng  *rand.Rand
}

func (p *timedPolicy) name() string { return fmt.Sprintf("Timed(%#x)", p.seed) }

func (p *timedPolicy) choose(s *Sim, opts []*thread, _ bool) int {
	m := s.model
	best, bestAt, ties := -1, 0.0, 0
	for i, t := range opts {
		if !p.eligible(m, t, opts) {
			continue
		}
		at := m.ready(t)
		switch {
		case best < 0 || at < bestAt:
			best, bestAt, ties = i, at, 1
		case at == bestAt:
			// Reservoir choice among equal times, from the seed.
			ties++
			if p.rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// eligible reports whether t is the thread its CPU would run now among the
// runnable opts: the occupant unless it gave way or its slice is over,
// else the first runnable thread after the occupant in id order.
func (p *timedPolicy) eligible(m *model, t *thread, opts []*thread) bool {
	occ := m.occ[t.cpu]
	keep := occ != nil && occ.state == runnable && !occ.yielded &&
		(m.c.Quantum <= 0 || m.clock[t.cpu]-occ.sliceAt < m.c.Quantum)
	if keep {
		return t == occ
	}
	// Round robin from the occupant: the first runnable thread of this
	// CPU after it (the occupant itself last).
	start := 0
	if occ != nil {
		start = occ.id + 1
	}
	var pick *thread
	bestRank := -1
	for _, o := range opts {
		if o.cpu != t.cpu {
			continue
		}
		rank := o.id - start
		if rank < 0 {
			rank += 1 << 30
		}
		if bestRank < 0 || rank < bestRank {
			pick, bestRank = o, rank
		}
	}
	return pick == t
}

// Replay follows a schedule string that a Failure printed (or
// Result.Schedule returned): at each listed step it picks the listed
// option, elsewhere option 0 (continue the running thread, or the first
// runnable one).
func Replay(schedule string) (Policy, error) {
	p := &replayPolicy{at: map[int]int{}, src: schedule}
	if schedule == "" {
		return p, nil
	}
	for _, f := range strings.Split(schedule, ",") {
		a, b, ok := strings.Cut(f, ":")
		step, err1 := strconv.Atoi(a)
		idx, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || step < 0 || idx < 0 {
			return nil, fmt.Errorf("vsched: bad schedule element %q in %q", f, schedule)
		}
		p.at[step] = idx
	}
	return p, nil
}

type replayPolicy struct {
	at  map[int]int
	src string
}

func (p *replayPolicy) name() string { return fmt.Sprintf("Replay(%q)", p.src) }

func (p *replayPolicy) choose(s *Sim, opts []*thread, _ bool) int {
	return p.at[s.steps] // s.steps is this step's index
}

// encode is the schedule string of the choices made: "step:option" for each
// step that did not take option 0.
func encode(choices []int) string {
	var b strings.Builder
	for i, c := range choices {
		if c == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(c))
	}
	return b.String()
}

// dfsPolicy enumerates schedules depth first with a bound on preemptions
// (CHESS's iterative context bounding; Rust's loom does the same): a run
// follows the recorded prefix and takes option 0 beyond it; next moves to
// the deepest point with an untried option within the bound.
type dfsPolicy struct {
	path  []dfsChoice
	pos   int
	bound int
	err   error
}

type dfsChoice struct {
	n, idx    int
	curOK     bool
	preBefore int
}

func (p *dfsPolicy) name() string { return fmt.Sprintf("Exhaustive(preemptions ≤ %d)", p.bound) }

func (p *dfsPolicy) choose(s *Sim, opts []*thread, curOK bool) int {
	if p.pos < len(p.path) {
		c := p.path[p.pos]
		p.pos++
		if c.n != len(opts) || c.curOK != curOK {
			p.err = fmt.Errorf("vsched: nondeterministic test: step %d offered %d options (continue=%v), earlier %d (continue=%v)",
				p.pos-1, len(opts), curOK, c.n, c.curOK)
			return -1
		}
		return c.idx
	}
	p.path = append(p.path, dfsChoice{n: len(opts), curOK: curOK, preBefore: s.preempt})
	p.pos++
	return 0
}

// next prepares the next schedule; false when every schedule within the
// bound has run.
func (p *dfsPolicy) next() bool {
	p.pos = 0
	for len(p.path) > 0 {
		c := &p.path[len(p.path)-1]
		if c.idx+1 < c.n {
			cost := c.preBefore
			if c.curOK {
				cost++
			}
			if cost <= p.bound {
				c.idx++
				return true
			}
		}
		p.path = p.path[:len(p.path)-1]
	}
	return false
}
