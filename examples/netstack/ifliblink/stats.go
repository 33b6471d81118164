package ifliblink

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// Stats are the endpoint's counters. Every frame WritePackets makes (one
// per gVisor packet, or one per segment of a packet it cuts itself) ends in
// exactly one of TxPackets, TxLinkDown, TxNoZone and TxRefused; every frame
// iflib hands Input ends in exactly one of RxPackets and the Rx drop
// counters.
type Stats struct {
	// TxPackets are packets iflib accepted (sent or queued), TxBytes the
	// bytes handed to iflib (a refused packet's included: TransmitBatch
	// does not say which it refused).
	TxPackets, TxBytes uint64
	// TxLinkDown: not handed to iflib because the endpoint was not bound,
	// closed, or its context not running or its link down.
	TxLinkDown uint64
	// TxNoZone: dropped because the TX zone stayed empty for TxWait.
	TxNoZone uint64
	// TxRefused: refused by iflib, which freed and counted them (oqdrops,
	// oerrors).
	TxRefused uint64
	// TxZoneWaits: times WritePackets found the zone empty and waited.
	TxZoneWaits uint64
	// TxTSO, TxCsumOffload, TxCsumSoftware: packets sent as TSO, with the
	// device asked for their checksum, and with the checksum computed by
	// the endpoint (the device cannot, gVisor left it).
	TxTSO, TxCsumOffload, TxCsumSoftware uint64
	// TxSoftGSO: host-GSO packets the endpoint cut into segments itself
	// (the device has no TSO for them); each segment is a frame above.
	TxSoftGSO uint64

	// RxPackets, RxBytes: frames delivered to the stack, RxCoalesced of
	// which merged into the segment before them (LRO): the stack got
	// RxPackets − RxCoalesced packets.
	RxPackets, RxBytes, RxCoalesced uint64
	// RxNoDispatcher: no NIC attached (before CreateNIC, after removal).
	RxNoDispatcher uint64
	// RxRunt: shorter than an Ethernet header.
	RxRunt uint64
	// RxOverMTU: longer than the MTU plus the Ethernet header (and a
	// VLAN tag, if tagged).
	RxOverMTU uint64
	// RxOtherHost: unicast to another station's address.
	RxOtherHost uint64
	// RxVLAN: the device stripped a VLAN tag; the endpoint has no VLANs.
	RxVLAN uint64
	// RxBadCsum: the device checked an IP, TCP or UDP checksum and found
	// it bad.
	RxBadCsum uint64
}

// RxDropped sums the Rx drop counters.
func (s Stats) RxDropped() uint64 {
	return s.RxNoDispatcher + s.RxRunt + s.RxOverMTU + s.RxOtherHost + s.RxVLAN + s.RxBadCsum
}

// TxDropped sums the packets WritePackets did not get accepted.
func (s Stats) TxDropped() uint64 { return s.TxLinkDown + s.TxNoZone + s.TxRefused }

// String renders the non-zero counters as name=value pairs.
func (s Stats) String() string {
	var b strings.Builder
	for _, f := range []struct {
		name string
		v    uint64
	}{
		{"tx", s.TxPackets}, {"tx_bytes", s.TxBytes}, {"tx_linkdown", s.TxLinkDown}, {"tx_nozone", s.TxNoZone},
		{"tx_refused", s.TxRefused}, {"tx_zonewaits", s.TxZoneWaits}, {"tx_tso", s.TxTSO},
		{"tx_csum_offload", s.TxCsumOffload}, {"tx_csum_sw", s.TxCsumSoftware}, {"tx_soft_gso", s.TxSoftGSO},
		{"rx", s.RxPackets}, {"rx_bytes", s.RxBytes}, {"rx_coalesced", s.RxCoalesced}, {"rx_nodispatcher", s.RxNoDispatcher}, {"rx_runt", s.RxRunt},
		{"rx_overmtu", s.RxOverMTU}, {"rx_otherhost", s.RxOtherHost}, {"rx_vlan", s.RxVLAN}, {"rx_badcsum", s.RxBadCsum},
	} {
		if f.v != 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s=%d", f.name, f.v)
		}
	}
	return b.String()
}

// Stats returns the counters. It may run concurrently with anything.
func (e *Endpoint) Stats() Stats {
	c := &e.st
	return Stats{
		TxPackets: c.get(txPackets), TxBytes: c.get(txBytes), TxLinkDown: c.get(txLinkDown),
		TxNoZone: c.get(txNoZone), TxRefused: c.get(txRefused), TxZoneWaits: c.get(txZoneWaits),
		TxTSO: c.get(txTSO), TxCsumOffload: c.get(txCsumOffload), TxCsumSoftware: c.get(txCsumSoftware), TxSoftGSO: c.get(txSoftGSO),
		RxPackets: c.get(rxPackets), RxBytes: c.get(rxBytes), RxCoalesced: c.get(rxCoalesced), RxNoDispatcher: c.get(rxNoDispatcher),
		RxRunt: c.get(rxRunt), RxOverMTU: c.get(rxOverMTU), RxOtherHost: c.get(rxOtherHost),
		RxVLAN: c.get(rxVLAN), RxBadCsum: c.get(rxBadCsum),
	}
}

type counter int

const (
	counterNone counter = iota - 1
	txPackets
	txBytes
	txLinkDown
	txNoZone
	txRefused
	txZoneWaits
	txTSO
	txCsumOffload
	txCsumSoftware
	txSoftGSO
	rxPackets
	rxBytes
	rxCoalesced
	rxNoDispatcher
	rxRunt
	rxOverMTU
	rxOtherHost
	rxVLAN
	rxBadCsum
	numCounters
)

// counters are the endpoint's atomics, one per 64-byte line: senders on
// several goroutines and the RX task update them at once.
type counters struct {
	v [numCounters]paddedCounter
}

// paddedCounter is one counter alone on its cache line.
type paddedCounter struct {
	atomic.Uint64
	_ [56]byte
}

func (c *counters) add(i counter, n uint64) { c.v[i].Add(n) }
func (c *counters) get(i counter) uint64    { return c.v[i].Load() }
