// Package bufring models FreeBSD's buf_ring (sys/sys/buf_ring.h) and the
// drbr_* wrappers of sys/net/ifq.h.
package bufring
