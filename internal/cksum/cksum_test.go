package cksum

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// ref is RFC 1071's loop, one word at a time, folded as it goes.
func ref(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
		s = s&0xffff + s>>16
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TestSumMatchesRFC1071: the 8-byte loop folds to RFC 1071's sum for every
// length 0..80 (each tail of the fast loop) and random contents, all ones
// included; sums of parts at even offsets add up to the sum of the whole.
func TestSumMatchesRFC1071(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 80; n++ {
		for _, fill := range []int{-1, 0xff, 0} {
			b := make([]byte, n)
			for i := range b {
				if fill < 0 {
					b[i] = byte(r.Uint32())
				} else {
					b[i] = byte(fill)
				}
			}
			require.Equal(t, ref(b), Fold(Sum(b, 0)), "len %d fill %d", n, fill)
			if n >= 2 {
				cut := n / 2 &^ 1
				require.Equal(t, Fold(Sum(b, 0)), Fold(Sum(b[cut:], Sum(b[:cut], 0))), "len %d split at %d", n, cut)
			}
		}
	}
	// RFC 1071 §3's example: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
	require.Equal(t, uint16(0xddf2), Fold(Sum([]byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0)))
}
