package lexical

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// ---- naive reference --------------------------------------------------------

// refCorpus computes BM25 straight from the definition, in float64, from
// the analysed documents.
type refCorpus struct {
	opts Options
	toks map[uint32]map[string]int // key → term → tf
	lens map[uint32]int
	df   map[string]int
	avg  float64
}

func newRefCorpus(docs map[uint32]string, opts Options) *refCorpus {
	rc := &refCorpus{opts: opts, toks: map[uint32]map[string]int{}, lens: map[uint32]int{}, df: map[string]int{}}
	total := 0
	for k, text := range docs {
		ts := Analyze(text, opts.Stem)
		tf := map[string]int{}
		for _, t := range ts {
			tf[t]++
		}
		for t := range tf {
			rc.df[t]++
		}
		rc.toks[k], rc.lens[k] = tf, len(ts)
		total += len(ts)
	}
	rc.avg = float64(total) / float64(len(docs))
	return rc
}

func (rc *refCorpus) scores(query []string) map[uint32]float64 {
	n := float64(len(rc.toks))
	k1, b := rc.opts.K1, rc.opts.B
	q := map[string]bool{}
	for _, t := range query {
		q[t] = true
	}
	out := map[uint32]float64{}
	for k, tf := range rc.toks {
		s, hit := 0.0, false
		for t := range q {
			f := float64(tf[t])
			if f == 0 {
				continue
			}
			hit = true
			d := float64(rc.df[t])
			idf := math.Log(1 + (n-d+0.5)/(d+0.5))
			s += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(rc.lens[k])/rc.avg))
		}
		if hit {
			out[k] = s
		}
	}
	return out
}

var testVocab = strings.Fields(`alice bob carol coffee tea morning evening meeting project deadline
berlin paris tokyo python golang rust database index search memory agent
likes liked liking prefers preferred running runs ran cats cat dogs dog
2023 2024 1999 42 birthday anniversary allergic peanuts vegetarian sister brother
not never no doesn't don't won't Alice's Bob's café naïve 東京`)

var testFiller = strings.Fields(`the a and is was of to in on it at with for`)

// randomDoc returns a short English-like text from a small vocabulary so that
// terms repeat within and across documents.
func randomDoc(r *rand.Rand) string {
	n := r.IntN(16)
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteString([]string{" ", " ", " ", ", ", ". ", "; "}[r.IntN(6)])
		}
		if r.IntN(4) == 0 {
			sb.WriteString(testFiller[r.IntN(len(testFiller))])
		} else {
			w := testVocab[min(r.IntN(len(testVocab)), r.IntN(len(testVocab)))] // skewed
			if r.IntN(5) == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			sb.WriteString(w)
		}
	}
	return sb.String()
}

func randomQuery(r *rand.Rand) string {
	n := 1 + r.IntN(5)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = testVocab[r.IntN(len(testVocab))]
	}
	if r.IntN(4) == 0 {
		ws = append(ws, ws[0]) // repeated term
	}
	return strings.Join(ws, " ")
}

func buildIndex(opts Options, docs map[uint32]string, order []uint32) *Index {
	ix := New(opts)
	for _, k := range order {
		ix.Add(k, docs[k])
	}
	return ix
}

