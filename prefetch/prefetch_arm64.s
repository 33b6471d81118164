//go:build !purego

#include "textflag.h"

// func prefetchAddr(addr uintptr)
TEXT ·prefetchAddr(SB), NOSPLIT|NOFRAME, $0-8
	MOVD	addr+0(FP), R0
	PRFM	(R0), PLDL1KEEP
	RET

// func prefetchLines(addr uintptr, n int)
TEXT ·prefetchLines(SB), NOSPLIT|NOFRAME, $0-16
	MOVD	addr+0(FP), R0
	MOVD	n+8(FP), R1
	CMP	$0, R1
	BLE	done

loop:
	PRFM	(R0), PLDL1KEEP
	ADD	$64, R0
	SUBS	$1, R1
	BNE	loop

done:
	RET
