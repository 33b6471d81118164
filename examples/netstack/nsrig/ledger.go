package nsrig

import (
	"errors"
	"fmt"
	"time"

	"github.com/goiflib/goiflib/examples/netstack/ifliblink"
	"github.com/goiflib/goiflib/examples/simnic"
	"github.com/goiflib/goiflib/iflib"
)

// Books are one side's counters at one instant, from every layer a frame
// crosses: the endpoint, iflib, the simnic driver and the device.
type Books struct {
	EP     ifliblink.Stats
	Tx     iflib.TxQueueStats // summed over the queues
	Rx     iflib.RxQueueStats // summed over the queues
	Driver simnic.DriverStats
	Dev    simnic.Stats
	// Written is the frames the device wrote to its RX rings (good or
	// flagged: RxFrames + RxErrors + RxDMAFaults).
	Written uint64
	// Injected is frames a test put on this side's wire itself (besides
	// the peer's), counted by the test.
	Injected uint64
}

// Books reads the side's counters.
func (s *Side) Books() Books {
	b := Books{EP: s.EP.Stats(), Driver: s.Driver.Stats(), Dev: s.NIC.Stats()}
	ic := s.Context()
	for q := range ic.NumTxQueues() {
		if t, err := ic.TxQueueStats(q); err == nil {
			b.Tx.OPackets += t.OPackets
			b.Tx.OQDrops += t.OQDrops
			b.Tx.OErrors += t.OErrors
			b.Tx.StopDiscards += t.StopDiscards
		}
	}
	for q := range ic.NumRxQueues() {
		if r, err := ic.RxQueueStats(q); err == nil {
			b.Rx.IPackets += r.IPackets
			b.Rx.IErrors += r.IErrors
			b.Rx.IQDrops += r.IQDrops
			b.Rx.Filtered += r.Filtered
			b.Rx.StopDiscards += r.StopDiscards
			b.Rx.Discards += r.Discards
		}
		if qs, err := s.NIC.QueueStats(q); err == nil {
			b.Written += qs.RxWritten
		}
	}
	return b
}

// ErrUnbalanced is a ledger whose counters do not add up: a packet or
// frame went somewhere no counter says.
var ErrUnbalanced = errors.New("nsrig: counters do not account for every packet")

// Balance checks that the counters of a quiescent pair explain every
// packet each side's stack sent and every frame each side's device put on
// the wire:
//
//	sender:  handed to iflib (endpoint TxPackets + TxRefused)
//	           = encapsulated (driver) + oqdrops + oerrors
//	         opackets = encapsulated (a TSO packet: its segments)
//	           = processed by the device + abandoned on the ring by a stop
//	         processed = sent whole + dropped whole (too long, DMA fault, bad context)
//	wire:    frames sent (TSO segments each) + frames injected
//	           = written to the receiver's ring + refused at its wire
//	             (link down, too long, FIFO full or flushed)
//	receiver: written = ipackets + ierrors + rx_stop_discards
//	         ipackets = handed to the endpoint + iqdrops + filtered
//	         handed to the endpoint = delivered to gVisor + endpoint drops
//
// What gVisor does with a delivered frame (a segment for TCP, a malformed
// header, an unknown EtherType) is gVisor's own counting, read from its
// stats. Every term is returned in the error when a line does not hold.
func Balance(from, to Books) error {
	var errs []error
	check := func(what string, lhs, rhs uint64, terms string) {
		if lhs != rhs {
			errs = append(errs, fmt.Errorf("%w: %s: %d ≠ %d (%s)", ErrUnbalanced, what, lhs, rhs, terms))
		}
	}
	s, r := from, to
	handed := s.EP.TxPackets + s.EP.TxRefused
	check("handed to iflib = encapsulated + oqdrops + oerrors", handed, s.Driver.TxEncapped+s.Tx.OQDrops+s.Tx.OErrors,
		fmt.Sprintf("tx %d refused %d; encapsulated %d oqdrops %d oerrors %d", s.EP.TxPackets, s.EP.TxRefused, s.Driver.TxEncapped, s.Tx.OQDrops, s.Tx.OErrors))
	if s.EP.TxTSO == 0 {
		// iflib_encap counts a TSO packet in opackets as the segments the
		// device cuts it into; without TSO, opackets counts packets.
		check("opackets = encapsulated", s.Tx.OPackets, s.Driver.TxEncapped, "")
	} else if s.Tx.OPackets < s.Driver.TxEncapped {
		check("opackets (TSO packets as their segments) ≥ encapsulated", s.Tx.OPackets, s.Driver.TxEncapped, "")
	}
	check("encapsulated = processed + abandoned", s.Driver.TxEncapped, s.Dev.TxProcessed+s.Driver.TxAbandoned,
		fmt.Sprintf("processed %d abandoned %d", s.Dev.TxProcessed, s.Driver.TxAbandoned))
	check("processed = sent + dropped whole", s.Dev.TxProcessed, s.Dev.TxPackets+s.Dev.TxTooLong+s.Dev.TxDMAFaults+s.Dev.TxBadContext,
		fmt.Sprintf("sent %d too-long %d dma %d bad-context %d", s.Dev.TxPackets, s.Dev.TxTooLong, s.Dev.TxDMAFaults, s.Dev.TxBadContext))
	wire := s.Dev.TxFrames + r.Injected
	filtered := r.Dev.RxFilteredAddr + r.Dev.RxFilteredVLAN // simnic's receive filter (not our address, VLAN not registered)
	check("wire = written + refused at the wire", wire, r.Written+r.Dev.RxLinkDown+r.Dev.RxTooLong+r.Dev.RxMissed+filtered,
		fmt.Sprintf("frames %d injected %d; written %d link-down %d too-long %d missed %d filtered %d", s.Dev.TxFrames, r.Injected, r.Written, r.Dev.RxLinkDown, r.Dev.RxTooLong, r.Dev.RxMissed, filtered))
	check("written = ipackets + ierrors + rx_stop_discards", r.Written, r.Rx.IPackets+r.Rx.IErrors+r.Rx.StopDiscards,
		fmt.Sprintf("ipackets %d ierrors %d stop-discards %d", r.Rx.IPackets, r.Rx.IErrors, r.Rx.StopDiscards))
	check("ipackets = to the endpoint + iqdrops + filtered", r.Rx.IPackets, r.EP.RxPackets+r.EP.RxDropped()+r.Rx.IQDrops+r.Rx.Filtered,
		fmt.Sprintf("delivered %d endpoint drops %d (%v) iqdrops %d filtered %d", r.EP.RxPackets, r.EP.RxDropped(), r.EP, r.Rx.IQDrops, r.Rx.Filtered))
	return errors.Join(errs...)
}