func sortedKeys(docs map[uint32]string) []uint32 {
	keys := make([]uint32, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func checkRanked(t *testing.T, hits []Hit) {
	t.Helper()
	for i := 1; i < len(hits); i++ {
		if !better(hits[i-1], hits[i]) {
			t.Fatalf("hits not ordered at %d: %+v then %+v", i, hits[i-1], hits[i])
		}
	}
}

// ---- tests ------------------------------------------------------------------

func TestBM25MatchesReference(t *testing.T) {
	for _, opts := range []Options{
		DefaultOptions(),
		{K1: 1.2, B: 0.75, Stem: false},
		{K1: 2.0, B: 0.3, Stem: true},
		{K1: 0.9, B: 0, Stem: true},
		{K1: 1.5, B: 1, Stem: true},
	} {
		t.Run(fmt.Sprintf("k1=%v,b=%v,stem=%v", opts.K1, opts.B, opts.Stem), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			docs := map[uint32]string{}
			for i := range 300 {
				docs[uint32(i)] = randomDoc(r)
			}
			docs[300] = "" // empty documents count in N
			docs[301] = "the and of"
			ix := buildIndex(opts, docs, sortedKeys(docs))
			ref := newRefCorpus(docs, opts)
			for range 200 {
				qtext := randomQuery(r)
				query := Analyze(qtext, opts.Stem)
				want := ref.scores(query)
				got := ix.Search(qtext, len(docs), nil)
				checkRanked(t, got)
				if len(got) != len(want) {
					t.Fatalf("%q: %d hits, reference has %d", qtext, len(got), len(want))
				}
				for _, h := range got {
					w, ok := want[h.Key]
					if !ok {
						t.Fatalf("%q: key %d not in reference", qtext, h.Key)
					}
					if math.Abs(float64(h.Score)-w) > 1e-5 {
						t.Fatalf("%q: key %d score %v, reference %v", qtext, h.Key, h.Score, w)
					}
				}
				// SearchTerms on the analysed query is the same search.
				if got2 := ix.SearchTerms(query, len(docs), nil); !slices.Equal(got, got2) {
					t.Fatalf("%q: SearchTerms differs from Search", qtext)
				}
				// Top-k is a prefix of the full ranking.
				if top := ix.Search(qtext, 5, nil); !slices.Equal(top, got[:min(5, len(got))]) {
					t.Fatalf("%q: top-5 %v is not a prefix of %v", qtext, top, got)
				}
			}
		})
	}
}

func TestSearchSmall(t *testing.T) {
	ix := New(DefaultOptions())
	ix.Add(1, "Alice is allergic to peanuts.")
	ix.Add(2, "Bob likes peanuts and peanut butter.")
	ix.Add(3, "Alice doesn't like coffee in the morning.")
	ix.Add(4, "The weather in Berlin was nice.")

	hits := ix.Search("Is Alice allergic?", 10, nil)
	if len(hits) != 2 || hits[0].Key != 1 || hits[1].Key != 3 {
		t.Fatalf("alice allergic: %+v", hits)
	}
	if hits := ix.Search("doesn't", 10, nil); len(hits) != 1 || hits[0].Key != 3 {
		t.Fatalf("negation: %+v", hits)
	}
	if hits := ix.Search("PEANUT", 10, nil); len(hits) != 2 || hits[0].Key != 2 {
		t.Fatalf("stemmed peanut: %+v", hits) // doc 2 has tf 2
	}
	if got := ix.DocFreq("peanut"); got != 2 {
		t.Fatalf("DocFreq(peanut) = %d", got)
	}
	if got := ix.DocFreq("peanuts"); got != 0 {
		t.Fatalf("DocFreq(peanuts) = %d (terms are stemmed)", got)
	}
}

func TestEmptyResults(t *testing.T) {
	ix := New(DefaultOptions())
	for _, q := range []string{"", "anything"} {
		if hits := ix.Search(q, 10, nil); hits == nil || len(hits) != 0 {
			t.Fatalf("empty index %q: %v", q, hits)
		}
	}
	ix.Add(0, "coffee in the morning")
	ix.Add(1, "")
	for _, q := range []string{"", "   ", "the and of", "zebra", "!!!"} {
		if hits := ix.Search(q, 10, nil); hits == nil || len(hits) != 0 {
			t.Fatalf("%q: %v", q, hits)
		}
	}
	if hits := ix.Search("coffee", 0, nil); len(hits) != 0 {
		t.Fatalf("k=0: %v", hits)
	}
	if hits := ix.Search("coffee", -1, nil); len(hits) != 0 {
		t.Fatalf("k<0: %v", hits)
	}
	if hits := ix.SearchTerms(nil, 10, nil); len(hits) != 0 {
		t.Fatalf("no terms: %v", hits)
	}
	if hits := ix.SearchTerms([]string{"", ""}, 10, nil); len(hits) != 0 {
		t.Fatalf("empty terms: %v", hits)
	}
	if hits := ix.SearchTerms([]string{"", "coffe"}, 10, nil); len(hits) != 1 {
		t.Fatalf("empty and real term: %v", hits)
	}
	if n, avg := ix.Stats(); n != 2 || avg != 1 {
		t.Fatalf("Stats = %d, %v", n, avg)
	}
}

func TestTiesBySmallerKey(t *testing.T) {
	ix := New(DefaultOptions())
	for _, k := range []uint32{9, 3, 7, 1, 5} {
		ix.Add(k, "green tea")
	}
	ix.Add(2, "black coffee")
	hits := ix.Search("tea", 3, nil)
	if len(hits) != 3 || hits[0].Key != 1 || hits[1].Key != 3 || hits[2].Key != 5 {
		t.Fatalf("ties: %+v", hits)
	}
	if hits[0].Score != hits[2].Score {
		t.Fatalf("scores differ: %+v", hits)
	}
}

func TestRepeatedQueryTermsCountOnce(t *testing.T) {
	ix := New(DefaultOptions())
	ix.Add(0, "tea coffee")
	ix.Add(1, "tea")
	ix.Add(2, "coffee milk")
	a := ix.Search("tea coffee", 10, nil)
	b := ix.Search("tea tea coffee TEA", 10, nil)
	c := ix.SearchTerms([]string{"coffe", "tea", "coffe"}, 10, nil)
	if !slices.Equal(a, b) || !slices.Equal(a, c) {
		t.Fatalf("repeated terms change scores: %v %v %v", a, b, c)
	}
}

func TestAllow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	docs := map[uint32]string{}
	for i := range 400 {
		docs[uint32(i)] = randomDoc(r)
	}
	ix := buildIndex(DefaultOptions(), docs, sortedKeys(docs))
	for range 100 {
		q := randomQuery(r)
		all := ix.Search(q, len(docs), nil)
		var calls sync.Map
		even := func(k uint32) bool {
			if _, dup := calls.LoadOrStore(k, true); dup {
				t.Errorf("allow called twice for key %d", k)
			}
			return k%2 == 0
		}
		got := ix.Search(q, len(docs), even)
		var want []Hit
		for _, h := range all {
			if h.Key%2 == 0 {
				want = append(want, h) // statistics do not depend on the filter
			}
		}
		if len(want) == 0 {
			want = []Hit{}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%q: allow even = %v, want %v", q, got, want)
		}
		top := ix.Search(q, 3, func(k uint32) bool { return k%2 == 0 })
		if !slices.Equal(top, want[:min(3, len(want))]) {
			t.Fatalf("%q: top-3 allowed %v, want %v", q, top, want[:min(3, len(want))])
		}
		if none := ix.Search(q, 10, func(uint32) bool { return false }); len(none) != 0 {
			t.Fatalf("deny all: %v", none)
		}
		if yes := ix.Search(q, len(docs), func(uint32) bool { return true }); !slices.Equal(yes, all) {
			t.Fatalf("allow all differs from nil")
		}
	}
}

