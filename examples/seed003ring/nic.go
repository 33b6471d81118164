package main

import "sync/atomic"

// nic is the "hardware" behind the queue under test: a descriptor ring that
// never runs out (the review's 400G bnxt was not the bottleneck at ≤ 90 Gb/s)
// and an encap step with a fixed cost. encap must run with the queue's
// exclusion held (drain callback, xmit under the lock, or the mutex), as
// iflib_encap runs on the txq with the ring's consumer role or ift_mtx.
type nic struct {
	desc [2048]uint64  // TX descriptors, written in ring order
	pidx uint64        // ift_pidx: next descriptor
	sent uint64        // packets encapped
	work int           // rounds of hash per packet: the fixed encap cost
	bell atomic.Uint64 // the TX tail register: the last pidx the doorbell wrote
	dbs  uint64        // doorbells rung
}

// packet stands in for an mbuf: the bytes encap reads to fill a descriptor.
// Senders never write a packet after creating it.
type packet struct {
	data [64]byte
}

func newPacket(sender int) *packet {
	p := new(packet)
	for i := range p.data {
		p.data[i] = byte(sender + i)
	}
	return p
}

// hash is FNV-1a over p's bytes, rounds times: a fixed, dependent chain of
// multiplies whose cost scales with rounds and cannot be optimised away.
// It is not inlined, so that every variant runs the same machine code for
// its work (an inlined copy per call site, placed and scheduled
// differently, need not cost the same).
//
//go:noinline
func hash(p *packet, rounds int) uint64 {
	h := uint64(14695981039346656037)
	for range rounds {
		for _, b := range p.data {
			h ^= uint64(b)
			h *= 1099511628211
		}
	}
	return h
}

// encap fills one descriptor for p after n.work rounds of hashing, so the
// consumer pays a fixed per-item cost standing in for iflib_encap (header
// parsing, DMA load, descriptor writes).
//
// Preconditions: the caller holds the queue's exclusion.
func (n *nic) encap(p *packet) {
	n.desc[n.pidx%uint64(len(n.desc))] = hash(p, n.work)
	n.pidx++
	n.sent++
}

// doorbell writes the tail register (ift_txd_flush): the "hardware" learns
// about every descriptor encapped so far. A register write is an uncached
// store the device observes; an atomic store (XCHG on amd64) stands in for
// it, as in examples/simnic's TxdFlush.
//
// Preconditions: the caller holds the queue's exclusion.
func (n *nic) doorbell() {
	n.bell.Store(n.pidx)
	n.dbs++
}
