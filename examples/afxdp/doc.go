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
// Limits: receive is single-buffer (the MTU must fit in one frame after
// XDP_PACKET_HEADROOM; iflib's if_rxd_frag has no per-fragment offset, and
// every AF_XDP multi-buffer fragment starts 256 bytes into its frame), and
// transmit is one frame per packet (larger packets are refused by iflib
// with ErrTooBig). Everything needs Linux and root; Available says why it
// cannot run elsewhere.
package afxdp
