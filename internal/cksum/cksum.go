// Package cksum is the Internet checksum (RFC 1071) the examples' devices
// and links compute in software: in_cksum's ones'-complement sum of 16-bit
// big-endian words, kept unfolded in a uint64 so that sums of parts (a
// pseudo-header, headers, payload) add without carries lost.
package cksum

import "encoding/binary"

// Sum adds b to acc as big-endian 16-bit words (an odd last byte padded
// with zero), without folding. b may be any length; acc cannot overflow
// for less than 2^47 bytes.
func Sum(b []byte, acc uint64) uint64 {
	for len(b) >= 8 {
		v := binary.BigEndian.Uint64(b)
		acc += v>>48 + v>>32&0xffff + v>>16&0xffff + v&0xffff
		b = b[8:]
	}
	for len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// Fold folds a sum to 16 bits with end-around carries; the checksum field
// takes its complement (^Fold), and a packet whose checksum is right folds
// to 0xffff over its covered bytes.
func Fold(acc uint64) uint16 {
	for acc>>16 != 0 {
		acc = acc&0xffff + acc>>16
	}
	return uint16(acc)
}
