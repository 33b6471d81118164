package simnic

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// The receive filter, after the 8254x (PCI/PCI-X Family of Gigabit
// Ethernet Controllers SDM §3.2.1 "Packet Address Filtering", the RCTL,
// RAL/RAH, MTA and VFTA registers; e1000_hash_mc_addr_generic,
// e1000_rar_set_generic, em_if_multi_set, em_if_set_promisc,
// em_setup_vlan_hw_support):
//
//   - a unicast perfect filter of NumRAR receive address registers (RAR 0
//     holds the station address; each has an Address Valid bit);
//   - a multicast hash table (MTA) of 4096 bits: a group address whose
//     12-bit hash (MTAHash, mc_filter_type 0: bits 47:36 of the address) is
//     set passes;
//   - RCTL: UPE (unicast promiscuous), MPE (multicast promiscuous), BAM
//     (broadcast accept), VFE (VLAN filter enable);
//   - a VLAN filter table (VFTA) of 4096 bits: with VFE, an 802.1Q frame
//     whose VID bit is clear is dropped (priority-tagged frames, VID 0,
//     too, as the table decides);
//   - CTRL.VME: strip the tag of a received 802.1Q frame into its
//     descriptor (VP and the tag) and insert one on transmit where the
//     descriptor asks (VLE);
//   - the max frame register (RLPML/MAXFRS): see NIC.SetMaxFrame.
//
// A frame passes the address filter when it is unicast and matches a
// valid RAR or UPE is set; a broadcast with BAM (or MPE, or its hash in
// the MTA: the broadcast address hashes to bit 4095); another group address
// with MPE, its hash in the MTA, or a valid RAR holding it.
//
// Where the counts go: the 8254x counts a frame the filters drop only in
// TPR (total packets received) and not in GPRC; 82599 likewise in RXNFGPC
// but not GPRC. The model splits that difference by filter: RxFilteredAddr
// and RxFilteredVLAN (see Stats). ROC (RxTooLong) counts only frames that
// passed the address filter, as the SDM says of ROC.
//
// Registers are atomics: the driver writes them while frames arrive (a
// frame sees each register either before or after a write, as on
// hardware; a multi-register update such as a new MTA is not atomic as a
// whole there either).

// Receive filter sizes.
const (
	NumRAR    = 16  // receive address registers (8254x: 16)
	MTASize   = 128 // MTA registers of 32 bits: 4096 hash bits
	VFTASize  = 128 // VFTA registers of 32 bits: one bit per VLAN ID
	MaxVLANID = 4095
)

// RxControl holds the RCTL bits the model implements (the E1000_RCTL_*
// values).
type RxControl uint32

// RCTL bits.
const (
	RctlUPE RxControl = 0x00000008 // E1000_RCTL_UPE: unicast promiscuous
	RctlMPE RxControl = 0x00000010 // E1000_RCTL_MPE: multicast promiscuous
	RctlBAM RxControl = 0x00008000 // E1000_RCTL_BAM: accept broadcast
	RctlVFE RxControl = 0x00040000 // E1000_RCTL_VFE: VLAN filter enable

	rctlKnown = RctlUPE | RctlMPE | RctlBAM | RctlVFE
)

func (c RxControl) String() string {
	s := ""
	for _, b := range []struct {
		bit  RxControl
		name string
	}{{RctlUPE, "UPE"}, {RctlMPE, "MPE"}, {RctlBAM, "BAM"}, {RctlVFE, "VFE"}} {
		if c&b.bit != 0 {
			if s != "" {
				s += "|"
			}
			s += b.name
		}
	}
	if c&^rctlKnown != 0 {
		s += fmt.Sprintf("|%#x", uint32(c&^rctlKnown))
	}
	if s == "" {
		return "0"
	}
	return s
}

// ResetRxControl is the model's power-up RCTL: open (UPE|MPE|BAM, no VLAN
// filter), so that a driver that never programs the filter sees every
// frame, as before the filter existed. A real 8254x resets RCTL to 0 with
// the receiver off; simnic's Driver programs RCTL in IFDI_INIT from the
// interface's flags, and the RawForwarder, a bridge, leaves it open.
const ResetRxControl = RctlUPE | RctlMPE | RctlBAM

// rarValid is the Address Valid bit (RAH.AV) in a RAR word; the address
// is the low 48 bits (first byte lowest).
const rarValid = uint64(1) << 63

