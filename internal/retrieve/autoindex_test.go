package retrieve

import "testing"

// TestAutoVectorIndexByScanSize: auto mode keeps the exact index while
// an exact scan reads at most autoScanFloats floats a query (vectors ×
// dimension), so 512-dimensional vectors (the built-in encoder) switch to
// HNSW at 48,829 vectors where 100-dimensional ones stay exact up to
// 250,000; an explicit AutoThreshold wins.
func TestAutoVectorIndexByScanSize(t *testing.T) {
	for _, c := range []struct {
		name      string
		o         Options
		n         int
		wantHNSW  bool
		threshold int
	}{
		{"512-d at the bound", Options{Embedder: hashEmbedder{"m", 512}}, 48_828, false, 48_828},
		{"512-d above", Options{Embedder: hashEmbedder{"m", 512}}, 48_829, true, 48_828},
		{"100-d at 250k", Options{Embedder: hashEmbedder{"m", 100}}, 250_000, false, 250_000},
		{"100-d above", Options{Embedder: hashEmbedder{"m", 100}}, 250_001, true, 250_000},
		{"explicit threshold", Options{Embedder: hashEmbedder{"m", 512}, AutoThreshold: 100_000}, 60_000, false, 100_000},
		{"exact asked", Options{Embedder: hashEmbedder{"m", 512}, Vectors: VectorExact}, 1_000_000, false, 48_828},
		{"dimension not known yet", Options{Embedder: hashEmbedder{"m", 0}}, 250_000, false, 250_000},
	} {
		e := New(c.o)
		if got := e.autoThreshold(); got != c.threshold {
			t.Errorf("%s: threshold %d, want %d", c.name, got, c.threshold)
		}
		if c.o.Embedder.Dim() == 0 {
			continue
		}
		if _, approx := e.newVectorIndex(c.n); approx != c.wantHNSW {
			t.Errorf("%s: %d vectors: HNSW %v, want %v", c.name, c.n, approx, c.wantHNSW)
		}
	}
}
