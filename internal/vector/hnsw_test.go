package vector

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// The shared fixture: 20,000 clustered 64-d vectors (100 Gaussian clusters,
// noise 1.0 relative to the unit centroids, normalised) in an HNSW index
// with the default configuration and in an Exact index, plus 200 held-out
// queries from the same mixture. Built once; tests that change an index
// build their own.
const (
	fixN, fixDim, fixQueries = 20000, 64, 200
)

var fixture = sync.OnceValue(func() *testFixture {
	m := newMixture(fixDim, 100, 1.0, 1)
	f := &testFixture{data: m.sample(fixN, 2), queries: m.sample(fixQueries, 3)}
	f.exact = NewExact(fixDim)
	f.hnsw = NewHNSW(fixDim, HNSWConfig{Seed: 1})
	start := time.Now()
	for i := range fixN {
		v := row(f.data, fixDim, i)
		f.hnsw.Add(uint32(i), v)
		f.exact.Add(uint32(i), v)
	}
	f.build = time.Since(start)
	return f
})

type testFixture struct {
	data, queries []float32
	exact         *Exact
	hnsw          *HNSW
	build         time.Duration
}

func (f *testFixture) query(i int) []float32 { return row(f.queries, fixDim, i) }

// recall returns the mean recall@k of idx against f.exact over the queries.
func (f *testFixture) recall(t testing.TB, idx *HNSW, k int, allow Allow) float64 {
	hit, total := 0, 0
	for i := range fixQueries {
		q := f.query(i)
		got := idx.Search(q, k, allow)
		want := f.exact.Search(q, k, allow)
		for _, g := range got {
			if allow != nil && !allow(g.Key) {
				t.Fatalf("query %d: disallowed key %d returned", i, g.Key)
			}
		}
		for j := 1; j < len(got); j++ {
			if worse(got[j-1], got[j]) {
				t.Fatalf("query %d: results out of order: %v", i, got)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("query %d: %d hits, exact has %d", i, len(got), len(want))
		}
		a, b := recallAt(got, want)
		hit += a
		total += b
	}
	return float64(hit) / float64(total)
}

func TestHNSWRecall(t *testing.T) {
	f := fixture()
	t.Logf("built %d×%d-d in %v", fixN, fixDim, f.build)
	if f.hnsw.Len() != fixN || f.hnsw.Deleted() != 0 || f.hnsw.Dim() != fixDim {
		t.Fatalf("Len/Deleted/Dim = %d/%d/%d", f.hnsw.Len(), f.hnsw.Deleted(), f.hnsw.Dim())
	}
	r := f.recall(t, f.hnsw, 10, nil)
	t.Logf("recall@10 = %.4f (ef 64, default config, %d queries)", r, fixQueries)
	if r < 0.95 {
		t.Fatalf("recall@10 = %.4f, want >= 0.95", r)
	}
}

func TestHNSWAllow(t *testing.T) {
	f := fixture()
	// With 20,000 nodes the widening cap is 78 (n/256), so at ef 64 any
	// shortfall goes straight to the exact scan. A clone searched at ef 16
	// exercises the widened beam too.
	var buf bytes.Buffer
	if _, err := f.hnsw.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	narrow, err := ReadHNSW(&buf)
	if err != nil {
		t.Fatal(err)
	}
	narrow.SetEfSearch(16)
	for _, c := range []struct {
		name      string
		idx       *HNSW
		allow     Allow
		minRecall float64
		widen     bool // the widened beam must suffice for most queries
	}{
		{"1%", f.hnsw, func(k uint32) bool { return k%100 == 37 }, 0.95, false},
		{"5%", f.hnsw, func(k uint32) bool { return k%20 == 3 }, 0.95, false},
		{"30%", f.hnsw, func(k uint32) bool { return k%10 < 3 }, 0.95, false},
		{"one key", f.hnsw, func(k uint32) bool { return k == 12345 }, 1, false},
		{"none", f.hnsw, func(k uint32) bool { return false }, 1, false},
		{"50% at ef 16", narrow, func(k uint32) bool { return k%2 == 0 }, 0.95, true},
	} {
		w0, s0 := c.idx.widened.Load(), c.idx.scanned.Load()
		r := f.recall(t, c.idx, 10, c.allow)
		if c.name == "none" {
			r = 1 // no hits to recall; f.recall checked that none came back
		}
		widened, scanned := c.idx.widened.Load()-w0, c.idx.scanned.Load()-s0
		t.Logf("allow %s: recall@10 = %.4f (%d queries: %d beam widenings, %d exact scans)", c.name, r, fixQueries, widened, scanned)
		if r < c.minRecall {
			t.Errorf("allow %s: recall@10 = %.4f, want >= %.2f", c.name, r, c.minRecall)
		}
		if c.widen && (widened < fixQueries/2 || scanned > fixQueries/4) {
			t.Errorf("allow %s: expected the widened beam to suffice", c.name)
		}
	}
}

func TestHNSWSmall(t *testing.T) {
	h := NewHNSW(3, HNSWConfig{})
	q := []float32{1, 0, 0}
	if got := h.Search(q, 5, nil); got != nil || h.Len() != 0 {
		t.Fatalf("empty: %v", got)
	}
	h.Add(4, []float32{0, 1, 0})
	if got := h.Search(q, 5, nil); len(got) != 1 || got[0].Key != 4 {
		t.Fatalf("one node: %v", got)
	}
	h.Add(2, []float32{1, 0, 0})
	h.Add(9, []float32{0.6, 0.8, 0})
	// Scores are those of the quantised vectors: 0.6 is not a multiple of
	// a power of two.
	if got := h.Search(q, 10, nil); !slices.Equal(got, []Hit{{2, 1}, {9, dot(q, quantized([]float32{0.6, 0.8, 0}))}, {4, 0}}) {
		t.Fatalf("three nodes: %v", got)
	}
	if got := h.Search(q, 0, nil); got != nil {
		t.Fatalf("k=0: %v", got)
	}
	h.Remove(2)
	h.Remove(4)
	h.Remove(9)
	if got := h.Search(q, 10, nil); got != nil || h.Len() != 0 || h.Deleted() != 3 {
		t.Fatalf("all removed: %v Len %d Deleted %d", got, h.Len(), h.Deleted())
	}
	h.Add(2, []float32{0, 0, 1})
	if got := h.Search(q, 10, nil); len(got) != 1 || got[0].Key != 2 || got[0].Score != 0 {
		t.Fatalf("re-added: %v", got)
	}
}

func TestHNSWRemoveReplace(t *testing.T) {
	const n, dim = 3000, 32
	m := newMixture(dim, 30, 1.0, 51)
	data := m.sample(n, 52)
	h := NewHNSW(dim, HNSWConfig{M: 8, EfConstruction: 64, Seed: 5})
	x := NewExact(dim)
	for i := range n {
		h.Add(uint32(i), row(data, dim, i))
		x.Add(uint32(i), row(data, dim, i))
	}
	q := m.sample(1, 53)
	top := x.Search(q, 20, nil)
	for _, hit := range top[:10] {
		h.Remove(hit.Key)
		x.Remove(hit.Key)
	}
	h.Remove(top[0].Key) // twice: no-op
	if h.Len() != n-10 || h.Deleted() != 10 {
		t.Fatalf("Len %d Deleted %d", h.Len(), h.Deleted())
	}
	if _, ok := h.Vector(top[0].Key); ok {
		t.Fatal("removed key still has a vector")
	}
	got := h.Search(q, 10, nil)
	if a, b := recallAt(got, x.Search(q, 10, nil)); a < 9 {
		t.Fatalf("after removing the top 10: recall %d/%d: %v", a, b, got)
	}
	for _, g := range got {
		for _, r := range top[:10] {
			if g.Key == r.Key {
				t.Fatalf("removed key %d returned", g.Key)
			}
		}
	}
	// Replace: a key moved onto the query becomes the best hit; the old
	// node is a tombstone.
	h.Add(top[15].Key, q)
	x.Add(top[15].Key, q)
	if h.Len() != n-10 || h.Deleted() != 11 {
		t.Fatalf("after replace: Len %d Deleted %d", h.Len(), h.Deleted())
	}
	if v, ok := h.Vector(top[15].Key); !ok || !slices.Equal(v, quantized(q)) {
		t.Fatal("Vector does not return the replacement")
	}
	got = h.Search(q, 10, nil)
	if got[0].Key != top[15].Key {
		t.Fatalf("replaced key not first: %v", got)
	}
	if seen := countKey(got, top[15].Key); seen != 1 {
		t.Fatalf("replaced key returned %d times", seen)
	}
	// Re-adding the same vector changes nothing.
	h.Add(top[15].Key, q)
	if h.Deleted() != 11 {
		t.Fatalf("identical re-add made a tombstone")
	}
	// Re-add a removed key.
	h.Add(top[0].Key, row(data, dim, int(top[0].Key)))
	if h.Len() != n-9 || countKey(h.Search(q, 20, nil), top[0].Key) != 1 {
		t.Fatal("re-added key not found once")
	}
	// Remove most of the index: tombstones everywhere, searches still
	// return the live nodes.
	for i := range n {
		if i%10 != 0 {
			h.Remove(uint32(i))
			x.Remove(uint32(i))
		}
	}
	x.Add(top[0].Key, row(data, dim, int(top[0].Key)))
	x.Remove(top[15].Key)
	h.Remove(top[15].Key)
	for i := range 20 {
		q := m.sample(1, uint64(100+i))
		got, want := h.Search(q, 10, nil), x.Search(q, 10, nil)
		if a, _ := recallAt(got, want); a < 9 || len(got) != 10 {
			t.Fatalf("90%% deleted, query %d: %d/10 (%d hits)", i, a, len(got))
		}
	}
}

func countKey(h []Hit, key uint32) int {
	n := 0
	for _, x := range h {
		if x.Key == key {
			n++
		}
	}
	return n
}

// TestHNSWDeterministic: the same seed and inserts give the same graph.
func TestHNSWDeterministic(t *testing.T) {
	const n, dim = 2000, 16
	data := newMixture(dim, 20, 1.0, 61).sample(n, 62)
	snap := func() []byte {
		h := NewHNSW(dim, HNSWConfig{M: 8, EfConstruction: 40, Seed: 42})
		for i := range n {
			h.Add(uint32(i), row(data, dim, i))
		}
		var b bytes.Buffer
		if _, err := h.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	if !bytes.Equal(snap(), snap()) {
		t.Fatal("two builds with the same seed differ")
	}
}

func TestHNSWSnapshot(t *testing.T) {
	f := fixture()
	var buf bytes.Buffer
	n, err := f.hnsw.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v (buffer %d)", n, err, buf.Len())
	}
	g, err := ReadHNSW(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != f.hnsw.Len() || g.Dim() != fixDim || g.Deleted() != 0 {
		t.Fatalf("restored Len %d Dim %d Deleted %d", g.Len(), g.Dim(), g.Deleted())
	}
	allow := func(k uint32) bool { return k%7 == 0 }
	for i := range fixQueries {
		q := f.query(i)
		if a, b := f.hnsw.Search(q, 10, nil), g.Search(q, 10, nil); !slices.Equal(a, b) {
			t.Fatalf("query %d differs after round trip:\n%v\n%v", i, a, b)
		}
		if a, b := f.hnsw.Search(q, 10, allow), g.Search(q, 10, allow); !slices.Equal(a, b) {
			t.Fatalf("filtered query %d differs after round trip", i)
		}
	}
	if v, ok := g.Vector(123); !ok || !slices.Equal(v, quantized(row(f.data, fixDim, 123))) {
		t.Fatal("restored vector differs")
	}
}

// TestHNSWSnapshotContinues: a restored index (tombstones, generator state)
// keeps building exactly the graph the original would have.
func TestHNSWSnapshotContinues(t *testing.T) {
	const n, dim = 1500, 16
	data := newMixture(dim, 10, 1.0, 71).sample(n, 72)
	a := NewHNSW(dim, HNSWConfig{M: 6, EfConstruction: 30, EfSearch: 20, Seed: 9})
	for i := range n / 2 {
		a.Add(uint32(i), row(data, dim, i))
	}
	for i := 0; i < n/2; i += 9 {
		a.Remove(uint32(i))
	}
	a.Add(5, row(data, dim, 1000)) // replacement tombstone
	var buf bytes.Buffer
	if _, err := a.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	snap := buf.Bytes()
	b, err := ReadHNSW(bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	if b.Deleted() != a.Deleted() || b.Len() != a.Len() {
		t.Fatalf("restored Deleted %d Len %d, want %d %d", b.Deleted(), b.Len(), a.Deleted(), a.Len())
	}
	for i := n / 2; i < n; i++ {
		a.Add(uint32(i), row(data, dim, i))
		b.Add(uint32(i), row(data, dim, i))
	}
	var sa, sb bytes.Buffer
	a.WriteTo(&sa)
	b.WriteTo(&sb)
	if !bytes.Equal(sa.Bytes(), sb.Bytes()) {
		t.Fatal("restored index built a different graph")
	}
	checkCorruption(t, snap, func(p []byte) error { _, err := ReadHNSW(bytes.NewReader(p)); return err })

	// A snapshot can be followed by other data in the same stream.
	buf.Reset()
	a.WriteTo(&buf)
	buf.WriteString("trailer")
	if _, err := ReadHNSW(&buf); err != nil || buf.String() != "trailer" {
		t.Fatalf("embedded snapshot: %v, rest %q", err, buf.String())
	}
	// Empty index.
	buf.Reset()
	NewHNSW(4, HNSWConfig{}).WriteTo(&buf)
	if e, err := ReadHNSW(&buf); err != nil || e.Len() != 0 || e.Search([]float32{1, 0, 0, 0}, 3, nil) != nil {
		t.Fatalf("empty round trip: %v", err)
	}
	// An Exact snapshot is not an HNSW one.
	buf.Reset()
	NewExact(4).WriteTo(&buf)
	if _, err := ReadHNSW(&buf); err == nil {
		t.Fatal("ReadHNSW accepted an Exact snapshot")
	}
}

// FuzzReadHNSW: arbitrary bytes must give an error or a usable index, never
// a panic. Each input is tried twice: as a raw stream (which the checksums
// almost always reject) and as the payload of a correctly framed and
// checksummed snapshot, which exercises the decoder's structural checks.
// `go test` runs the seeds; `go test -fuzz FuzzReadHNSW` explores.
func FuzzReadHNSW(f *testing.F) {
	const dim = 4
	h := NewHNSW(dim, HNSWConfig{M: 2, EfConstruction: 4})
	data := randomUnit(40, dim, 81)
	for i := range 40 {
		h.Add(uint32(i), row(data, dim, i))
	}
	h.Remove(3)
	h.Add(5, row(data, dim, 6))
	var buf bytes.Buffer
	h.WriteTo(&buf)
	snap := buf.Bytes()
	payload := snapshotPayload(f, snap)
	if _, err := ReadHNSW(bytes.NewReader(framed(magicHNSW, payload))); err != nil {
		f.Fatalf("re-framed payload: %v", err)
	}
	f.Add(snap)
	f.Add(snap[:len(snap)/2])
	f.Add(payload)
	f.Add(payload[:len(payload)-7])
	f.Add([]byte("MGVHNSW\x00\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, in := range [][]byte{b, framed(magicHNSW, b)} {
			g, err := ReadHNSW(bytes.NewReader(in))
			if err != nil {
				continue
			}
			if g.Dim() == dim {
				q := row(data, dim, 0)
				g.Search(q, 5, nil)
				g.Search(q, 5, func(k uint32) bool { return k%2 == 0 })
				g.Add(1000, row(data, dim, 1))
				g.Remove(1)
				g.Search(q, 50, nil)
			}
		}
	})
}

// framed wraps a payload into a well-formed snapshot stream.
func framed(magic [8]byte, payload []byte) []byte {
	var buf bytes.Buffer
	version := uint32(snapshotVersion)
	if magic == magicHNSW {
		version = hnswVersion
	}
	fw := newFrameWriter(&buf, magic, version)
	fw.bytesRaw(payload)
	fw.close()
	return buf.Bytes()
}

// snapshotPayload returns the concatenated frame payloads of a snapshot.
func snapshotPayload(t testing.TB, snap []byte) []byte {
	fr, _, err := newFrameReader(bytes.NewReader(snap), [8]byte(snap[:8]), 1, hnswVersion)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for {
		b, err := fr.avail()
		if err != nil {
			if fr.ended {
				return out
			}
			t.Fatal(err)
		}
		out = append(out, b...)
		fr.pos = len(fr.buf)
	}
}

// TestConcurrentSearchAdd runs searches on several goroutines while another
// adds, replaces and removes; run it with -race.
func TestConcurrentSearchAdd(t *testing.T) {
	const n, dim = 2000, 16
	m := newMixture(dim, 20, 1.0, 91)
	data := m.sample(2*n, 92)
	queries := m.sample(50, 93)
	h := NewHNSW(dim, HNSWConfig{M: 8, EfConstruction: 40, Seed: 3})
	x := NewExact(dim)
	for i := range n {
		h.Add(uint32(i), row(data, dim, i))
		x.Add(uint32(i), row(data, dim, i))
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				q := row(queries, dim, (i+g)%50)
				var allow Allow
				if i%3 == 0 {
					allow = func(k uint32) bool { return k%5 == 0 }
				}
				for _, res := range [][]Hit{h.Search(q, 10, allow), x.Search(q, 10, allow)} {
					if len(res) != 10 {
						errs <- fmt.Errorf("got %d hits", len(res))
						return
					}
				}
				if i%10 == 0 {
					h.Vector(uint32(i % n))
					x.Vector(uint32(i % n))
					_ = h.Len() + h.Deleted() + x.Len()
				}
			}
		}()
	}
	for i := n; i < 2*n; i++ {
		v := row(data, dim, i)
		h.Add(uint32(i), v)
		x.Add(uint32(i), v)
		if i%4 == 0 {
			h.Remove(uint32(i - n))
			x.Remove(uint32(i - n))
		}
		if i%7 == 0 {
			h.Add(uint32(i-n+1), v) // replace
			x.Add(uint32(i-n+1), v)
		}
		if i%500 == 0 {
			h.SetEfSearch(32 + i%64)
			var b bytes.Buffer
			h.WriteTo(&b)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if h.Len() != x.Len() {
		t.Fatalf("Len: hnsw %d exact %d", h.Len(), x.Len())
	}
}