// snapshot captures everything observable about an index for comparisons.
func snapshot(t *testing.T, ix *Index, queries []string) string {
	t.Helper()
	var sb strings.Builder
	n, avg := ix.Stats()
	fmt.Fprintf(&sb, "len=%d docs=%d avg=%v\n", ix.Len(), n, avg)
	ix.mu.RLock()
	dict := dictOf(ix)
	names := make([]string, 0, len(dict))
	for name := range dict {
		names = append(names, name)
	}
	ix.mu.RUnlock()
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&sb, "df %s=%d\n", name, ix.DocFreq(name))
	}
	for _, q := range queries {
		for _, h := range ix.Search(q, 1000, nil) {
			fmt.Fprintf(&sb, "%s: %d %x\n", q, h.Key, math.Float32bits(h.Score))
		}
	}
	return sb.String()
}

func TestDeterministicAcrossInsertionOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	docs := map[uint32]string{}
	for i := range 500 {
		docs[uint32(i)] = randomDoc(r)
	}
	queries := make([]string, 50)
	for i := range queries {
		queries[i] = randomQuery(r)
	}
	order := sortedKeys(docs)
	want := snapshot(t, buildIndex(DefaultOptions(), docs, order), queries)

	rev := slices.Clone(order)
	slices.Reverse(rev)
	if got := snapshot(t, buildIndex(DefaultOptions(), docs, rev), queries); got != want {
		t.Fatal("reverse insertion order changes the index")
	}
	for seed := range uint64(3) {
		shuf := slices.Clone(order)
		rand.New(rand.NewPCG(seed, 99)).Shuffle(len(shuf), func(i, j int) { shuf[i], shuf[j] = shuf[j], shuf[i] })
		if got := snapshot(t, buildIndex(DefaultOptions(), docs, shuf), queries); got != want {
			t.Fatalf("shuffled insertion order (seed %d) changes the index", seed)
		}
	}
}

