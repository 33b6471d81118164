package vsched

import (
	"errors"
	"fmt"
	"io"
)

// Config describes the virtual machine of a run.
type Config struct {
	// CPUs is the number of virtual CPUs; thread i runs on CPU i mod CPUs.
	// 0 gives every thread its own CPU.
	CPUs int
	// Costs, when set, charges virtual time (Sim.Clock); without it the
	// run only orders operations (exploration).
	Costs *Costs
	// Trace, when set, gets one line per step: the step, the thread that
	// runs, the operation it performs and the word's address (for reading
	// a replayed failure).
	Trace io.Writer
	// MaxSteps bounds the scheduling points of one run (a livelock ends in
	// ErrStepLimit); 0 means 1,000,000.
	MaxSteps int
}

func (c Config) maxSteps() int {
	if c.MaxSteps > 0 {
		return c.MaxSteps
	}
	return 1_000_000
}

// Setup builds one run: it creates the objects under test, registers the
// threads with s.Go, and returns the check to run after every thread has
// finished (nil for none). It is called afresh for every schedule.
type Setup func(s *Sim) (check func() error)

// Result describes one finished run.
type Result struct {
	Steps       int     // scheduling points passed
	Preemptions int     // switches away from a thread that could have continued
	Schedule    string  // the schedule string: Replay(Schedule) runs it again
	Time        float64 // virtual ns of the latest CPU clock (with Costs)
	Transfers   int     // line transfers between CPUs (with Costs)
	Hits        int     // accesses served by the CPU's own copy (with Costs)
}

// Failure is a run that failed: a thread panicked, the check returned an
// error, the threads deadlocked or livelocked. Schedule (and Seed, for a
// random run) replay it.
type Failure struct {
	Policy   string
	Seed     uint64 // the run's seed when HasSeed
	HasSeed  bool
	Schedule string
	Steps    int
	Err      error
}

func (f *Failure) Error() string {
	seed := ""
	if f.HasSeed {
		seed = fmt.Sprintf(" seed %#x,", f.Seed)
	}
	return fmt.Sprintf("vsched: %s,%s after %d steps: %v; replay: vsched.Replay(%q)", f.Policy, seed, f.Steps, f.Err, f.Schedule)
}

func (f *Failure) Unwrap() error { return f.Err }

// Run runs one schedule of setup's threads under pol.
func Run(cfg Config, pol Policy, setup Setup) (Result, error) {
	if _, timed := pol.(*timedPolicy); timed && cfg.Costs == nil {
		return Result{}, errors.New("vsched: the Timed policy needs Config.Costs")
	}
	running <- struct{}{}
	defer func() { <-running }()
	s := &Sim{cfg: cfg, pol: pol, back: make(chan struct{}), kill: make(chan struct{})}
	check := setup(s)
	if cfg.Costs != nil {
		n := cfg.CPUs
		if n <= 0 {
			n = 1
			for _, t := range s.threads {
				n = max(n, t.cpu+1)
			}
		}
		s.model = newModel(*cfg.Costs, n)
	}
	active.Store(s)
	err := s.run()
	s.wg.Wait()
	active.Store(nil)
	if d, ok := pol.(*dfsPolicy); ok && d.err != nil {
		err = d.err
	}
	res := Result{Steps: s.steps, Preemptions: s.preempt, Schedule: encode(s.choices)}
	if s.model != nil {
		res.Time, res.Transfers, res.Hits = s.model.maxClock(), s.model.transfers, s.model.hits
	}
	if err == nil && check != nil {
		err = check()
	}
	if err != nil {
		f := &Failure{Policy: pol.name(), Schedule: res.Schedule, Steps: res.Steps, Err: err}
		if r, ok := pol.(*randomPolicy); ok {
			f.Seed, f.HasSeed = r.seed, true
		}
		return res, f
	}
	return res, nil
}

// Report sums an exploration.
type Report struct {
	Schedules int    // runs made
	Complete  bool   // exhaustive mode: every schedule within the bound ran
	Steps     int    // scheduling points over all runs
	MaxSteps  int    // the longest run
	Longest   string // the longest run's schedule (Replay it with Config.Trace to see why)
}

// Exhaustive runs every schedule of setup's threads with at most
// preemptions preemptions (a switch away from a thread that could continue;
// a thread that yields, blocks or ends gives way for free), depth first, up
// to maxSchedules runs (0: no limit). It stops at the first failure.
func Exhaustive(cfg Config, preemptions, maxSchedules int, setup Setup) (Report, error) {
	p := &dfsPolicy{bound: preemptions}
	var rep Report
	for {
		res, err := Run(cfg, p, setup)
		rep.Schedules++
		rep.Steps += res.Steps
		if res.Steps > rep.MaxSteps {
			rep.MaxSteps, rep.Longest = res.Steps, res.Schedule
		}
		if err != nil {
			return rep, err
		}
		if !p.next() {
			rep.Complete = true
			return rep, nil
		}
		if maxSchedules > 0 && rep.Schedules >= maxSchedules {
			return rep, nil
		}
	}
}

// RandomSchedules runs n schedules under Random(seed+i, switchProb),
// i = 0..n-1, stopping at the first failure (whose Seed replays it).
func RandomSchedules(cfg Config, seed uint64, n int, switchProb float64, setup Setup) (Report, error) {
	var rep Report
	for i := 0; i < n; i++ {
		res, err := Run(cfg, Random(seed+uint64(i), switchProb), setup)
		rep.Schedules++
		rep.Steps += res.Steps
		if res.Steps > rep.MaxSteps {
			rep.MaxSteps, rep.Longest = res.Steps, res.Schedule
		}
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// Work charges ns of virtual time to the calling thread's CPU: the cost of
// plain work between shared-memory operations (a drain callback handling a
// packet). It is not a scheduling point. Without a simulation, or without
// Costs, it does nothing.
func Work(ns float64) {
	s := active.Load()
	if s == nil || s.model == nil || s.cur == nil {
		return
	}
	s.model.clock[s.cur.cpu] += ns
}
