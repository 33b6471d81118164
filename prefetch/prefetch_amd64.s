//go:build !purego

#include "textflag.h"

// func prefetchAddr(addr uintptr)
TEXT ·prefetchAddr(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ	addr+0(FP), AX
	PREFETCHT0	(AX)
	RET

// func prefetchLines(addr uintptr, n int)
TEXT ·prefetchLines(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ	addr+0(FP), AX
	MOVQ	n+8(FP), CX
	TESTQ	CX, CX
	JLE	done

loop:
	PREFETCHT0	(AX)
	ADDQ	$64, AX
	DECQ	CX
	JNZ	loop

done:
	RET
