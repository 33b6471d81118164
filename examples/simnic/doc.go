// Package simnic is a simulated NIC: a device model with Intel-like
// descriptor rings in busdma DMA memory, and its iflib driver. It is the
// default "hardware" of goiflib: every test, benchmark and seed
// measurement runs on it, on any machine.
//
// The device model runs as one goroutine per NIC. It reads descriptors and
// packet data only through busdma's device-side access (Device.Read and
// Device.Write at bus addresses), so it can touch only what the driver
// mapped: with the IOMMU model a stale address faults, and with the busdma
// checker on, a missing sync is reported.
//
// Registers are atomics: the driver's doorbell (TDT/RDT store, release)
// publishes the descriptors it wrote before; the device's head registers
// (TDH/RDH store, release) publish the write-backs and the received data
// it wrote before. That pairing is what makes the CPU's and the device's
// accesses to shared DMA memory ordered, as PCIe ordering does for a real
// NIC.
//
// One driver at a time: a NIC is bound to the iflib driver from
// [NIC.Attach] until the context detaches, or to a [RawForwarder] from
// [NewRawForwarder] until Close; any other claim fails with [ErrBusy].
//
// Frames are whole or not at all. A TX frame longer than MaxFrame, or one
// whose buffer read faults, is dropped whole and counted (TxTooLong,
// TxDMAFaults); an RX frame whose buffer write faults carries RXE in its
// EOP descriptor, and the driver drops it (EBADMSG) rather than deliver a
// frame with a hole.
//
// Tests build rigs with the [simnictest] package, whose teardown checks
// every leak (zones, maps, checker reports, IOMMU faults, goroutines).
//
// Descriptor layouts (16 bytes, little endian), after Intel's legacy
// e1000 descriptors, with the RX write-back extended by an RSS hash:
//
//	TX:           addr[0:8] len[8:10] cso[10] cmd[11] status[12] css[13] vlan[14:16]
//	              cmd: EOP 0x01, IFCS 0x02, VLE 0x40, RS 0x08; status: DD 0x01
//	RX (read):    addr[0:8] (the rest zero)
//	RX (written): hash[0:4] hashtype[4] pad[5:8] len[8:10] csum[10:12] status[12] errors[13] vlan[14:16]
//	              status: DD 0x01, EOP 0x02, VP 0x08 (VLAN stripped), L4CS 0x20, IPCS 0x40
package simnic
