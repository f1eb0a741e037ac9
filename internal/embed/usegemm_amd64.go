//go:build amd64 && !purego

package embed

// useRowBlock is the number of rows the assembly kernel computes at once.
const useRowBlock = 6

// useHaveSIMD reports whether the AVX2+FMA kernel can run here, and
// useHaveAVX512 whether the AVX-512 one can too.
var (
	useHaveSIMD   = useDetectAVX2FMA()
	useHaveAVX512 = useHaveSIMD && useDetectAVX512()
)

// useCPUID executes CPUID with the given leaf and sub-leaf.
func useCPUID(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// useXGETBV reads extended control register 0.
func useXGETBV() (eax, edx uint32)

// useKernel6x16 computes one 6×16 block of a product: for r < 6 and
// j < 16, c[r*ldc+j] = bias[j] + Σ_{kk<k} a[r*lda+kk]·b[kk*16+j], plus
// the old c[r*ldc+j] when add is not 0. lda and ldc count float32s.
//
//go:noescape
func useKernel6x16(a *float32, lda uintptr, b *float32, k uintptr, c *float32, ldc uintptr, bias *float32, add uintptr)

// useKernel6x32 is useKernel6x16 over 32 columns with AVX-512: b is a
// panel, and the next panel (columns 16..31) starts k·16 floats later.
//
//go:noescape
func useKernel6x32(a *float32, lda uintptr, b *float32, k uintptr, c *float32, ldc uintptr, bias *float32, add uintptr)

func useDetectAVX512() bool {
	// The OS must save opmask and ZMM state (XCR0 bits 5–7) as well.
	if xcr0, _ := useXGETBV(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, ebx7, _, _ := useCPUID(7, 0)
	return ebx7&(1<<16) != 0 // AVX512F
}

func useDetectAVX2FMA() bool {
	maxLeaf, _, _, _ := useCPUID(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := useCPUID(1, 0)
	const (
		fma     = 1 << 12
		osxsave = 1 << 27
		avx     = 1 << 28
	)
	if ecx1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	if xcr0, _ := useXGETBV(); xcr0&0x6 != 0x6 { // XMM and YMM state enabled
		return false
	}
	_, ebx7, _, _ := useCPUID(7, 0)
	return ebx7&(1<<5) != 0 // AVX2
}

// useGemmSIMD runs the assembly kernels over every 6-row block of every
// panel. Shapes were checked by useGemm.
func useGemmSIMD(c []float32, ldc int, a []float32, lda int, rows int, b *useMat, bias []float32, add bool) {
	useGemmKernels(c, ldc, a, lda, rows, b, bias, add, useHaveAVX512)
}

// useGemmKernels is useGemmSIMD, with the AVX-512 kernel used for pairs of
// panels when avx512 is set.
func useGemmKernels(c []float32, ldc int, a []float32, lda int, rows int, b *useMat, bias []float32, add, avx512 bool) {
	k := b.k
	var addFlag uintptr
	if add {
		addFlag = 1
	}
	if k == 0 {
		useGemmGo(c, ldc, a, lda, rows, b, bias, add)
		return
	}
	np := b.n / usePanel
	p := 0
	if avx512 {
		for ; p+1 < np; p += 2 {
			panel := &b.panels[p*k*usePanel]
			j0 := p * usePanel
			for r := 0; r < rows; r += useRowBlock {
				useKernel6x32(&a[r*lda], uintptr(lda), panel, uintptr(k),
					&c[r*ldc+j0], uintptr(ldc), &bias[j0], addFlag)
			}
		}
	}
	for ; p < np; p++ {
		panel := &b.panels[p*k*usePanel]
		j0 := p * usePanel
		for r := 0; r < rows; r += useRowBlock {
			useKernel6x16(&a[r*lda], uintptr(lda), panel, uintptr(k),
				&c[r*ldc+j0], uintptr(ldc), &bias[j0], addFlag)
		}
	}
}
