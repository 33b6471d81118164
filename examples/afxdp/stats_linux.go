package afxdp

import "golang.org/x/sys/unix"

// Stats are the driver's counters summed over its queues: the kernel's
// XDP_STATISTICS of each socket (kept across Stop) and the driver's own.
type Stats struct {
	// XDP_STATISTICS (struct xdp_statistics).
	RxDropped      uint64 // rx_dropped: frames the kernel dropped (no fill-ring frame, too long)
	RxInvalidDescs uint64 // rx_invalid_descs: invalid fill-ring entries
	TxInvalidDescs uint64 // tx_invalid_descs: invalid TX descriptors (dropped without completion)
	// RxRingFull is rx_ring_full: frames dropped because the RX ring was
	// full. It stays 0 under iflib, which posts at most nrxd−1 frames to
	// the fill ring of an RX ring of nrxd slots.
	RxRingFull uint64
	// RxFillRingEmpty is rx_fill_ring_empty_descs: times the fill ring was
	// found empty, each a frame dropped. This is the driver's overload
	// counter: frames arrived faster than iflib's RX task gave buffers
	// back (a deeper NRxd absorbs bursts; see the package doc).
	RxFillRingEmpty uint64
	TxRingEmpty     uint64 // tx_ring_empty_descs: kicks that found the TX ring empty

	// The driver's.
	Doorbells     uint64 // TxdFlush calls
	TxKicks       uint64 // sendto(2) calls (needs_wakeup honoured)
	TxKickErrors  uint64 // sendto(2) errors other than back-pressure
	RxKicks       uint64 // recvfrom(2) fill-ring wakeups
	RxIntrs       uint64 // RX interrupts (poll(2) saw frames)
	DeferredKicks uint64 // TX kicks handed to the TX task (coalescing)
	Polls         uint64 // poll(2) calls
	FillDeferred  uint64 // frames that waited for fill-ring room
	BadDescs      uint64 // RX descriptors naming no posted frame
	TxRingFull    uint64 // encaps refused for lack of TX-ring room
	// PartialChecksums are received frames whose TCP or UDP checksum a
	// Linux sender had left partial (CHECKSUM_PARTIAL) and the driver
	// completed before the input callback (see CompleteChecksum).
	PartialChecksums uint64
}

func (s *Stats) addXDP(x unix.XDPStatistics) {
	s.RxDropped += x.Rx_dropped
	s.RxInvalidDescs += x.Rx_invalid_descs
	s.TxInvalidDescs += x.Tx_invalid_descs
	s.RxRingFull += x.Rx_ring_full
	s.RxFillRingEmpty += x.Rx_fill_ring_empty_descs
	s.TxRingEmpty += x.Tx_ring_empty_descs
}

func (s *Stats) addQueue(q *queueStats) {
	s.Doorbells += q.doorbells.Load()
	s.TxKicks += q.txKicks.Load()
	s.TxKickErrors += q.txKickErrs.Load()
	s.RxKicks += q.rxKicks.Load()
	s.RxIntrs += q.rxIntrs.Load()
	s.DeferredKicks += q.deferredKicks.Load()
	s.Polls += q.polls.Load()
	s.FillDeferred += q.fillDeferred.Load()
	s.BadDescs += q.badDescs.Load()
	s.TxRingFull += q.txRingFull.Load()
	s.PartialChecksums += q.csumDone.Load()
}

// Stats returns the counters. It may run concurrently with anything.
func (d *Driver) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.base
	for _, q := range d.q {
		if q.s != nil {
			if x, err := q.s.stats(); err == nil {
				st.addXDP(x)
			}
		}
		st.addQueue(&q.st)
	}
	return st
}
