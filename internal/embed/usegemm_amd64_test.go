//go:build amd64 && !purego

package embed

// useSIMDKernels adds the assembly kernels this machine can run.
func useSIMDKernels(kernels map[string]func(c []float32, add bool), ldc int, a []float32, lda, rows int, mat *useMat, bias []float32) {
	if useHaveSIMD {
		kernels["avx2"] = func(c []float32, add bool) { useGemmKernels(c, ldc, a, lda, rows, mat, bias, add, false) }
	}
	if useHaveAVX512 {
		kernels["avx512"] = func(c []float32, add bool) { useGemmKernels(c, ldc, a, lda, rows, mat, bias, add, true) }
	}
}
