package lexical

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSearchTermsViaMatchesAllow: a search over a subset index copied
// from the main one gives exactly the hits and scores of the main index's
// search restricted to the subset's documents, pruned or not, through
// churn (documents replaced, removed, moved out of the subset), while it
// walks only the subset's postings.
func TestSearchTermsViaMatchesAllow(t *testing.T) {
	g := newCorpusGen(11)
	ix, sub := New(DefaultOptions()), New(DefaultOptions())
	const n = 3000
	in := func(k uint32) bool { return k%7 == 0 } // the subset's documents
	for k := range uint32(n) {
		ix.AddWithFields(k, g.doc(), []string{FieldTerm("kind", "x")})
		if in(k) {
			ix.CopyTo(sub, k)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	member := map[uint32]bool{}
	for k := range uint32(n) {
		member[k] = in(k)
	}
	for range 900 {
		k := uint32(r.IntN(n))
		switch r.IntN(3) {
		case 0:
			ix.Remove(k)
			ix.CopyTo(sub, k) // removes it from the subset
		case 1:
			ix.Add(k, g.doc())
			if member[k] {
				ix.CopyTo(sub, k)
			}
		default:
			member[k] = !member[k] // moved into or out of the subset
			if member[k] {
				ix.CopyTo(sub, k)
			} else {
				sub.Remove(k)
			}
		}
	}
	checkInvariants(t, sub)
	for k := range uint32(n) {
		if member[k] && ix.has(k) != sub.has(k) || !member[k] && sub.has(k) {
			t.Fatalf("key %d: in main %v, in subset %v, member %v", k, ix.has(k), sub.has(k), member[k])
		}
		if sub.has(k) && sub.DocLen(k) != ix.DocLen(k) {
			t.Fatalf("key %d: length %d in subset, %d in main", k, sub.DocLen(k), ix.DocLen(k))
		}
	}
	fewer := 0
	for qi := range 300 {
		terms := Analyze(g.query("zipf"), true)
		var extra Allow
		if qi%3 == 2 {
			extra = func(k uint32) bool { return k%2 == 0 }
		}
		restricted := func(k uint32) bool { return member[k] && (extra == nil || extra(k)) }
		for _, k := range []int{1, 5, 50, n} {
			want, all := ix.searchTerms(terms, k, restricted, 0)
			got, walked := ix.SearchTermsVia(sub, terms, k, extra)
			if !slices.Equal(got, want) {
				t.Fatalf("%q k=%d: via the subset %v, main index restricted %v", terms, k, got, want)
			}
			if walked > all.postings {
				t.Fatalf("%q k=%d: walked %d postings, the main index %d", terms, k, walked, all.postings)
			}
			if walked < all.postings {
				fewer++
			}
			// Scoped: the scope's statistics, the subset's postings.
			scope := len(member) / 3
			if got, want := ix.SearchTermsScopedVia(sub, terms, k, restricted, scope), ix.SearchTermsScoped(terms, k, restricted, scope); !slices.Equal(got, want) {
				t.Fatalf("%q k=%d scoped: via the subset %v, main index %v", terms, k, got, want)
			}
		}
	}
	if fewer < 600 {
		t.Fatalf("the subset walked fewer postings in only %d of 1200 searches", fewer)
	}
}

// TestCopyToIsTheSameDocument: a copied document has the terms,
// frequencies and length the main index gave it, field terms included.
func TestCopyToIsTheSameDocument(t *testing.T) {
	ix, sub := New(DefaultOptions()), New(DefaultOptions())
	ix.AddWithFields(3, "the cats chased the other cats and a dog", []string{FieldTerm("type", "belief")})
	ix.CopyTo(sub, 3)
	want := New(DefaultOptions())
	want.AddWithFields(3, "the cats chased the other cats and a dog", []string{FieldTerm("type", "belief")})
	for _, term := range append(Analyze("cats chased other dog", true), FieldTerm("type", "belief")) {
		var a, b []int
		sub.Postings(term, func(k uint32, tf int) { a = append(a, int(k), tf) })
		want.Postings(term, func(k uint32, tf int) { b = append(b, int(k), tf) })
		if !slices.Equal(a, b) || len(a) == 0 {
			t.Fatalf("%q: copy %v, analysed %v", term, a, b)
		}
	}
	if sub.DocLen(3) != want.DocLen(3) || sub.Len() != 1 {
		t.Fatalf("length %d (want %d), %d documents", sub.DocLen(3), want.DocLen(3), sub.Len())
	}
	ix.Remove(3)
	ix.CopyTo(sub, 3)
	if sub.Len() != 0 {
		t.Fatal("copying a removed document left it in the subset")
	}
}
