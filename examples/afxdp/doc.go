// Package afxdp is an iflib driver over Linux AF_XDP sockets: the first
// goiflib driver whose "hardware" is not simulated. An AF_XDP socket is a
// set of descriptor rings shared with the kernel over a packet memory area
// (the UMEM), and iflib's driver contract maps onto it directly:
//
//	iflib (FreeBSD)          AF_XDP
//	ift_rxd_refill/flush     fill ring        (free frames by UMEM offset)
//	ift_rxd_available/get    RX ring          (received frame: offset, length)
//	ift_txd_encap/flush      TX ring + sendto (frame to send, doorbell)
//	ift_txd_credits_update   completion ring  (sent frames come back)
//	bus address (ifsd_ba)    UMEM offset      (busdma.IdentitySpace)
//
// The UMEM is the DMA memory: iflib carves its RX free lists' zones from
// it, a program carves its TX zone from it (UMEM.NewZone), and because a
// bus address is an offset that never changes, iflib's reuse of a
// cluster's stored bus address (ifsd_ba, review D17901) is exactly right.
// Two drivers on one UMEM forward without copying: a packet received on one
// is transmitted on the other by the same offset.
//
// An XDP program of five instructions, built with cilium/ebpf's asm package
// (no clang), redirects each queue's frames to its socket through an
// XSKMAP; it is attached (native or generic mode, as a bpf_link) at Init
// and removed at Stop, Detach and on every error path.
//
// A doorbell (ift_txd_flush) is a system call here, not an MMIO write: in
// copy mode the kernel transmits only inside sendto. So the driver kicks
// the kernel at once for a doorbell that covers several descriptors (a
// TransmitBatch run in simple mode, an mp_ring drain pass) and leaves the
// kick of a single-descriptor doorbell (a packet sent alone: simple mode
// rings once per Transmit call) to the queue's TX task, which kicks
// whatever is waiting when it runs.
//
// The package also carries the test rig (Rig: veth pairs in a private
// network namespace, raw sockets on the peer ends), a hand-written AF_XDP
// forwarding loop over the same rings without iflib (the baseline: same
// ring sizes, burst, kick and wakeup policy), and RunForward, which
// measures iflib's forwarders (TransmitBatch from the input callback, in
// mp_ring and simple_tx mode) beside it, with the CPU time and the system
// calls each spends per frame.
//
// Partial checksums (the veth trap): a Linux socket sending through a
// device with TX checksum offload on — veth's default, and most virtual
// devices' — leaves its TCP and UDP checksums for the hardware to finish
// (CHECKSUM_PARTIAL), and veth hands the frame on unfinished, so AF_XDP
// receives segments whose checksum field holds only the pseudo-header
// sum. Any stack, or any kernel the frames are forwarded to, drops them:
// TCP and UDP get nothing at all while ping works (ICMP checksums are
// computed in software). The kernel gives XDP and AF_XDP no checksum
// state (its RX metadata kfuncs cover the timestamp, RSS hash and VLAN
// tag), so by default the driver completes such frames itself before the
// input callback (CompleteChecksum: the field equals the pseudo-header
// sum and the frame does not verify), counted in Stats.PartialChecksums;
// Config.KeepPartialChecksums turns that off. The alternative is to turn
// the sender's offload off, `ethtool -K <peer> tx off`, on every
// interface that sends towards the driver. Frames the driver transmits
// carry whatever checksums the program wrote: complete ones (a stack,
// a forwarder of completed frames).
//
// The control plane maps onto the real interface through netlink: the
// MTU (IFDI_MTU_SET: checked against what the UMEM frames receive, then
// set on the interface; the kernel's own refusal is reported with its
// reason), the MAC address (read at Attach, iflib_set_mac; IFDI_INIT
// programs Context.MAC), IFF_PROMISC and IFF_ALLMULTI (IFDI_PROMISC_SET;
// Detach restores the flags Attach found), the multicast list
// (IFDI_MULTI_SET: SIOCADDMULTI, as `ip maddr add`), and the link:
// RTM_NEWLINK notifications report its state and, from ETHTOOL_GSET, its
// speed (iflib_link_state_change, so Context.SubscribeLink sees them). A
// MAC address set on the interface behind the driver's back is followed
// (Context.SetMAC), and so is an MTU the driver can receive
// (Context.SetMTU); one it cannot takes the link down with a notice
// through Config.Logf until it is set back, instead of the kernel
// dropping every larger frame silently.
//
// Jumbo frames use XDP multi-buffer: the redirect program is loaded
// frags-aware (BPF_F_XDP_HAS_FRAGS) wherever the kernel takes it, and when
// the MTU does not fit one UMEM frame after XDP_PACKET_HEADROOM the
// sockets bind with XDP_USE_SG: a frame spans up to MaxFrags chunks, each
// descriptor but the last flagged XDP_PKT_CONTD, each fragment's data at
// its own offset in its chunk (iflib.RxdFrag.Off); a packet chain is sent
// as one descriptor per cluster. MTU 9000 with 4096-byte frames takes
// three. A kernel without multi-buffer support (before Linux 5.18 for the
// program, 6.6 for AF_XDP's XDP_USE_SG) gets a clear ErrFrameTooBig.
//
// Queues: by default every RX queue the interface uses is bound (one
// iflib queue pair and AF_XDP socket each), because the kernel steers each
// frame to a queue and the redirect program passes frames of a queue
// without a socket to the kernel's stack, past the driver. Attach refuses
// a QueueIDs list that leaves one out (ErrUnboundQueues) unless
// Config.PartialQueues says so.
//
// Ring sizes and overload: a forwarder of TCP traffic needs deep RX rings.
// TCP's window queues in the forwarder's RX ring whenever the forwarder is
// the bottleneck, and AF_XDP has no back-pressure path to the sender (a
// kernel bridge has the qdisc). What does not fit is dropped by the
// kernel and shows in Stats.RxFillRingEmpty (and RxDropped): iflib posts
// at most nrxd−1 frames to the fill ring and the RX ring has nrxd slots,
// so RxRingFull cannot move under an iflib driver. DefaultNRxd is 4096
// for that reason; a latency-bound program may want less. One kernel TCP
// connection through two drivers forwarding each other's batches, 5 s per
// cell on the 2-vCPU VM at a load average of 12–13:
//
//	AFXDP_TCP_SECONDS=5 go test -run TestTCPForward -v ./examples/afxdp/
//
//	        segments retransmitted of sent (the forwarder's RxFillRingEmpty)
//	NRxd    native                         generic (peers' TSO/GSO off)
//	1024    2013 of 176881, 1.14 % (2009)  6961 of 222769, 3.12 % (6960)
//	2048      17 of 171075, 0.01 % (0)        6 of  88298, 0.01 % (0)
//	4096       0 of 105870, 0 %    (0)        3 of 103292, 0.00 % (0)
//
// Generic XDP and GSO: generic XDP runs on the skb the stack received,
// which from a sender with TSO or GSO on (veth's default, or a NIC's GRO)
// is a TCP super-segment of up to 64 KB that no AF_XDP socket takes (the
// kernel drops it, counted in Stats.RxDropped): TCP stalls. Turn them off
// on the sending side (`ethtool -K <peer> tso off gso off`, and `gro off`
// on a NIC the driver runs on), or use native XDP, where veth turns its
// peer's GSO off itself while a program is attached.
//
// Limits: the interface is followed by index (a deleted and recreated
// interface of the same name is not picked up); VLAN filters are not
// programmed (IFDI_VLAN_REGISTER: a veth passes every tag). Available
// says why the driver cannot run here: it checks capabilities
// (CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF or CAP_SYS_ADMIN), not root.
package afxdp
