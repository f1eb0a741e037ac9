package embed

import "fmt"

// Dense matrix products for USE Lite. A weight matrix W (K×N, row-major,
// TensorFlow's [in, out] layout) is repacked once into column panels of
// usePanel columns, each stored K rows deep, so that a kernel streams one
// panel contiguously while it keeps a block of output rows in registers.
// On amd64 with AVX2 and FMA the kernel is written in assembly
// (usegemm_amd64.s) and handles useRowBlock rows at a time; elsewhere a
// portable Go kernel computes the same sums in the same order.

// usePanel is the panel width: N must be a multiple of it.
const usePanel = 16

// useMat is a K×N matrix packed in column panels.
type useMat struct {
	k, n   int
	panels []float32 // panel p holds W[0:K][p*16:(p+1)*16], row by row
}

// newUSEMat packs the row-major k×n matrix w.
func newUSEMat(w []float32, k, n int) *useMat {
	m := &useMat{k: k, n: n, panels: make([]float32, k*n)}
	m.pack(w, k, n, n)
	return m
}

// pack fills m (already sized for k×n) from the row-major matrix w whose
// rows are ld elements apart.
func (m *useMat) pack(w []float32, k, n, ld int) {
	for p := 0; p < n/usePanel; p++ {
		dst := m.panels[p*k*usePanel : (p+1)*k*usePanel]
		for kk := 0; kk < k; kk++ {
			copy(dst[kk*usePanel:(kk+1)*usePanel], w[kk*ld+p*usePanel:kk*ld+(p+1)*usePanel])
		}
	}
}

// useZeroBias is the bias of products without one.
var useZeroBias [1536]float32

// useGemm computes, for r < rows and j < b.n,
//
//	c[r*ldc+j] = bias[j] + Σ_k a[r*lda+k]·B[k][j]  (+ c[r*ldc+j] when add)
//
// With the assembly kernel, rows must be a multiple of useRowBlock; the
// caller pads its buffers so that they are. bias may be nil.
func useGemm(c []float32, ldc int, a []float32, lda int, rows int, b *useMat, bias []float32, add bool) {
	k, n := b.k, b.n
	if bias == nil {
		bias = useZeroBias[:n]
	}
	if n%usePanel != 0 || len(bias) < n || rows < 0 ||
		(rows > 0 && (len(a) < (rows-1)*lda+k || len(c) < (rows-1)*ldc+n)) {
		panic(fmt.Sprintf("embed: useGemm: bad shapes rows=%d k=%d n=%d lda=%d ldc=%d len(a)=%d len(c)=%d",
			rows, k, n, lda, ldc, len(a), len(c)))
	}
	if rows == 0 {
		return
	}
	if useHaveSIMD {
		if rows%useRowBlock != 0 {
			panic("embed: useGemm: rows not a multiple of the row block")
		}
		useGemmSIMD(c, ldc, a, lda, rows, b, bias, add)
		return
	}
	useGemmGo(c, ldc, a, lda, rows, b, bias, add)
}

// useGemmGo is the portable kernel.
func useGemmGo(c []float32, ldc int, a []float32, lda int, rows int, b *useMat, bias []float32, add bool) {
	k := b.k
	for p := 0; p < b.n/usePanel; p++ {
		panel := b.panels[p*k*usePanel : (p+1)*k*usePanel]
		j0 := p * usePanel
		for r := 0; r < rows; r++ {
			var acc [usePanel]float32
			copy(acc[:], bias[j0:j0+usePanel])
			ar := a[r*lda : r*lda+k]
			for kk, av := range ar {
				w := panel[kk*usePanel : kk*usePanel+usePanel : kk*usePanel+usePanel]
				acc[0] += av * w[0]
				acc[1] += av * w[1]
				acc[2] += av * w[2]
				acc[3] += av * w[3]
				acc[4] += av * w[4]
				acc[5] += av * w[5]
				acc[6] += av * w[6]
				acc[7] += av * w[7]
				acc[8] += av * w[8]
				acc[9] += av * w[9]
				acc[10] += av * w[10]
				acc[11] += av * w[11]
				acc[12] += av * w[12]
				acc[13] += av * w[13]
				acc[14] += av * w[14]
				acc[15] += av * w[15]
			}
			cr := c[r*ldc+j0 : r*ldc+j0+usePanel]
			if add {
				for i := range acc {
					acc[i] += cr[i]
				}
			}
			copy(cr, acc[:])
		}
	}
}
