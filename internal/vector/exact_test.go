package vector

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveTopK ranks every (key, vector) pair by a full sort.
func naiveTopK(q []float32, keys []uint32, vecs [][]float32, k int, allow Allow) []Hit {
	var all []Hit
	for i, key := range keys {
		if allow != nil && !allow(key) {
			continue
		}
		// The scores come from the shared kernel (checked on its own by
		// TestDotMatchesScalar); what is under test is the selection.
		all = append(all, Hit{Key: key, Score: dot(q, vecs[i])})
	}
	slices.SortFunc(all, func(a, b Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	if len(all) > k {
		all = all[:k]
	}
	return all
}

func TestDotMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for dim := 1; dim <= 67; dim++ {
		a, b := make([]float32, dim), make([]float32, dim)
		var want float64
		for i := range a {
			a[i], b[i] = r.Float32()*2-1, r.Float32()*2-1
			want += float64(a[i]) * float64(b[i])
		}
		got := float64(dot(a, b))
		if d := got - want; d > 1e-5 || d < -1e-5 {
			t.Fatalf("dim %d: dot = %v, want %v", dim, got, want)
		}
	}
}

// TestDotKernelsAgree: dot4 must be bit-identical to dot, or a vector's
// score would depend on which batch it was scored in.
func TestDotKernelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for dim := 1; dim <= 131; dim++ {
		v := make([][]float32, 5)
		for i := range v {
			v[i] = make([]float32, dim)
			for j := range v[i] {
				v[i][j] = float32(r.NormFloat64())
			}
		}
		s0, s1, s2, s3 := dot4(v[0], v[1], v[2], v[3], v[4])
		for i, got := range []float32{s0, s1, s2, s3} {
			if want := dot(v[0], v[i+1]); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("dim %d vector %d: dot4 %v, dot %v", dim, i, got, want)
			}
		}
	}
}

func TestExactMatchesNaiveSort(t *testing.T) {
	const n, dim = 3000, 24
	data := randomUnit(n, dim, 11)
	r := rand.New(rand.NewPCG(1, 2))
	x := NewExact(dim)
	keys := make([]uint32, n)
	vecs := make([][]float32, n)
	for i, p := range r.Perm(n) { // keys are not in slot order
		keys[i] = uint32(p * 3)
		vecs[i] = row(data, dim, i)
		x.Add(keys[i], vecs[i])
	}
	if x.Len() != n || x.Dim() != dim {
		t.Fatalf("Len/Dim = %d/%d", x.Len(), x.Dim())
	}
	queries := randomUnit(20, dim, 12)
	allowOdd := func(k uint32) bool { return k%2 == 1 }
	for qi := range 20 {
		q := row(queries, dim, qi)
		for _, k := range []int{1, 10, 100, n, n + 5} {
			for _, allow := range []Allow{nil, allowOdd} {
				got := x.Search(q, k, allow)
				want := naiveTopK(q, keys, vecs, k, allow)
				if !slices.Equal(got, want) {
					t.Fatalf("query %d k=%d: got %d hits %v..., want %d %v...", qi, k, len(got), head(got), len(want), head(want))
				}
			}
		}
	}
	if got := x.Search(row(queries, dim, 0), 0, nil); got != nil {
		t.Fatalf("k=0 gave %v", got)
	}
}

func head(h []Hit) []Hit { return h[:min(len(h), 3)] }

