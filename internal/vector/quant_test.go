package vector

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"testing"
)

// quantized returns v as the HNSW index stores it.
func quantized(v []float32) []float32 {
	k := make([]int16, len(v))
	out := make([]float32, len(v))
	dequantize(k, quantize(v, k), out)
	return out
}

// TestQuantize: the rounding error is within half the scale, the scale is
// the smallest power of two that fits, and the quantised kernels score
// bit-identically to the float32 kernels over the dequantised vectors.
func TestQuantize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		dim := 1 + r.IntN(130)
		v := make([]float32, dim)
		mag := math.Ldexp(1, r.IntN(60)-30)
		for j := range v {
			v[j] = float32(r.NormFloat64() * mag)
			if r.IntN(20) == 0 {
				v[j] = 0
			}
		}
		k := make([]int16, dim)
		s := quantize(v, k)
		if _, e := math.Frexp(float64(s)); math.Ldexp(0.5, e) != float64(s) {
			t.Fatalf("scale %v is not a power of two", s)
		}
		m := 0.0
		for j, x := range v {
			if err := math.Abs(float64(x) - float64(k[j])*float64(s)); err > float64(s)/2 {
				t.Fatalf("element %d: %v stored as %d·%v", j, x, k[j], s)
			}
			m = max(m, math.Abs(float64(x)))
		}
		if m > 0 && math.Round(m/float64(s)*2) <= quantMax {
			t.Fatalf("scale %v not the smallest for max %v", s, m)
		}
		q := make([]float32, dim)
		for j := range q {
			q[j] = float32(r.NormFloat64())
		}
		dq := make([]float32, dim)
		dequantize(k, s, dq)
		if a, b := dotq(q, k)*s, dot(q, dq); math.Float32bits(a) != math.Float32bits(b) {
			t.Fatalf("round %d: dotq·s %v, dot over the dequantised vector %v", i, a, b)
		}
		a0, a1, a2, a3 := dot4q(q, k, k, k, k)
		if a0 != dotq(q, k) || a1 != a0 || a2 != a0 || a3 != a0 {
			t.Fatal("dot4q differs from dotq")
		}
	}
	k := make([]int16, 3)
	if s := quantize([]float32{0, 0, 0}, k); s != 1 || k[0]|k[1]|k[2] != 0 {
		t.Fatalf("zero vector: %v %v", s, k)
	}
	if quantize([]float32{float32(math.NaN()), float32(math.Inf(1)), 1}, k); k[0] != 0 || k[1] != 0 || k[2] == 0 {
		t.Fatalf("non-finite values: %v", k)
	}
}

// TestHNSWSnapshotV1: a snapshot of the first format (float32 vectors) is
// read, its vectors quantised: searches answer as the index that wrote it
// (whose vectors were these, quantised).
func TestHNSWSnapshotV1(t *testing.T) {
	const n, dim = 1500, 24
	data := newMixture(dim, 10, 1.0, 71).sample(n, 72)
	h := NewHNSW(dim, HNSWConfig{M: 8, EfConstruction: 40, Seed: 9})
	for i := range n {
		h.Add(uint32(i), row(data, dim, i))
	}
	h.Remove(7)
	var buf bytes.Buffer
	writeHNSWv1(h, &buf)
	g, err := ReadHNSW(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if _, err := g.WriteTo(&again); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := h.WriteTo(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), want.Bytes()) {
		t.Fatal("a version 1 snapshot does not restore the index that wrote it")
	}
}

// writeHNSWv1 writes h in the version 1 format (float32 vectors).
func writeHNSWv1(h *HNSW, w io.Writer) {
	rng, _ := h.pcg.MarshalBinary()
	f := newFrameWriter(w, magicHNSW, 1)
	for _, v := range []int{h.dim, h.m, h.efC, h.efSearch} {
		f.u32(uint32(v))
	}
	f.u64(uint64(h.seed))
	f.u32(uint32(h.n))
	f.u32(uint32(h.nDeleted))
	f.u32(h.entry)
	f.u32(uint32(h.maxLevel))
	f.bytes(rng)
	v := make([]float32, h.dim)
	for i := 0; i < h.n; i++ {
		id := uint32(i)
		f.u32(h.keys[id])
		f.u8(h.levels[id])
		if h.deleted[id] {
			f.u8(1)
		} else {
			f.u8(0)
		}
		h.decode(id, v)
		f.f32s(v)
		for l := 0; l <= int(h.levels[id]); l++ {
			nb := h.neighbors(id, l)
			f.u32(uint32(len(nb)))
			f.u32s(nb)
		}
	}
	f.close()
}