func TestReplaceRemoveMatchRebuild(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	queries := make([]string, 60)
	for i := range queries {
		queries[i] = randomQuery(r)
	}
	ix := New(DefaultOptions())
	live := map[uint32]string{}
	const keySpace = 600
	for step := range 6000 {
		k := uint32(r.IntN(keySpace))
		switch op := r.IntN(10); {
		case op < 6: // add or replace
			text := randomDoc(r)
			ix.Add(k, text)
			live[k] = text
		default:
			ix.Remove(k) // removing an absent key is a no-op
			delete(live, k)
		}
		if step%1500 == 1499 {
			rebuilt := buildIndex(DefaultOptions(), live, sortedKeys(live))
			if got, want := snapshot(t, ix, queries), snapshot(t, rebuilt, queries); got != want {
				t.Fatalf("after %d steps the index differs from a rebuild", step+1)
			}
		}
	}
	// Remove everything: dictionary and arena empty again.
	for k := range uint32(keySpace) {
		ix.Remove(k)
	}
	ix.Remove(1 << 20) // beyond any key
	if ix.Len() != 0 || len(dictOf(ix)) != 0 || ix.nterms != 0 || len(ix.arena) != 0 {
		t.Fatalf("after removing all: len=%d dict=%d arena=%d", ix.Len(), len(dictOf(ix)), len(ix.arena))
	}
	if n, avg := ix.Stats(); n != 0 || avg != 0 {
		t.Fatalf("Stats after removing all = %d, %v", n, avg)
	}
	if hits := ix.Search("alice coffee", 10, nil); len(hits) != 0 {
		t.Fatalf("search after removing all: %v", hits)
	}
}

func TestArenaCompactionAndUnsortedPostings(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	ix := New(DefaultOptions())
	live := map[uint32]string{}
	// Descending keys make every postings list unsorted.
	for k := 1999; k >= 0; k-- {
		text := randomDoc(r) + " alpha beta gamma"
		ix.Add(uint32(k), text)
		live[uint32(k)] = text
	}
	for range 6 {
		for k := range uint32(2000) {
			text := randomDoc(r) + " alpha delta"
			ix.Add(k, text)
			live[k] = text
		}
	}
	liveSlots := 0 // bytes
	for _, d := range ix.docs {
		if d.off != absent {
			liveSlots += int(ix.eachTerm(d, nil) - d.off)
		}
	}
	// Without compaction the arena would hold 7 generations of documents.
	if len(ix.arena) > 2*liveSlots+arenaCompactMin || len(ix.arena)-ix.garbage != liveSlots {
		t.Fatalf("arena %d slots, garbage %d, live %d", len(ix.arena), ix.garbage, liveSlots)
	}
	queries := []string{"alpha", "gamma", "delta alice", "coffee morning tokyo"}
	rebuilt := buildIndex(DefaultOptions(), live, sortedKeys(live))
	if got, want := snapshot(t, ix, queries), snapshot(t, rebuilt, queries); got != want {
		t.Fatal("index differs from a rebuild after compaction")
	}
	if ix.DocFreq("gamma") != 0 || ix.DocFreq("alpha") != 2000 {
		t.Fatalf("df gamma=%d alpha=%d", ix.DocFreq("gamma"), ix.DocFreq("alpha"))
	}
}

