// Package vsched is a deterministic scheduler for the rings: many virtual
// CPUs on a small machine.
//
// A simulation (Run) runs threads registered with Sim.Go, each on its own
// goroutine, exactly one at a time: every shared-memory operation the rings
// make through internal/shm (built with the tag goiflib_vsched) is a
// scheduling point at which the running thread hands back to the
// controller, and the Policy picks which thread performs its next
// operation. Plain memory between two points is private to the running
// thread, so a schedule is the sequence of those choices, and the same
// schedule string (Replay) or seed (Random) runs the same interleaving
// again.
//
// Exhaustive enumerates the schedules of a small case depth first with a
// bound on preemptions (switches away from a thread that could continue),
// the iterative context bounding of CHESS that Rust's loom also uses; a
// thread that yields gives way without a preemption, and is not scheduled
// again while another thread can run. RandomSchedules runs seeded random
// schedules at scale. Either stops at the first failure (a panic in a
// thread, the setup's check, a deadlock, a livelock) and prints the
// schedule that replays it.
//
// With Config.Costs, the Timed policy runs the threads in virtual time: a
// clock per virtual CPU, charged for each operation by a cache-line cost
// model (each line's state per CPU: modified, shared or invalid; an L1 hit,
// a locked instruction, a transfer between cores of one core complex or
// between complexes, serialised per line), a context switch, a wake-up,
// and a time slice after which another runnable thread of the same CPU
// preempts the running one (a producer preempted inside its reservation
// window).
//
// One simulation runs at a time per process; while it runs, only its
// threads may use internal/shm's operations (a test that uses the
// simulator must not run in parallel with others that use the rings).
package vsched
