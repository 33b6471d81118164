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
// The main hazard is preemption. FreeBSD keeps a producer inside
// critical_enter() from its reservation until it publishes, because every
// later producer spins until it has published. A goroutine cannot disable
// preemption: a producer descheduled between reserving and publishing stalls
// every producer behind it for as long as the Go scheduler keeps it off a
// CPU. The waiters here spin a few loads (spinLimit) and then
// call runtime.Gosched so that the descheduled producer can run even with
// GOMAXPROCS=1; the cost is that, with more runnable producers than CPUs,
// publication proceeds at the pace of the scheduler rather than the cache.
//
// Semantics follow freebsd/freebsd-src sys/net/mp_ring.c at commit
// 14e0010729d0 (64-bit-atomic variant; the MP_RING_NO_64BIT_ATOMICS mutex
// variant is not modelled). Differences forced by Go are documented where
// they occur: consumed slots are zeroed so the garbage collector can free
// what they referenced, a drain callback's out-of-range return is clamped,
// and a full ring found IDLE (possible while producers are mid-reservation,
// an MPASS in FreeBSD) is reported as ErrFull rather than asserted against.
package mpring