// filterRegs are the receive filter's registers.
type filterRegs struct {
	rctl atomic.Uint32
	vme  atomic.Bool // CTRL.VME
	rar  [NumRAR]atomic.Uint64
	mta  [MTASize]atomic.Uint32
	vfta [VFTASize]atomic.Uint32
	// maxFrame is RLPML: the longest frame accepted, with the FCS and
	// without a VLAN tag.
	maxFrame atomic.Int32
}

// MTAHash is e1000_hash_mc_addr with mc_filter_type 0 on a 4096-bit MTA:
// bits 47:36 of the address (the high nibble of byte 4 and all of byte 5).
// The MTA register is hash>>5, the bit hash&31.
func MTAHash(addr [6]byte) uint16 {
	return (uint16(addr[4])>>4 | uint16(addr[5])<<4) & 0xfff
}

// MTATable builds the MTA that passes addrs (e1000_update_mc_addr_list:
// the shadow table the driver writes). Unicast addresses in addrs are
// hashed too, as the driver would.
func MTATable(addrs [][6]byte) [MTASize]uint32 {
	var t [MTASize]uint32
	for _, a := range addrs {
		h := MTAHash(a)
		t[h>>5] |= 1 << (h & 31)
	}
	return t
}

func rarWord(addr [6]byte, valid bool) uint64 {
	var w uint64
	for i := 5; i >= 0; i-- {
		w = w<<8 | uint64(addr[i])
	}
	if valid {
		w |= rarValid
	}
	return w
}

func rarAddr(w uint64) [6]byte {
	var a [6]byte
	for i := range a {
		a[i] = byte(w >> (8 * i))
	}
	return a
}

// SetRxControl writes RCTL's filter bits (unknown bits are a
// *ConfigError).
func (n *NIC) SetRxControl(c RxControl) error {
	if c&^rctlKnown != 0 {
		return &ConfigError{Pkg: "simnic", Field: "rctl", Value: c, Reason: "bits the device does not implement"}
	}
	n.filt.rctl.Store(uint32(c))
	return nil
}

// RxControl reads RCTL's filter bits.
func (n *NIC) RxControl() RxControl { return RxControl(n.filt.rctl.Load()) }

// SetRAR writes receive address register i (e1000_rar_set): addr, and
// whether it is valid (AV). An index outside 0..NumRAR-1 is a
// *ConfigError.
func (n *NIC) SetRAR(i int, addr [6]byte, valid bool) error {
	if i < 0 || i >= NumRAR {
		return &ConfigError{Pkg: "simnic", Field: "rar", Value: i, Reason: fmt.Sprintf("want 0..%d", NumRAR-1)}
	}
	n.filt.rar[i].Store(rarWord(addr, valid))
	return nil
}

// RAR reads receive address register i (a zero, invalid entry for an
// index out of range).
func (n *NIC) RAR(i int) (addr [6]byte, valid bool) {
	if i < 0 || i >= NumRAR {
		return addr, false
	}
	w := n.filt.rar[i].Load()
	return rarAddr(w), w&rarValid != 0
}

// SetMTA writes the multicast table array.
func (n *NIC) SetMTA(t *[MTASize]uint32) {
	for i := range t {
		n.filt.mta[i].Store(t[i])
	}
}

// MTA reads the multicast table array.
func (n *NIC) MTA() [MTASize]uint32 {
	var t [MTASize]uint32
	for i := range t {
		t[i] = n.filt.mta[i].Load()
	}
	return t
}

// SetVFTA writes the VLAN filter table (bit vid&31 of register vid>>5).
func (n *NIC) SetVFTA(t *[VFTASize]uint32) {
	for i := range t {
		n.filt.vfta[i].Store(t[i])
	}
}

// VFTA reads the VLAN filter table.
func (n *NIC) VFTA() [VFTASize]uint32 {
	var t [VFTASize]uint32
	for i := range t {
		t[i] = n.filt.vfta[i].Load()
	}
	return t
}

// VFTATable builds the VFTA that passes vids (em's shadow_vfta). A VID
// above MaxVLANID is a *ConfigError.
func VFTATable(vids []uint16) ([VFTASize]uint32, error) {
	var t [VFTASize]uint32
	for _, v := range vids {
		if v > MaxVLANID {
			return t, &ConfigError{Pkg: "simnic", Field: "vid", Value: v, Reason: fmt.Sprintf("want 0..%d", MaxVLANID)}
		}
		t[v>>5] |= 1 << (v & 31)
	}
	return t, nil
}

// SetVLANMode writes CTRL.VME: strip 802.1Q tags on receive into the
// descriptor, and insert them on transmit where a descriptor has VLE.
// Without VME a transmit descriptor with VLE is a request the device
// cannot carry out: the frame is dropped whole (TxBadContext), never sent
// with its tag silently lost.
func (n *NIC) SetVLANMode(vme bool) { n.filt.vme.Store(vme) }