// Losses sums what did not reach the receiving stack from one side to
// the other, by where it was lost (for logs).
func Losses(from, to Books) string {
	s, r := from, to
	return fmt.Sprintf("endpoint tx drops %d (link down %d, no zone %d, refused %d); iflib oqdrops %d oerrors %d; "+
		"device tx dropped %d (dma %d, too long %d, bad context %d), abandoned %d; "+
		"receiver wire refused %d (link down %d, too long %d, missed %d); iflib ierrors %d (discards %d) rx-stop-discards %d iqdrops %d; endpoint rx drops %d",
		s.EP.TxDropped(), s.EP.TxLinkDown, s.EP.TxNoZone, s.EP.TxRefused, s.Tx.OQDrops, s.Tx.OErrors,
		s.Dev.TxTooLong+s.Dev.TxDMAFaults+s.Dev.TxBadContext, s.Dev.TxDMAFaults, s.Dev.TxTooLong, s.Dev.TxBadContext, s.Driver.TxAbandoned,
		r.Dev.RxLinkDown+r.Dev.RxTooLong+r.Dev.RxMissed, r.Dev.RxLinkDown, r.Dev.RxTooLong, r.Dev.RxMissed,
		r.Rx.IErrors, r.Rx.Discards, r.Rx.StopDiscards, r.Rx.IQDrops, r.EP.RxDropped())
}

// Balanced waits until the pair is quiescent (two readings of every
// counter 100 ms apart agree) and checks Balance in both directions. It
// retries until timeout and returns the last imbalance, with the books.
func (p *Pair) Balanced(timeout time.Duration, injectedA, injectedB uint64) (a, b Books, err error) {
	deadline := time.Now().Add(timeout)
	for {
		a, b = p.A.Books(), p.B.Books()
		a.Injected, b.Injected = injectedA, injectedB
		time.Sleep(100 * time.Millisecond)
		a2, b2 := p.A.Books(), p.B.Books()
		a2.Injected, b2.Injected = injectedA, injectedB
		if a.ledger() == a2.ledger() && b.ledger() == b2.ledger() {
			if err = errors.Join(Balance(a, b), Balance(b, a)); err == nil {
				return a, b, nil
			}
		} else {
			err = fmt.Errorf("%w: still moving", ErrUnbalanced)
		}
		if time.Now().After(deadline) {
			return a, b, err
		}
	}
}

// ledgerKey is the part of Books that Balance reads: the counters that
// move only when a packet or frame does (not status reads, interrupts or
// parks, which tick on an idle link).
type ledgerKey struct {
	ep                                         ifliblink.Stats
	tx                                         [4]uint64
	rx                                         [5]uint64
	encapped, abandoned                        uint64
	processed, sent, tooLong, dma, ctx, frames uint64
	written, rxLinkDown, rxTooLong, rxMissed   uint64
	rxFiltered                                 uint64
}

func (b Books) ledger() ledgerKey {
	return ledgerKey{
		ep:       b.EP,
		tx:       [4]uint64{b.Tx.OPackets, b.Tx.OQDrops, b.Tx.OErrors, b.Tx.StopDiscards},
		rx:       [5]uint64{b.Rx.IPackets, b.Rx.IErrors, b.Rx.IQDrops, b.Rx.Filtered, b.Rx.StopDiscards},
		encapped: b.Driver.TxEncapped, abandoned: b.Driver.TxAbandoned,
		processed: b.Dev.TxProcessed, sent: b.Dev.TxPackets, tooLong: b.Dev.TxTooLong, dma: b.Dev.TxDMAFaults, ctx: b.Dev.TxBadContext,
		frames:  b.Dev.TxFrames,
		written: b.Written, rxLinkDown: b.Dev.RxLinkDown, rxTooLong: b.Dev.RxTooLong, rxMissed: b.Dev.RxMissed,
		rxFiltered: b.Dev.RxFilteredAddr + b.Dev.RxFilteredVLAN,
	}
}
