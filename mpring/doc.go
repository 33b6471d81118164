// Package mpring models FreeBSD's ifmp_ring (sys/net/mp_ring.c, iflib's
// private copy of Navdeep Parhar's cxgbe mp_ring, Chelsio 2014): a bounded
// multi-producer ring with no lock, in which the producer that finds no
// running consumer becomes the consumer.
//
// Transmit flow as iflib uses it (sys/net/iflib.c, iflib_if_transmit):
//
//	sender ──Enqueue(item, 32, abdicate)──▶ reserve (CAS on pidx_head)
//	                                         │ wait for earlier producers
//	                                         │ fill slots, publish pidx_tail
//	            ┌── flags were not BUSY and !abdicate: this sender drains
//	            │     drain(r, cidx, pidx) → encap … doorbell (DrainFunc)
//	            └── abdicate: mark ABDICATED; the TX task calls CheckDrainage
//
// Every field of the ring's shared state lives in one 64-bit word
// {pidx_head, pidx_tail, cidx, flags} changed only by compare-and-swap; see
// the Ring type for which side may make which transition.
//
// # A dropping ring, and when not to use it
//
// mp_ring drops: an Enqueue that does not fit returns ErrFull (ENOBUFS)
// and counts the items in Drops; iflib frees the packet. That is right for
// a NIC queue, where the stack above retransmits. A Go program that must
// not lose items and retries on ErrFull turns it into something worse: at
// a fan-in well above GOMAXPROCS the retrying producers take the CPU from
// the goroutine that is draining, and any producer preempted between its
// reservation and its publication holds up every producer behind it (see
// below). On 2 CPUs, examples/workerpool -mode mpring -work 0 (Gosched
// retries) runs two orders of magnitude or more slower with -producers 64
// than with -producers 2; run it to see the figures on your machine. For a
// fan-in that must not drop, use bufring.DRBR when the senders should do
// the work themselves under a lock (it never drops; a full ring blocks the
// sender until there is room, and Close releases it), or bufring.MPSC when
// one consumer goroutine should (it blocks producers on a full ring and
// the consumer on an empty one).
//
// There is no consumer-side wait here, by design: mp_ring has no consumer
// goroutine. The producer that finds the ring IDLE becomes the consumer and
// runs the drain callback itself; a STALLED or ABDICATED ring is picked up
// by CheckDrainage from whoever the owner schedules (iflib's TX task).
// Nothing ever waits for items to arrive. A worker that wants to sleep
// until work comes belongs on bufring.MPSC (DequeueWait) instead.
//
// # Preemption
//
// The main hazard is preemption. FreeBSD keeps a producer inside
// critical_enter() from its reservation until it publishes, because every
// later producer spins until it has published. A goroutine cannot disable
// preemption: a producer descheduled between reserving and publishing stalls
// every producer behind it for as long as the Go scheduler keeps it off a
// CPU. The waiters here spin a few loads and then call runtime.Gosched
// (the spin-then-yield policy of internal/wait, shared with bufring) so
// that the descheduled producer can run even with GOMAXPROCS=1; the cost is
// that, with more runnable producers than CPUs, publication proceeds at the
// pace of the scheduler rather than the cache.
//
// Semantics follow freebsd/freebsd-src sys/net/mp_ring.c at commit
// 14e0010729d0 (64-bit-atomic variant; the MP_RING_NO_64BIT_ATOMICS mutex
// variant is not modelled). Differences forced by Go are documented where
// they occur: consumed slots are zeroed so the garbage collector can free
// what they referenced, a drain callback's out-of-range return is clamped,
// and a full ring found IDLE (possible while producers are mid-reservation,
// an MPASS in FreeBSD) is reported as ErrFull rather than asserted against.
package mpring
