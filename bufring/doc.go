// Package bufring models FreeBSD's buf_ring (sys/sys/buf_ring.h, the 2024
// Arm Ltd revision with free-running uint32 indices) and the drbr_*
// wrappers of sys/net/ifq.h, plus the producer-limited deferred transmit
// of iflib's simple_tx ("simple_tx with drbr deferral", FreeBSD main 2025,
// ported from mxge(4)), and a multi-producer single-consumer ring for Go
// fan-ins.
//
// # Which queue
//
//   - [DRBR]: senders that must not lose an item and can do the work
//     themselves. Whoever gets the lock sends (xmit runs on the sender's
//     goroutine, like iflib_encap under ift_mtx); senders that find it
//     taken leave their items for the holder; a full ring blocks the sender
//     instead of dropping. Close returns blocked senders' items with an
//     error. This is iflib's drbr transmit mode.
//   - [MPSC]: a fan-in to one consumer goroutine (a worker's inbox, a
//     pinned TX thread). Never drops unless asked (Enqueue reports
//     ErrFull; EnqueueWait waits), the consumer can block until items
//     arrive, and Close ends both sides. It holds up best of these queues
//     at high fan-in with single items; with bursts Ring keeps pace
//     (BenchmarkFanIn; BenchmarkFanInVsChan measures it against a
//     channel side by side). See its doc for how it differs from
//     buf_ring and what its waiting forms guarantee.
//   - [Ring]: FreeBSD's buf_ring itself, multi-producer and
//     multi-consumer, for code that needs its exact semantics (DequeueMC,
//     Peek/Putback under a lock, a drop counter).
//   - mpring.Ring (package mpring) is iflib's default mp_ring: a sender
//     that finds no consumer becomes it. It is lossy by design (a full ring
//     returns ENOBUFS and counts a drop), and producers that retry on a
//     full ring collapse it once there are many more of them than CPUs
//     (each retry holds a reservation others wait behind). Pick it to model
//     iflib's mp_ring; pick DRBR or MPSC when items must not be dropped.
//
// # Ring
//
// [Ring] is struct buf_ring: a bounded, power-of-two ring of capacity size−1
// with a multi-producer [Ring.Enqueue], a multi-consumer [Ring.DequeueMC] and
// the single-consumer operations ([Ring.DequeueSC], [Ring.Peek],
// [Ring.Putback], [Ring.Advance]) that FreeBSD runs under the driver's TX
// lock. Burst forms move many items per index publication. The Wait forms
// (not in FreeBSD) park instead of polling.
//
// # DRBR
//
// [DRBR] is the deferred-transmit layer around a transmit callback that runs
// with the queue lock held; its doc draws the flow of Transmit, Restart, Do
// and Close.
//
// # Hazards
//
// The main hazard of the rings is preemption. FreeBSD wraps the window
// between reserving a slot (CAS on br_prod_head) and publishing it (store to
// br_prod_tail) in critical_enter, so the producer cannot be descheduled and
// later producers spin only for nanoseconds. Go has no such thing: a
// producer can be preempted inside that window. In Ring every later
// producer must wait for it (spin, then yield: internal/wait's policy, the
// same in mpring); in MPSC nobody waits for it but the consumer, at that
// one slot, which is why MPSC holds up at high fan-in.
//
// The main hazard of DRBR is a stranded item: one left in the ring by a
// sender that found the lock taken, after the holder had looked at the ring
// for the last time. The hand-off is made of atomics on one lock word
// (announce and release), so one of the two always sees the other;
// drbr_state.go has the argument. DRBR's second hazard is a stopped
// device: senders blocked on a full ring wait for completions that never
// come. Close wakes them with an error, so that a stop never depends on
// the device.
package bufring