func TestOptionsNormalised(t *testing.T) {
	ix := New(Options{K1: math.NaN(), B: 7})
	if ix.k1 != 1.2 || ix.b != 0.75 || ix.stem {
		t.Fatalf("normalised to k1=%v b=%v stem=%v", ix.k1, ix.b, ix.stem)
	}
	ix = New(Options{K1: 2, B: 0})
	if ix.k1 != 2 || ix.b != 0 {
		t.Fatalf("k1=%v b=%v", ix.k1, ix.b)
	}
	if d := DefaultOptions(); d.K1 != 1.2 || d.B != 0.75 || !d.Stem {
		t.Fatalf("DefaultOptions = %+v", d)
	}
}

func TestConcurrentSearchAndWrite(t *testing.T) {
	ix := New(DefaultOptions())
	r := rand.New(rand.NewPCG(11, 12))
	for i := range 1000 {
		ix.Add(uint32(i), randomDoc(r))
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 13))
			for i := 0; i < 600; i++ {
				k := uint32(r.IntN(1500))
				if r.IntN(4) == 0 {
					ix.Remove(k)
				} else {
					ix.Add(k, randomDoc(r))
				}
			}
			stop.Store(true)
		}()
	}
	for s := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(s), 14))
			for i := 0; !stop.Load() || i < 50; i++ {
				var allow Allow
				if i%3 == 0 {
					allow = func(k uint32) bool { return k%3 != 0 }
				}
				hits := ix.Search(randomQuery(r), 10, allow)
				for j, h := range hits {
					if !(h.Score > 0) || (allow != nil && h.Key%3 == 0) {
						t.Errorf("bad hit %+v", h)
					}
					if j > 0 && !better(hits[j-1], h) {
						t.Errorf("unordered hits %v", hits)
					}
				}
				ix.Len()
				ix.Stats()
				ix.DocFreq("alic")
			}
		}()
	}
	wg.Wait()
}

// checkInvariants verifies the postings structure against the documents.
func checkInvariants(t *testing.T, ix *Index) {
	t.Helper()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	want := map[uint32]map[uint32]bool{} // term id → keys
	live, total := 0, uint64(0)
	for key, d := range ix.docs {
		if d.off == absent {
			if ix.docLen[key] != 0 {
				t.Fatalf("absent key %d has length %d", key, ix.docLen[key])
			}
			continue
		}
		live++
		total += uint64(ix.docLen[key])
		ids := ix.termIDs(d, nil)
		if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != len(ids) {
			t.Fatalf("key %d: term ids %v", key, ids)
		}
		for _, id := range ids {
			if want[id] == nil {
				want[id] = map[uint32]bool{}
			}
			want[id][uint32(key)] = true
		}
	}
	if live != ix.n || total != ix.total {
		t.Fatalf("n=%d total=%d, docs say %d, %d", ix.n, ix.total, live, total)
	}
	dict := dictOf(ix)
	if len(dict) != len(want) || ix.nterms != len(want) {
		t.Fatalf("dict has %d terms (counted %d), documents use %d", len(dict), ix.nterms, len(want))
	}
	checkSlabs(t, ix)
	for name, id := range dict {
		tm := ix.view(id)
		if got := ix.termName(id); got != name {
			t.Fatalf("term %d named %q in dict as %q", id, got, name)
		}
		if got, ok := ix.lookup(name); !ok || got != id {
			t.Fatalf("lookup(%q) = %d, %v; want %d", name, got, ok, id)
		}
		seen := map[uint32]bool{}
		dead := 0
		for i, key := range tm.keys {
			if seen[key] {
				t.Fatalf("%q: key %d twice", name, key)
			}
			seen[key] = true
			if key > tm.maxKey {
				t.Fatalf("%q: key %d > maxKey %d", name, key, tm.maxKey)
			}
			if i > 0 && i < tm.sorted && tm.keys[i-1] >= key {
				t.Fatalf("%q: sorted prefix out of order at %d", name, i)
			}
			if tm.tfs[i] == 0 {
				dead++
				if i >= tm.sorted {
					t.Fatalf("%q: tombstone in the tail", name)
				}
				if want[id][key] {
					t.Fatalf("%q: live key %d has a tombstone", name, key)
				}
			} else if !want[id][key] {
				t.Fatalf("%q: stale posting for key %d", name, key)
			}
		}
		if dead != tm.dead || tm.df() != len(want[id]) {
			t.Fatalf("%q: dead %d (counted %d), df %d, want %d", name, tm.dead, dead, tm.df(), len(want[id]))
		}
		if 2*tm.dead > len(tm.keys) || len(tm.keys)-tm.sorted > tailLimit(tm.sorted) {
			t.Fatalf("%q: %d postings, %d dead, %d sorted", name, len(tm.keys), tm.dead, tm.sorted)
		}
	}
}

