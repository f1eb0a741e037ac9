package vector

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSearchInMatchesFilteredSearch: scoring a key list equals a full
// search whose allow also requires membership of the list, on both index
// kinds, including keys without a vector and removed keys.
func TestSearchInMatchesFilteredSearch(t *testing.T) {
	const n, dim = 3000, 16
	r := rand.New(rand.NewPCG(11, 12))
	x, h := NewExact(dim), NewHNSW(dim, HNSWConfig{Seed: 3, M: 8, EfConstruction: 64})
	xq := NewExact(dim) // the vectors HNSW holds: quantised
	vecs := make([][]float32, n)
	for i := range n {
		vecs[i] = randomUnit(1, dim, uint64(i))
		x.Add(uint32(i), vecs[i])
		xq.Add(uint32(i), quantized(vecs[i]))
		h.Add(uint32(i), vecs[i])
	}
	for i := 0; i < n; i += 7 {
		x.Remove(uint32(i))
		xq.Remove(uint32(i))
		h.Remove(uint32(i))
	}
	for range 50 {
		var list []uint32
		in := map[uint32]bool{}
		for key := range uint32(n + 20) { // keys past n have no vector
			if r.IntN(20) == 0 {
				list = append(list, key)
				in[key] = true
			}
		}
		allow := func(key uint32) bool { return key%3 != 0 }
		both := func(key uint32) bool { return in[key] && allow(key) }
		q := randomUnit(1, dim, r.Uint64())
		k := 1 + r.IntN(40)
		want, wantq := x.Search(q, k, both), xq.Search(q, k, both)
		if got := x.SearchIn(q, k, list, allow); !slices.Equal(got, want) {
			t.Fatalf("exact SearchIn:\n%v\nwant\n%v", got, want)
		}
		if got := h.SearchIn(q, k, list, allow); !slices.Equal(got, wantq) {
			t.Fatalf("hnsw SearchIn:\n%v\nwant\n%v", got, wantq)
		}
	}
	if got := x.SearchIn(randomUnit(1, dim, 1), 5, nil, nil); len(got) != 0 {
		t.Fatalf("empty list: %v", got)
	}
}

// TestParallelExactScan: a scan long enough to be split returns what a
// single scan returns.
func TestParallelExactScan(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 70k vectors")
	}
	const dim = 8
	n := 4*parallelScanMin + 123
	x := NewExact(dim)
	data := randomUnit(n, dim, 5)
	for i := range n {
		x.Add(uint32(i), row(data, dim, i))
	}
	// Duplicate vectors make exact score ties, broken by key across parts.
	for i := range 50 {
		x.Add(uint32(n+i), row(data, dim, i*97))
	}
	for i := range 10 {
		q := randomUnit(1, dim, uint64(100+i))
		allow := func(key uint32) bool { return key%5 != 1 }
		want := scanTopK(q, 30, dim, x.data, x.keys, allow)
		if got := x.Search(q, 30, allow); !slices.Equal(got, want) {
			t.Fatalf("parallel scan:\n%v\nwant\n%v", got, want)
		}
	}
}

func TestKeyIndex(t *testing.T) {
	var m keyIndex
	want := map[uint32]uint32{}
	r := rand.New(rand.NewPCG(1, 1))
	for range 5000 {
		k := uint32(r.IntN(3000))
		switch r.IntN(3) {
		case 0:
			m.del(k)
			delete(want, k)
		default:
			v := r.Uint32() >> 1
			m.set(k, v)
			want[k] = v
		}
	}
	if m.len() != len(want) {
		t.Fatalf("len %d, want %d", m.len(), len(want))
	}
	for k := range uint32(5000) {
		v, ok := m.get(k)
		if w, wok := want[k]; ok != wok || v != w {
			t.Fatalf("key %d: %d %v, want %d %v", k, v, ok, w, wok)
		}
	}
}
