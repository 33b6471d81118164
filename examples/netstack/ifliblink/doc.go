// Package ifliblink is a gVisor netstack link endpoint over an iflib
// context: it puts a full TCP/IP stack (gvisor.dev/gvisor/pkg/tcpip, with
// net/http over its gonet adapter) on any goiflib driver — the simulated
// NIC, AF_XDP, a driver of your own. It is an Ethernet NIC to the stack:
// ARP, an MTU, a MAC, checksum offload and TSO where the device has them.
//
// Putting a stack on a driver takes two lines beyond the driver's own
// setup, because iflib fixes the input callback (if_input) at Register,
// before the context exists:
//
//	ep, _ := ifliblink.New(ifliblink.Options{TxZone: zone})          // its Input is the driver's Attachment.Input
//	_ = ep.Bind(ic); _ = s.CreateNIC(1, ep)                          // after Register: ic is the driver's context
//
// # Data path and copies
//
// Transmit: the stack calls WritePackets with one packet, or with a burst
// (gVisor's own GSO hands the segments of up to 64 KiB at once). Each
// packet is copied into packets from Options.TxZone — chained when a frame
// is larger than one cluster — its checksum offload or TSO is set
// (CSUM_IP_TCP/UDP with the pseudo-header sum seeded, or CSUM_IP_TSO and
// tso_segsz; checksums the device cannot insert are computed over the
// copy, and gVisor's host-GSO packets over IPv6, which the device cannot
// cut, are cut into segments here), and the burst goes to iflib with one
// Context.TransmitBatch (one mp_ring enqueue and drain, one doorbell
// decision).
//
// Receive: iflib's RX task calls Input with a batch (if_input). Each frame
// is checked (see Input), copied into one gVisor buffer, freed back to
// iflib at once, and delivered (DeliverNetworkPacket) on the RX task, in
// order. With Options.LRO, in-order TCP segments of one flow within a
// batch are merged first, as iflib_rxeof feeds FreeBSD's tcp_lro (off by
// default: see the option for the gVisor stall it makes likely).
//
// Who copies what, and why exactly once each way:
//   - TX, WritePackets, gVisor's buffers → TX zone clusters: iflib
//     transmits only packets of a Zone on the device's busdma space (on
//     AF_XDP, UMEM frames), and gVisor keeps its buffers after the call
//     (TCP retransmits from them), so neither side can lend the other its
//     memory. FreeBSD's m_extadd would let iflib send foreign memory; it
//     has no counterpart here.
//   - RX, Input, iflib clusters → a gVisor buffer: gVisor's packets live
//     in its own pooled, reference-counted chunks and it cannot wrap
//     foreign memory, and iflib wants its clusters back to refill the ring.
//     The cluster is freed before the frame is delivered, so the stack
//     never pins iflib's RX memory (a stack that holds packets at Detach is
//     a LeakError).
//
// Ownership after each call: WritePackets keeps no reference to gVisor's
// packets (the caller's, as the LinkWriter contract says); the zone
// packets it passes to iflib are iflib's from that call on, whatever the
// result. The packets Input receives are freed before it returns.
//
// # What comes from the context
//
// Bind reads the device through iflib's control plane: the MTU is
// Context.MTU (if_mtu: SoftcCtx.MaxFrameSize − 18 at attach, FreeBSD
// drivers counting ETHER_HDR_LEN and ETHER_CRC_LEN in isc_max_frame_size),
// read live, so Context.SetMTU takes effect at once, and the endpoint's
// SetMTU is Context.SetMTU; the offloads are SoftcCtx.TxCsumFlags
// (checksum insertion, claimed to gVisor as CapabilityTXChecksumOffload
// when the device does IPv4 TCP and UDP) and TSO (CSUM_IP_TSO with
// TxTSOSizeMax, claimed as host GSO), as far as Context.CapEnabled
// enables them, checked again on every WritePackets: an offload turned
// off later with Context.SetCapEnable is done in software instead; the
// link is Context.Running and Context.LinkState, read by LinkUp and by
// every WritePackets (Context.SubscribeLink gives the changes as they
// come); while the link is down or the interface not running (stopped,
// resetting, detached) WritePackets drops the frames as a NIC without carrier does
// and reports them written, so gVisor's ARP and TCP retry rather than fail
// the connection. The MAC is Options.MAC, else the driver's (Context.MAC, which
// the driver reported with iflib_set_mac; Options.HardwareAddr for a
// driver that did not), else a random locally administered address; Bind
// and SetLinkAddress give it to the device (Context.SetMAC), whose
// unicast filter would drop frames to any other.
//
// RX checksum offload is never claimed: gVisor reads it per NIC, not per
// packet, and a reassembled datagram inherits it from its fragments, which
// no device verifies. Frames the device verified and found bad
// (CSUM_L3_CALC or CSUM_L4_CALC without _VALID) are dropped here; gVisor
// verifies the rest.
//
// Bind stays a step after Register although Attachment.Input receives the
// context with each batch: the endpoint transmits, and gVisor asks its MTU,
// capabilities and address at CreateNIC, before any frame arrives.
//
// # Drivers
//
// On AF_XDP (examples/afxdp) the driver completes the TCP and UDP
// checksums a Linux peer leaves partial (veth's default TX checksum
// offload) before Input sees the frames; see afxdp.CompleteChecksum. A
// stack on the driver needs nothing else: TCP from the peer works with
// its default offloads.
//
// docs/netstack.md in the repository measures the endpoint against
// gVisor's own link/pipe and link/channel.
package ifliblink