// VLANMode reads CTRL.VME.
func (n *NIC) VLANMode() bool { return n.filt.vme.Load() }

// SetMaxFrame writes the max frame register (RLPML, 82599's MAXFRS.MFS):
// the longest frame received or sent, counting the FCS and not counting
// one 802.1Q tag (isc_max_frame_size: MTU + ETHER_HDR_LEN + ETHER_CRC_LEN).
// It must lie within 64..Config.MaxFrame (the buffers are sized for that);
// otherwise a *ConfigError. Frames the wire offers above it are dropped
// and counted in RxTooLong (ROC); a longer TX frame is dropped whole
// (TxTooLong).
func (n *NIC) SetMaxFrame(size int) error {
	if size < minFrame+4 || size > n.cfg.MaxFrame {
		return &ConfigError{Pkg: "simnic", Field: "maxframe", Value: size, Reason: fmt.Sprintf("want %d..%d (Config.MaxFrame)", minFrame+4, n.cfg.MaxFrame)}
	}
	n.filt.maxFrame.Store(int32(size))
	return nil
}

// MaxFrame reads the max frame register.
func (n *NIC) MaxFrame() int { return int(n.filt.maxFrame.Load()) }

// resetFilter sets the registers' power-up values: RCTL open
// (ResetRxControl), RAR 0 holding Config.MAC, the tables clear, VME with
// Config.Offload, the max frame Config.MaxFrame.
func (n *NIC) resetFilter() {
	n.filt.rctl.Store(uint32(ResetRxControl))
	n.filt.rar[0].Store(rarWord(n.cfg.MAC, true))
	n.filt.vme.Store(n.cfg.Offload)
	n.filt.maxFrame.Store(int32(n.cfg.MaxFrame))
}

// verdict is what the MAC does with a frame from the wire.
type verdict uint8

const (
	admit         verdict = iota // into the FIFO (if it has room)
	dropAddr                     // the address filter
	dropVLAN                     // the VLAN filter
	dropLong                     // longer than the max frame register (ROC)
	consumedPause                // a MAC control frame, acted on and consumed
)

// Frames the MAC recognises.
const (
	etherTypeMACControl = 0x8808
	macCtlPause         = 0x0001 // the PAUSE opcode
)

var broadcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// classify decides what the MAC does with frame (without the FCS): flow
// control frames first, then the address filter, the VLAN filter and the
// length. A frame too short for a destination address is not filtered
// (the model keeps runts for the layers that count them).
func (n *NIC) classify(frame []byte) verdict {
	if len(frame) < 6 {
		if len(frame) > n.maxWireFrame(frame) {
			return dropLong
		}
		return admit
	}
	if isPause(frame) {
		return consumedPause
	}
	if !n.addrPasses([6]byte(frame[:6])) {
		return dropAddr
	}
	if len(frame) >= 16 && binary.BigEndian.Uint16(frame[12:14]) == etherTypeVLAN && RxControl(n.filt.rctl.Load())&RctlVFE != 0 {
		vid := binary.BigEndian.Uint16(frame[14:16]) & 0xfff
		if n.filt.vfta[vid>>5].Load()&(1<<(vid&31)) == 0 {
			return dropVLAN
		}
	}
	if len(frame) > n.maxWireFrame(frame) {
		return dropLong
	}
	return admit
}

// isPause reports an 802.3x PAUSE frame: EtherType 0x8808, opcode 1 (its
// destination is 01:80:C2:00:00:01, or the station address; the MAC takes
// either).
func isPause(f []byte) bool {
	return len(f) >= 18 && binary.BigEndian.Uint16(f[12:14]) == etherTypeMACControl && binary.BigEndian.Uint16(f[14:16]) == macCtlPause
}

// addrPasses is the address filter.
func (n *NIC) addrPasses(dst [6]byte) bool {
	rctl := RxControl(n.filt.rctl.Load())
	if dst[0]&1 == 0 {
		return rctl&RctlUPE != 0 || n.rarMatch(dst)
	}
	switch {
	case dst == broadcast && rctl&RctlBAM != 0, rctl&RctlMPE != 0:
		return true
	}
	h := MTAHash(dst)
	return n.filt.mta[h>>5].Load()&(1<<(h&31)) != 0 || n.rarMatch(dst)
}

func (n *NIC) rarMatch(dst [6]byte) bool {
	w := rarWord(dst, true)
	for i := range n.filt.rar {
		if n.filt.rar[i].Load() == w {
			return true
		}
	}
	return false
}
