// Package simnic is a simulated NIC: a device model with Intel-like
// descriptor rings in busdma DMA memory, and its iflib driver. It is the
// default "hardware" of goiflib: every test, benchmark and seed
// measurement runs on it, on any machine. It is meant to be the hardest
// device a driver will meet: everything a real Intel MAC does that a
// driver must cope with, it can do, on a reproducible schedule.
//
// # The device
//
// The device model runs as one goroutine per NIC, which parks when it has
// nothing to do (a doorbell, an interrupt enable, a frame on the wire or
// the next timed event wakes it). It reads descriptors and packet data
// only through busdma's device-side access (Device.Read and Device.Write
// at bus addresses), so it can touch only what the driver mapped: with the
// IOMMU model a stale address faults, and with the busdma checker on, a
// missing sync is reported.
//
// Registers are atomics: the driver's doorbell (TDT/RDT store, release)
// publishes the descriptors it wrote before. The device's write-back
// frontier (a release store after the write-backs before it) stands in
// for the coherent, in-order visibility of DMA writes on a real machine,
// which Go's memory model does not give plain memory: drivers read
// descriptors only below it, and count completions from the DD bits (or
// the written-back head) alone, as real drivers do. They never read the
// head registers: "Reading the transmit descriptor head to determine
// which buffers have been used (and can be returned to the memory pool)
// is not reliable" (PCI/PCI-X Family of Gigabit Ethernet Controllers
// Software Developer's Manual, §13.4.39 TDH; em_isc_txd_credits_update and
// em_isc_rxd_available read DD bits only).
//
// One driver at a time: a NIC is bound to the iflib driver from
// [NIC.Attach] until the context detaches, or to a [RawForwarder] from
// [NewRawForwarder] until Close; any other claim fails with [ErrBusy].
//
// Frames are whole or not at all. A TX frame longer than the max frame
// register (Config.MaxFrame, or what the driver programmed), or one
// whose buffer read faults, is dropped whole and counted (TxTooLong,
// TxDMAFaults); an RX frame whose buffer write faults carries RXE in its
// EOP descriptor, and the driver drops it rather than deliver a frame
// with a hole. The device's counters balance (see [Stats]).
//
// # Behaviour modes (Config)
//
//   - Link loss ([NIC.SetLink], [FaultLinkDown]): while the link is down
//     TX DMA stops — no descriptor is consumed — and frames arriving at
//     the wire are dropped (RxLinkDown), as Intel MACs do; Linux's e1000e,
//     igb and ixgbe watchdogs say it: "We've lost link, so the controller
//     stops DMA, but we've got queued Tx work that's never going to get
//     done, so reset controller to flush Tx" (a sender parked in
//     [NIC.WaitRoom] waits for the link to come back). Each change latches
//     the link-status-change cause (ICR.LSC); the driver's link interrupt
//     calls iflib's AdminIntr (em_msix_link → iflib_admin_intr_deferred),
//     and the admin task's IFDI_UPDATE_ADMIN_STATUS reads STATUS.LU and
//     reports it (em_if_update_admin_status). IFDI_TIMER polls the same
//     way (em_if_timer), which catches a lost link interrupt.
//   - Late and batched write-back (WBThresh, WBDelay): completed
//     descriptors are written back only when WBThresh are pending or the
//     oldest has waited WBDelay (TXDCTL/RXDCTL.WTHRESH with the TIDV/RDTR
//     timers, SDM §3.4 "Descriptors are written back in one of three
//     conditions", and the TXDCTL register), so completions arrive late
//     and in clumps; frames are sent before their write-back.
//   - Credits as real drivers see them (TxCompletion): em's tx_rsq walk
//     over DD bits (em_isc_txd_credits_update), the older em's count that
//     stays one descriptor short (tx_cidx_processed started at 0 before
//     em_if_init set it to ntxd−1 "to avoid an off-by-one error"), and
//     ixl-style head write-back (the device writes its head after the ring,
//     ixl_isc_txd_credits_update_hwb; 82599 TDWBAL), whose head can stop in
//     the middle of a packet (a service pass ends after 256 descriptors, at
//     a 32-descriptor fetch): iflib must keep that packet's later buffers
//     mapped until the device read them. FreeBSD's reclaim lag of
//     isc_tx_nsegments covers a packet of nsegments+1 descriptors, not a
//     TSO packet of up to isc_tx_tso_segments_max (Config.TSOSegs above
//     TxSegs makes one; the second FreeBSD review's R2-A2).
//   - RX frame errors ([FaultRxCRC], [FaultRxSymbol], [FaultRxLength],
//     [FaultRxDMA]): the EOP descriptor's error field carries CE, SE, LE or
//     RXE (SDM §3.2.3.2, Table 3-3: valid only with EOP and DD; the device
//     stores bad frames, as with RCTL.SBP). The driver either returns
//     EBADMSG, as em_isc_rxd_pkt_get does ("Make sure bad packets are
//     discarded"), and iflib counts it and resets, or reports the frame
//     with RxdInfo.Discard, as Linux drivers drop a bad frame and reuse its
//     buffers (e1000_clean_rx_irq), and iflib recycles it without a reset
//     (RxErrors).
//   - Interrupt faults ([FaultLostIntr], [FaultSpuriousIntr]): a lost
//     MSI-X message leaves the vector auto-masked (EIAM) and its work
//     undone until iflib's timer schedules the task; a spurious one runs a
//     handler with nothing to do.
//   - TX hang ([FaultTxHang]): the device stops consuming a queue until it
//     is reprogrammed; iflib's watchdog finds the queue frozen across its
//     timer periods and resets (IFDI_WATCHDOG_RESET, then stop + init).
//     A lost DD write-back ([FaultLostWriteBack]) freezes em's tx_rsq walk
//     the same way.
//   - Offloads (Offload), end to end: TX IPv4, TCP and UDP checksum
//     insertion and TSO from a TCP/IP context descriptor (SDM §3.3.6–3.3.7,
//     §3.5; em_transmit_checksum_setup, em_tso_setup): the device cuts a
//     TSO packet into MSS-sized frames with their IPv4 lengths,
//     identifications and checksums, TCP sequence numbers, flags and
//     checksums (see offload.go for the rules); VLAN tag insertion (VLE,
//     with or without Offload); RX checksum verification reported as
//     IPCS/TCPCS with IPE/TCPE (em_receive_checksum → CSUM_L3_CALC|
//     L3_VALID|L4_CALC|L4_VALID) and VLAN stripping into the descriptor
//     (VP and the tag → M_VLANTAG). A context the device cannot carry out
//     drops the packet whole (TxBadContext).
//   - Slow DMA (DMALatency): every device access takes longer.
//   - A slow wire (LineRate, FrameRate): frames leave at the wire's pace.
//     No wait of the device outlives a stop: the pacer's and the DMA
//     latency's end when Stop begins, so Stop and Detach never wait for
//     the wire, however slow.
//   - DMA faults on TX buffers ([FaultTxDMA]): the frame is dropped whole
//     and counted, as a PCIe completion error aborts one frame.
//
// # Control registers
//
// The device has the registers a driver's control half programs (see
// filter.go, rss.go and phy.go for the rules and their sources):
//
//   - Receive filter (8254x): a unicast perfect filter of NumRAR address
//     registers (RAR 0: Config.MAC), a 4096-bit multicast hash table
//     (MTA; MTAHash is e1000_hash_mc_addr with mc_filter_type 0), RCTL's
//     UPE, MPE, BAM and VFE, and a 4096-bit VLAN filter table (VFTA).
//     Frames the filters drop are refused at the wire and counted
//     (RxFilteredAddr, RxFilteredVLAN: what TPR counts and GPRC does
//     not). The model powers up open (ResetRxControl); the driver closes
//     the filter in IFDI_INIT from the interface's flags.
//   - VLAN tagging (CTRL.VME): tags stripped on receive into the
//     descriptor, inserted on transmit where a descriptor sets VLE.
//   - The max frame register (RLPML/MAXFRS): the longest frame with its
//     FCS, not counting one VLAN tag; above it a received frame is ROC
//     (RxTooLong), a transmitted one TxTooLong.
//   - RSS (82599): the Toeplitz hash (Toeplitz) with a 40-byte key, MRQC's
//     field enables and a 128-entry indirection table that picks the RX
//     queue; the hash and its type go into the RX descriptor (iri_flowid,
//     iri_rsstype).
//   - The PHY: autonegotiation of speed, duplex and flow control with a
//     link partner (SetLinkPartner; IEEE 802.3 Annex 28B), or a forced
//     mode; the link is the carrier and a resolved mode.
//   - 802.3x PAUSE: an XOFF from the wire or the schedule ([FaultPause])
//     stops the transmitter for its quanta at the link speed (with receive
//     flow control resolved on); XOFFs and XONs are counted (RxXoff,
//     RxXon). The driver reports them to iflib from IFDI_TIMER
//     (isc_pause_frames), so the watchdog does not reset a paused queue.
//
// # The fault schedule
//
// Faults come from a [Schedule]: one 64-bit seed and a [Profile] decide
// which faults fire and at which event of their stream (the Nth TX
// descriptor of a queue, the Nth frame from the FIFO, the Nth interrupt,
// the Nth link-status read), never at a wall-clock time, so a run replays.
// Tests take the seed from SIMNIC_SEED, or draw one and print it with the
// command that replays a failure (simnictest.Seed).
//
// # Descriptor layouts
//
// 16 bytes, little endian, after Intel's legacy e1000 descriptors, with
// the RX write-back extended by an RSS hash:
//
//	TX legacy:    addr[0:8] len[8:10] cso[10] cmd[11] status[12] css[13] vlan[14:16]
//	              cmd: EOP 0x01, IFCS 0x02, RS 0x08, VLE 0x40; status: DD 0x01
//	TX context:   ipcss[0] ipcso[1] ipcse[2:4] tucss[4] tucso[5] tucse[6:8]
//	  (DEXT,      paylen[8:11] (20 bits) dtyp=0[10]>>4 tucmd[11] sta[12] hdrlen[13] mss[14:16]
//	   DTYP 0)    tucmd: TCP 0x01, IP 0x02, TSE 0x04, RS 0x08, DEXT 0x20
//	TX data:      addr[0:8] dtalen[8:11] (20 bits) dtyp=1[10]>>4 dcmd[11] sta[12] popts[13] vlan[14:16]
//	  (DEXT,      dcmd: EOP 0x01, IFCS 0x02, TSE 0x04, RS 0x08, DEXT 0x20, VLE 0x40
//	   DTYP 1)    popts: IXSM 0x01 (IPv4 checksum), TXSM 0x02 (TCP/UDP checksum)
//	TX head write-back: the head index (uint32) right after the last descriptor
//	RX (read):    addr[0:8] (the rest zero)
//	RX (written): hash[0:4] rsstype[4] pad[5:8] len[8:10] csum[10:12] status[12] errors[13] vlan[14:16]
//	              rsstype: the RSSType* values (82599 RSS Type; 0: not hashed)
//	              status: DD 0x01, EOP 0x02, IXSM 0x04, VP 0x08 (VLAN stripped), L4CS 0x20, IPCS 0x40
//	              errors: CE 0x01, SE 0x02, SEQ 0x04, LE 0x08, CXE 0x10, TCPE 0x20, IPE 0x40, RXE 0x80
//
// Tests build rigs with the simnictest package, whose teardown checks
// every leak (zones, maps, checker reports, IOMMU faults, goroutines).
package simnic
