//go:build !purego

#include "textflag.h"

// func indexControl(b []byte) int
//
// Sixteen bytes an instruction with SSE2, which every amd64 has: a byte x
// is below 0x20 when x minus 0x1f, saturated at zero, is zero. Four blocks
// of sixteen are folded with PMINUB and tested at once; a hit is found
// again sixteen bytes at a time, and the last bytes one by one, so that
// nothing past b is read (a mapped log may end there).
TEXT ·indexControl(SB), NOSPLIT, $0-32
	MOVQ	b_base+0(FP), SI
	MOVQ	b_len+8(FP), BX
	MOVQ	SI, DI
	LEAQ	(SI)(BX*1), DX
	MOVQ	$0x1f1f1f1f1f1f1f1f, AX
	MOVQ	AX, X7
	PUNPCKLQDQ	X7, X7
	PXOR	X6, X6
	CMPQ	BX, $64
	JB	by16

by64:
	MOVOU	(SI), X0
	MOVOU	16(SI), X1
	MOVOU	32(SI), X2
	MOVOU	48(SI), X3
	PSUBUSB	X7, X0
	PSUBUSB	X7, X1
	PSUBUSB	X7, X2
	PSUBUSB	X7, X3
	PMINUB	X1, X0
	PMINUB	X3, X2
	PMINUB	X2, X0
	PCMPEQB	X6, X0
	PMOVMSKB	X0, AX
	TESTL	AX, AX
	JNZ	by16
	ADDQ	$64, SI
	LEAQ	64(SI), AX
	CMPQ	AX, DX
	JBE	by64

by16:
	LEAQ	16(SI), AX
	CMPQ	AX, DX
	JA	by1
	MOVOU	(SI), X0
	PSUBUSB	X7, X0
	PCMPEQB	X6, X0
	PMOVMSKB	X0, AX
	TESTL	AX, AX
	JNZ	found16
	ADDQ	$16, SI
	JMP	by16

found16:
	BSFL	AX, AX
	ADDQ	AX, SI
	SUBQ	DI, SI
	MOVQ	SI, ret+24(FP)
	RET

by1:
	CMPQ	SI, DX
	JAE	none
	MOVBLZX	(SI), AX
	CMPL	AX, $0x20
	JB	found1
	INCQ	SI
	JMP	by1

found1:
	SUBQ	DI, SI
	MOVQ	SI, ret+24(FP)
	RET

none:
	MOVQ	BX, ret+24(FP)
	RET
