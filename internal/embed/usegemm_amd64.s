//go:build amd64 && !purego

#include "textflag.h"

// func useCPUID(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·useCPUID(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func useXGETBV() (eax, edx uint32)
TEXT ·useXGETBV(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// func useKernel6x16(a *float32, lda uintptr, b *float32, k uintptr, c *float32, ldc uintptr, bias *float32, add uintptr)
//
// Y0..Y11 accumulate rows 0..5 (two YMM registers of 8 columns per row);
// each step of k loads one 16-wide row of the panel and broadcasts one
// element of each of the six rows of a. k must be at least 1.
TEXT ·useKernel6x16(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), R8
	SHLQ $2, R8
	MOVQ b+16(FP), BX
	MOVQ k+24(FP), CX
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	MOVQ bias+48(FP), AX

	// DI addresses row 3 of a.
	LEAQ (SI)(R8*2), DI
	ADDQ R8, DI

	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y1, Y3
	VMOVAPS Y0, Y4
	VMOVAPS Y1, Y5
	VMOVAPS Y0, Y6
	VMOVAPS Y1, Y7
	VMOVAPS Y0, Y8
	VMOVAPS Y1, Y9
	VMOVAPS Y0, Y10
	VMOVAPS Y1, Y11

loop:
	VMOVUPS (BX), Y12
	VMOVUPS 32(BX), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS (SI)(R8*1), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS (SI)(R8*2), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS (DI), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS (DI)(R8*1), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS (DI)(R8*2), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	ADDQ $4, SI
	ADDQ $4, DI
	ADDQ $64, BX
	DECQ CX
	JNZ  loop

	// R10 addresses row 3 of c.
	LEAQ (DX)(R9*2), R10
	ADDQ R9, R10

	MOVQ add+56(FP), AX
	TESTQ AX, AX
	JZ   store
	VADDPS (DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS (DX)(R9*1), Y2, Y2
	VADDPS 32(DX)(R9*1), Y3, Y3
	VADDPS (DX)(R9*2), Y4, Y4
	VADDPS 32(DX)(R9*2), Y5, Y5
	VADDPS (R10), Y6, Y6
	VADDPS 32(R10), Y7, Y7
	VADDPS (R10)(R9*1), Y8, Y8
	VADDPS 32(R10)(R9*1), Y9, Y9
	VADDPS (R10)(R9*2), Y10, Y10
	VADDPS 32(R10)(R9*2), Y11, Y11

store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, (DX)(R9*1)
	VMOVUPS Y3, 32(DX)(R9*1)
	VMOVUPS Y4, (DX)(R9*2)
	VMOVUPS Y5, 32(DX)(R9*2)
	VMOVUPS Y6, (R10)
	VMOVUPS Y7, 32(R10)
	VMOVUPS Y8, (R10)(R9*1)
	VMOVUPS Y9, 32(R10)(R9*1)
	VMOVUPS Y10, (R10)(R9*2)
	VMOVUPS Y11, 32(R10)(R9*2)
	VZEROUPPER
	RET
