package lexical

// Top-k pruning and scoped searches against exhaustive scoring.

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPruningIsExact compares pruned top-k searches with exhaustive scoring
// on a Zipf corpus where most queries mix rare and very common words.
func TestPruningIsExact(t *testing.T) {
	g := newCorpusGen(7)
	ix := New(DefaultOptions())
	const n = 3000
	for k := range n {
		ix.Add(uint32(k), g.doc())
	}
	// Some churn so lists carry tombstones and tails.
	r := rand.New(rand.NewPCG(23, 24))
	for range 600 {
		k := uint32(r.IntN(n))
		if r.IntN(2) == 0 {
			ix.Remove(k)
		} else {
			ix.Add(k, g.doc())
		}
	}
	pruned := 0
	for qi := range 300 {
		terms := Analyze(g.query("zipf"), true)
		var allow Allow
		if qi%4 == 3 {
			allow = func(k uint32) bool { return k%5 != 0 }
		}
		full, st := ix.searchTerms(terms, n, allow, 0)
		if st.pruned != 0 {
			t.Fatalf("k=n must not prune: %+v", st)
		}
		for _, k := range []int{1, 3, 10, 50} {
			top, st := ix.searchTerms(terms, k, allow, 0)
			if st.pruned > 0 {
				pruned++
			}
			if want := full[:min(k, len(full))]; !slices.Equal(top, want) {
				t.Fatalf("%q k=%d: %v, exhaustive %v (%+v)", terms, k, top, want, st)
			}
		}
	}
	if pruned < 100 {
		t.Fatalf("pruning used in only %d of 1200 searches", pruned)
	}
}

// TestScopedMatchesReference: scoped statistics (document frequency over
// the admitted postings, N as given) computed from the definition agree
// with the index, which copies the admitted postings once and searches
// the copies; pruned searches equal the exhaustive one.
func TestScopedMatchesReference(t *testing.T) {
	g := newCorpusGen(9)
	ix := New(DefaultOptions())
	const n = 2000
	docs := map[uint32]string{}
	for k := range uint32(n) {
		docs[k] = g.doc()
		ix.Add(k, docs[k])
	}
	r := rand.New(rand.NewPCG(31, 32))
	for range 400 { // churn: tombstones and unsorted tails
		k := uint32(r.IntN(n + 200))
		if r.IntN(3) == 0 {
			ix.Remove(k)
			delete(docs, k)
		} else {
			docs[k] = g.doc()
			ix.Add(k, docs[k])
		}
	}
	all := newRefCorpus(docs, DefaultOptions())
	for qi := range 200 {
		mod := uint32(2 + qi%7)
		allow := func(k uint32) bool { return k%mod == 0 }
		admitted := 0
		df := map[string]int{}
		for k, tf := range all.toks {
			if allow(k) {
				admitted++
				for term := range tf {
					df[term]++
				}
			}
		}
		terms := Analyze(g.query("zipf"), true)
		full, _ := ix.searchTerms(terms, n+200, allow, admitted)
		// Reference: BM25 with scoped df and N, whole-index average length.
		nn := float64(admitted)
		want := map[uint32]float64{}
		for k, tf := range all.toks {
			if !allow(k) {
				continue
			}
			s, hit := 0.0, false
			for _, term := range slices.Compact(slices.Sorted(slices.Values(terms))) {
				f := float64(tf[term])
				if f == 0 {
					continue
				}
				d := float64(df[term])
				idf := math.Log(1 + (nn-d+0.5)/(d+0.5))
				if idf < negligibleIDF {
					continue
				}
				hit = true
				s += idf * f * 2.2 / (f + 1.2*(0.25+0.75*float64(all.lens[k])/all.avg))
			}
			if hit {
				want[k] = s
			}
		}
		if len(full) != len(want) {
			t.Fatalf("query %q: %d hits, reference %d", terms, len(full), len(want))
		}
		for _, h := range full {
			if w, ok := want[h.Key]; !ok || math.Abs(float64(h.Score)-w) > 1e-4*w {
				t.Fatalf("query %q key %d: score %v, reference %v", terms, h.Key, h.Score, w)
			}
		}
		var in Bits = make([]uint64, (n+200)/64+1)
		for k := range uint32(n + 200) {
			if allow(k) {
				in[k>>6] |= 1 << (k & 63)
			}
		}
		if got := ix.SearchTermsIn(terms, n+200, in, admitted); !slices.Equal(got, full) {
			t.Fatalf("query %q: search over a bitset differs from the predicate's", terms)
		}
		for _, k := range []int{1, 5, 20} {
			top, _ := ix.searchTerms(terms, k, allow, admitted)
			if !slices.Equal(top, full[:min(k, len(full))]) {
				t.Fatalf("query %q k=%d: %v, exhaustive %v", terms, k, top, full[:min(k, len(full))])
			}
		}
	}
}

// termIDs appends d's term ids to dst.
func (ix *Index) termIDs(d docRef, dst []uint32) []uint32 {
	ix.eachTerm(d, func(id uint32) { dst = append(dst, id) })
	return dst
}
