//go:build !amd64 || purego

package embed

// useSIMDKernels adds nothing: there are no assembly kernels here.
func useSIMDKernels(map[string]func(c []float32, add bool), int, []float32, int, int, *useMat, []float32) {
}
