// Package iflib models FreeBSD's iflib (sys/net/iflib.c, sys/net/iflib.h,
// sys/net/ifdi_if.m): the framework under most FreeBSD NIC drivers.
//
// A driver implements two interfaces: [TxRx], the fast-path method table
// (struct if_txrx), and [Device], the IFDI methods. iflib owns everything
// between the network stack and those methods: the packet zones, the busdma
// tags and maps, the software rings, the transmit modes, completion and
// reclaim, the receive free lists and the per-queue tasks.
//
// Outbound flow (one packet):
//
//	Transmit(pkt) ─▶ queue select (QIDX / driver selector)
//	   ├─ mpring: Ring.Enqueue ─▶ producer becomes consumer ─▶ drain (≤ TX_BATCH_SIZE)
//	   ├─ simple: txq lock ─▶ encap ─▶ doorbell per packet ─▶ opportunistic reclaim
//	   └─ drbr:   try lock ─▶ send, or defer into buf_ring (≤ MaxProducers) ─▶ drain quota
//	encap: busdma LoadMulti ─(EFBIG)▶ collapse ▶ defrag ─▶ TxdEncap ─▶ PREWRITE
//	doorbell: ring PREREAD|PREWRITE ─▶ TxdFlush (deferred by txq_max_db_deferred)
//	completion: POSTREAD ─▶ TxdCreditsUpdate ─▶ reclaim (lagging by nsegments)
//	            ─▶ POSTWRITE + Unload ─▶ free to the zone
//
// Ownership: a packet passed to [Context.Transmit] belongs to iflib from the
// call on, whatever the result; on an error it has already been freed and
// counted. Packets handed to the stack's input callback belong to the stack,
// which frees them with [Packet.Free].
//
// The main hazard modelled here is the one every iflib bug in the founding
// reviews was about: a bus address given to the device must come from the
// current busdma mapping, every mapping must be unloaded exactly once, and
// the CPU and the device must each sync before touching what the other wrote.
// Every test of this package runs with busdma's checker on.
package iflib
