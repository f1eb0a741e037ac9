//go:build !amd64 || purego

package embed

// useRowBlock is 1: the portable kernel takes any number of rows.
const useRowBlock = 1

// useHaveSIMD is false: only the portable kernel exists here.
const useHaveSIMD = false

func useGemmSIMD(c []float32, ldc int, a []float32, lda int, rows int, b *useMat, bias []float32, add bool) {
	useGemmGo(c, ldc, a, lda, rows, b, bias, add)
}
