package simnic

import "encoding/binary"

// Descriptor layout constants (see the package doc).
const (
	DescSize = 16

	TxCmdEOP  = 0x01 // E1000_TXD_CMD_EOP
	TxCmdIFCS = 0x02 // E1000_TXD_CMD_IFCS
	TxCmdTSE  = 0x04 // E1000_TXD_CMD_TSE (extended data and context descriptors)
	TxCmdRS   = 0x08 // E1000_TXD_CMD_RS
	TxCmdDEXT = 0x20 // E1000_TXD_CMD_DEXT: an extended descriptor (context or data)
	TxCmdVLE  = 0x40 // E1000_TXD_CMD_VLE
	TxStatDD  = 0x01 // E1000_TXD_STAT_DD

	// Extended descriptors: DTYP in the high nibble of byte 10.
	TxDTypContext = 0x0 // TCP/IP context descriptor (SDM §3.3.6)
	TxDTypData    = 0x1 // TCP/IP data descriptor (SDM §3.3.7)
	// TUCMD of a context descriptor (byte 11): TCP (else UDP), IP (IPv4),
	// TSE, RS and DEXT (E1000_TXD_CMD_TCP, E1000_TXD_CMD_IP).
	TxTucmdTCP = 0x01
	TxTucmdIP  = 0x02
	// POPTS of a data descriptor (byte 13).
	TxPoptsIXSM = 0x01 // E1000_TXD_POPTS_IXSM: insert the IPv4 header checksum
	TxPoptsTXSM = 0x02 // E1000_TXD_POPTS_TXSM: insert the TCP/UDP checksum

	RxStatDD   = 0x01 // E1000_RXD_STAT_DD
	RxStatEOP  = 0x02 // E1000_RXD_STAT_EOP
	RxStatIXSM = 0x04 // E1000_RXD_STAT_IXSM: ignore the checksum indications
	RxStatVP   = 0x08 // E1000_RXD_STAT_VP
	RxStatL4CS = 0x20 // E1000_RXD_STAT_TCPCS
	RxStatIPCS = 0x40 // E1000_RXD_STAT_IPCS

	// RX descriptor errors (RDESC.ERRORS, PCI/PCI-X Gigabit Ethernet
	// Controllers SDM Table 3-3; LE from the 82575): valid in the EOP
	// descriptor only.
	RxErrCE   = 0x01 // E1000_RXD_ERR_CE: CRC error
	RxErrSE   = 0x02 // E1000_RXD_ERR_SE: symbol error
	RxErrSEQ  = 0x04 // E1000_RXD_ERR_SEQ: sequence error
	RxErrLE   = 0x08 // length error (82575 LE)
	RxErrCXE  = 0x10 // E1000_RXD_ERR_CXE: carrier extension error
	RxErrTCPE = 0x20 // E1000_RXD_ERR_TCPE: TCP/UDP checksum error
	RxErrIPE  = 0x40 // E1000_RXD_ERR_IPE: IP checksum error
	RxErrRXE  = 0x80 // E1000_RXD_ERR_RXE: RX data error (here also a faulted buffer write)

	// RxErrFrameMask is E1000_RXD_ERR_FRAME_ERR_MASK (CE|SE|SEQ|CXE|RXE)
	// plus LE: a frame with one of these is bad as a whole.
	RxErrFrameMask = RxErrCE | RxErrSE | RxErrSEQ | RxErrLE | RxErrCXE | RxErrRXE
)

// EtherTypes the device parses.
const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86DD
	etherTypeVLAN = 0x8100
)

type txDesc struct {
	addr   uint64
	length uint16
	cmd    uint8
	status uint8
	vlan   uint16
}

func putTxDesc(b []byte, d txDesc) {
	binary.LittleEndian.PutUint64(b[0:8], d.addr)
	binary.LittleEndian.PutUint16(b[8:10], d.length)
	b[10] = 0
	b[11] = d.cmd
	b[12] = d.status
	b[13] = 0
	binary.LittleEndian.PutUint16(b[14:16], d.vlan)
}