// TestExactTiesAndOrderIndependence inserts the same vectors, many of them
// duplicated under several keys, in two different orders (with removes in
// between) and expects identical rankings, ties broken by the smaller key.
func TestExactTiesAndOrderIndependence(t *testing.T) {
	const distinct, copies, dim = 50, 4, 16
	base := randomUnit(distinct, dim, 21)
	type item struct {
		key uint32
		v   []float32
	}
	var items []item
	for c := range copies {
		for i := range distinct {
			items = append(items, item{uint32(c*1000 + i), row(base, dim, i)})
		}
	}
	build := func(order []int) *Exact {
		x := NewExact(dim)
		for _, i := range order {
			x.Add(items[i].key, items[i].v)
		}
		// Churn: remove and re-add a few so slots move.
		for _, i := range order[:20] {
			x.Remove(items[i].key)
		}
		for _, i := range order[:20] {
			x.Add(items[i].key, items[i].v)
		}
		return x
	}
	r := rand.New(rand.NewPCG(3, 4))
	a := build(r.Perm(len(items)))
	b := build(r.Perm(len(items)))
	queries := randomUnit(30, dim, 22)
	for qi := range 30 {
		q := row(queries, dim, qi)
		ha, hb := a.Search(q, 25, nil), b.Search(q, 25, nil)
		if !slices.Equal(ha, hb) {
			t.Fatalf("query %d: rankings differ across insertion orders:\n%v\n%v", qi, ha, hb)
		}
		for i := 1; i < len(ha); i++ {
			if ha[i-1].Score < ha[i].Score || (ha[i-1].Score == ha[i].Score && ha[i-1].Key > ha[i].Key) {
				t.Fatalf("query %d: not ordered at %d: %v", qi, i, ha)
			}
		}
		// The best vector is held under `copies` keys: they come first,
		// smallest key first.
		for c := 1; c < copies; c++ {
			if ha[c].Score != ha[0].Score || ha[c].Key != ha[0].Key+uint32(c*1000) {
				t.Fatalf("query %d: tie order %v", qi, ha[:copies])
			}
		}
	}
	// Exact ties of zero scores: a query orthogonal to everything.
	x := NewExact(2)
	for _, k := range []uint32{9, 3, 7, 1} {
		x.Add(k, []float32{0, 1})
	}
	got := x.Search([]float32{1, 0}, 3, nil)
	if want := []Hit{{1, 0}, {3, 0}, {7, 0}}; !slices.Equal(got, want) {
		t.Fatalf("zero ties: got %v want %v", got, want)
	}
}

func TestExactAllow(t *testing.T) {
	const n, dim = 1000, 8
	data := randomUnit(n, dim, 31)
	x := NewExact(dim)
	for i := range n {
		x.Add(uint32(i), row(data, dim, i))
	}
	q := row(data, dim, 0)
	calls := 0
	got := x.Search(q, 10, func(k uint32) bool { calls++; return k%100 == 42 })
	if len(got) != 10 || calls != n {
		t.Fatalf("got %d hits with %d allow calls", len(got), calls)
	}
	for _, h := range got {
		if h.Key%100 != 42 {
			t.Fatalf("disallowed key %d returned", h.Key)
		}
	}
	if got := x.Search(q, 10, func(uint32) bool { return false }); len(got) != 0 {
		t.Fatalf("allow-none returned %v", got)
	}
	if got := x.Search(q, 10, func(k uint32) bool { return k == 5 }); len(got) != 1 || got[0].Key != 5 {
		t.Fatalf("single allowed key: %v", got)
	}
}

func TestExactRemoveReplace(t *testing.T) {
	x := NewExact(2)
	v := []float32{1, 0}
	x.Add(1, v)
	v[0] = 9 // Add copied
	x.Add(2, []float32{0, 1})
	x.Add(3, []float32{0.6, 0.8})
	if got, _ := x.Vector(1); got[0] != 1 {
		t.Fatalf("Add did not copy: %v", got)
	}
	got, _ := x.Vector(1)
	got[0] = 5 // Vector returns a copy
	if again, _ := x.Vector(1); again[0] != 1 {
		t.Fatal("Vector exposed storage")
	}
	q := []float32{1, 0}
	if h := x.Search(q, 1, nil); h[0].Key != 1 {
		t.Fatalf("top = %v", h)
	}
	x.Add(1, []float32{0, 1}) // replace
	if x.Len() != 3 {
		t.Fatalf("replace changed Len to %d", x.Len())
	}
	if h := x.Search(q, 3, nil); h[0].Key != 3 || h[1].Key != 1 || h[2].Key != 2 {
		t.Fatalf("after replace: %v", h)
	}
	x.Remove(1) // middle of the storage: slot 2 moves into its hole
	x.Remove(1) // absent: no-op
	x.Remove(99)
	if x.Len() != 2 {
		t.Fatalf("Len = %d", x.Len())
	}
	if _, ok := x.Vector(1); ok {
		t.Fatal("removed key still has a vector")
	}
	if v, ok := x.Vector(3); !ok || v[0] != 0.6 {
		t.Fatalf("moved vector = %v %v", v, ok)
	}
	if h := x.Search(q, 5, nil); len(h) != 2 || h[0].Key != 3 || h[1].Key != 2 {
		t.Fatalf("after remove: %v", h)
	}
	x.Remove(3)
	x.Remove(2)
	if h := x.Search(q, 5, nil); len(h) != 0 || x.Len() != 0 {
		t.Fatalf("empty index returned %v", h)
	}
	x.Add(7, []float32{1, 0})
	if h := x.Search(q, 5, nil); len(h) != 1 || h[0].Key != 7 {
		t.Fatalf("re-add: %v", h)
	}
}

func TestDimMismatchPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"exact add":    func() { NewExact(3).Add(1, []float32{1}) },
		"exact search": func() { NewExact(3).Search([]float32{1}, 1, nil) },
		"hnsw add":     func() { NewHNSW(3, HNSWConfig{}).Add(1, []float32{1}) },
		"hnsw search":  func() { NewHNSW(3, HNSWConfig{}).Search([]float32{1}, 1, nil) },
		"bad dim":      func() { NewExact(0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestExactSnapshot(t *testing.T) {
	const n, dim = 500, 12
	data := randomUnit(n, dim, 41)
	x := NewExact(dim)
	for i := range n {
		x.Add(uint32(i*7), row(data, dim, i))
	}
	x.Remove(14)
	var buf bytes.Buffer
	wn, err := x.WriteTo(&buf)
	if err != nil || wn != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v (buffer %d)", wn, err, buf.Len())
	}
	snap := buf.Bytes()
	y, err := ReadExact(bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	if y.Len() != x.Len() || y.Dim() != dim {
		t.Fatalf("restored Len/Dim %d/%d", y.Len(), y.Dim())
	}
	queries := randomUnit(10, dim, 42)
	for qi := range 10 {
		q := row(queries, dim, qi)
		if a, b := x.Search(q, 20, nil), y.Search(q, 20, nil); !slices.Equal(a, b) {
			t.Fatalf("query %d differs after round trip", qi)
		}
	}
	checkCorruption(t, snap, func(b []byte) error { _, err := ReadExact(bytes.NewReader(b)); return err })
	// An empty index round-trips too.
	buf.Reset()
	if _, err := NewExact(3).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if e, err := ReadExact(&buf); err != nil || e.Len() != 0 || e.Dim() != 3 {
		t.Fatalf("empty round trip: %v %v", e, err)
	}
}

// checkCorruption feeds read every truncation of a snapshot at a spread of
// lengths and a few hundred single-byte corruptions; each must fail with an
// error wrapping ErrCorrupt (a panic fails the test).
func checkCorruption(t *testing.T, snap []byte, read func([]byte) error) {
	t.Helper()
	if err := read(snap); err != nil {
		t.Fatalf("intact snapshot: %v", err)
	}
	check := func(what string, b []byte) {
		t.Helper()
		err := read(b)
		if err == nil {
			t.Fatalf("%s: accepted", what)
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: error %v does not wrap ErrCorrupt", what, err)
		}
	}
	cuts := []int{0, 1, 7, 8, 11, 12, 13, 19, 20, 21, len(snap) - 9, len(snap) - 8, len(snap) - 5, len(snap) - 1}
	for i := 1; i < 64; i++ {
		cuts = append(cuts, len(snap)*i/64)
	}
	for _, c := range cuts {
		if c >= 0 && c < len(snap) {
			check("truncated", snap[:c])
		}
	}
	r := rand.New(rand.NewPCG(uint64(len(snap)), 99))
	b := make([]byte, len(snap))
	for range 300 {
		copy(b, snap)
		pos := r.IntN(len(b))
		if r.IntN(4) == 0 {
			pos = r.IntN(min(len(b), 64)) // the headers are small: hit them often
		}
		b[pos] ^= byte(1 + r.IntN(255))
		check("flipped byte", b)
	}
	check("not a snapshot", []byte("hello, world, this is not a vector snapshot"))
}