// checkSlabs verifies the postings slabs' accounting: every list in a
// region of its own within the slabs, no two overlapping, and the regions
// plus the garbage exactly the slabs.
func checkSlabs(t *testing.T, ix *Index) {
	t.Helper()
	if len(ix.post.keys) != len(ix.post.tfs) {
		t.Fatalf("%d chunks of keys and %d of tfs", len(ix.post.keys), len(ix.post.tfs))
	}
	inChunks := 0
	for c := range ix.post.keys {
		if len(ix.post.keys[c]) != len(ix.post.tfs[c]) {
			t.Fatalf("chunk %d: %d keys, %d tfs", c, len(ix.post.keys[c]), len(ix.post.tfs[c]))
		}
		inChunks += len(ix.post.keys[c])
	}
	if inChunks != ix.post.used {
		t.Fatalf("chunks hold %d postings, used says %d", inChunks, ix.post.used)
	}
	type region struct{ chunk, off, end uint32 }
	var rs []region
	used := 0
	for id := range ix.terms {
		e := &ix.terms[id]
		if e.n > e.cap || e.cap > 0 && (int(e.chunk) >= len(ix.post.keys) || uint64(e.off)+uint64(e.cap) > uint64(len(ix.post.keys[e.chunk]))) {
			t.Fatalf("term %d: %d postings in a region of %d at %d:%d", id, e.n, e.cap, e.chunk, e.off)
		}
		if e.name.n == 0 && (e.n != 0 || e.cap != 0) {
			t.Fatalf("free term %d holds a region", id)
		}
		if e.cap > 0 {
			rs = append(rs, region{e.chunk, e.off, e.off + e.cap})
			used += int(e.cap)
		}
	}
	nfree := 0
	for b, l := range ix.post.free {
		for i := 0; i < len(l); i += 2 {
			rs = append(rs, region{l[i], l[i+1], l[i+1] + 1<<b})
			if uint64(l[i+1])+1<<b > uint64(len(ix.post.keys[l[i]])) {
				t.Fatalf("free region of %d at %d:%d outside its chunk", 1<<b, l[i], l[i+1])
			}
			nfree += 1 << b
		}
	}
	if nfree != ix.post.nfree {
		t.Fatalf("free lists hold %d postings, nfree says %d", nfree, ix.post.nfree)
	}
	slices.SortFunc(rs, func(a, b region) int {
		if a.chunk != b.chunk {
			return int(a.chunk) - int(b.chunk)
		}
		return int(a.off) - int(b.off)
	})
	for i := 1; i < len(rs); i++ {
		if rs[i].chunk == rs[i-1].chunk && rs[i].off < rs[i-1].end {
			t.Fatalf("regions %v and %v overlap", rs[i-1], rs[i])
		}
	}
	if used+nfree+ix.post.garbage != ix.post.used {
		t.Fatalf("regions %d + free %d + garbage %d != slabs %d", used, nfree, ix.post.garbage, ix.post.used)
	}
}

func TestPostingsInvariantsUnderChurn(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	ix := New(DefaultOptions())
	for step := range 20000 {
		k := uint32(r.IntN(800))
		if r.IntN(3) == 0 {
			ix.Remove(k)
		} else {
			ix.Add(k, randomDoc(r)+" common words everywhere")
		}
		if step%2500 == 0 {
			checkInvariants(t, ix)
		}
	}
	checkInvariants(t, ix)
}
