package simnic

import "encoding/binary"

// Descriptor layout constants (see the package doc).
const (
	DescSize = 16

	TxCmdEOP  = 0x01 // E1000_TXD_CMD_EOP
	TxCmdIFCS = 0x02 // E1000_TXD_CMD_IFCS
	TxCmdRS   = 0x08 // E1000_TXD_CMD_RS
	TxCmdVLE  = 0x40 // E1000_TXD_CMD_VLE
	TxStatDD  = 0x01 // E1000_TXD_STAT_DD

	RxStatDD   = 0x01 // E1000_RXD_STAT_DD
	RxStatEOP  = 0x02 // E1000_RXD_STAT_EOP
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