func getTxDesc(b []byte) txDesc {
	return txDesc{
		addr:   binary.LittleEndian.Uint64(b[0:8]),
		length: binary.LittleEndian.Uint16(b[8:10]),
		cmd:    b[11],
		status: b[12],
		vlan:   binary.LittleEndian.Uint16(b[14:16]),
	}
}

type rxWB struct {
	hash     uint32
	hashType uint8
	length   uint16
	status   uint8
	errors   uint8
	vlan     uint16
}

func putRxWB(b []byte, w rxWB) {
	binary.LittleEndian.PutUint32(b[0:4], w.hash)
	b[4] = w.hashType
	b[5], b[6], b[7] = 0, 0, 0
	binary.LittleEndian.PutUint16(b[8:10], w.length)
	b[10], b[11] = 0, 0
	b[12] = w.status
	b[13] = w.errors
	binary.LittleEndian.PutUint16(b[14:16], w.vlan)
}

func getRxWB(b []byte) rxWB {
	return rxWB{
		hash:     binary.LittleEndian.Uint32(b[0:4]),
		hashType: b[4],
		length:   binary.LittleEndian.Uint16(b[8:10]),
		status:   b[12],
		errors:   b[13],
		vlan:     binary.LittleEndian.Uint16(b[14:16]),
	}
}

// txCtx is a TCP/IP context descriptor (SDM §3.3.6, Table 3-13): where the
// checksums start, go and end, and the TSO parameters.
//
//	ipcss[0] ipcso[1] ipcse[2:4] tucss[4] tucso[5] tucse[6:8]
//	paylen[8:11] (20 bits) dtyp[10]>>4 tucmd[11] sta[12] hdrlen[13] mss[14:16]
type txCtx struct {
	ipcss, ipcso uint8
	ipcse        uint16 // last byte of the IP header (inclusive); 0: none
	tucss, tucso uint8
	tucse        uint16 // last byte of the L4 checksum (inclusive); 0: to the end
	paylen       uint32 // TSO: the payload bytes after hdrlen
	tucmd        uint8
	hdrlen       uint8
	mss          uint16
}

func putTxCtx(b []byte, c txCtx) {
	b[0], b[1] = c.ipcss, c.ipcso
	binary.LittleEndian.PutUint16(b[2:4], c.ipcse)
	b[4], b[5] = c.tucss, c.tucso
	binary.LittleEndian.PutUint16(b[6:8], c.tucse)
	binary.LittleEndian.PutUint32(b[8:12], c.paylen&0xfffff|TxDTypContext<<20|uint32(c.tucmd|TxCmdDEXT)<<24)
	b[12], b[13] = 0, c.hdrlen
	binary.LittleEndian.PutUint16(b[14:16], c.mss)
}

func getTxCtx(b []byte) txCtx {
	return txCtx{
		ipcss: b[0], ipcso: b[1], ipcse: binary.LittleEndian.Uint16(b[2:4]),
		tucss: b[4], tucso: b[5], tucse: binary.LittleEndian.Uint16(b[6:8]),
		paylen: binary.LittleEndian.Uint32(b[8:12]) & 0xfffff, tucmd: b[11],
		hdrlen: b[13], mss: binary.LittleEndian.Uint16(b[14:16]),
	}
}

// txData is a TCP/IP data descriptor (SDM §3.3.7, Table 3-17).
//
//	addr[0:8] dtalen[8:11] (20 bits) dtyp[10]>>4 dcmd[11] sta[12] popts[13] vlan[14:16]
type txData struct {
	addr   uint64
	length uint32
	cmd    uint8
	popts  uint8
	vlan   uint16
}

func putTxData(b []byte, d txData) {
	binary.LittleEndian.PutUint64(b[0:8], d.addr)
	binary.LittleEndian.PutUint32(b[8:12], d.length&0xfffff|TxDTypData<<20|uint32(d.cmd|TxCmdDEXT)<<24)
	b[12], b[13] = 0, d.popts
	binary.LittleEndian.PutUint16(b[14:16], d.vlan)
}

func getTxData(b []byte) txData {
	return txData{
		addr: binary.LittleEndian.Uint64(b[0:8]), length: binary.LittleEndian.Uint32(b[8:12]) & 0xfffff,
		cmd: b[11], popts: b[13], vlan: binary.LittleEndian.Uint16(b[14:16]),
	}
}
