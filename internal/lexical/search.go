package lexical

import (
	"bytes"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
)

// negligibleIDF: query terms with a smaller idf are skipped. With
// idf = ln(1 + (N − df + 0.5)/(df + 0.5)) this only happens for a term
// missing from fewer than ~0.01% of the documents; its contribution to any
// score is below idf·(k1+1) ≈ 2e-4, and skipping it saves a pass over a
// postings list as long as the index.
const negligibleIDF = 1e-4

// scratch is the per-search working memory, pooled across searches.
//
// scores is a dense accumulator indexed by key. Its entries are 0 except
// during a search: > 0 is a running score, < 0 marks a key rejected by the
// Allow predicate (so the predicate runs once per key). touched lists the
// keys whose entry is non-zero so they can be collected and reset without
// scanning the whole array.
//
// With scoped statistics, the postings a filter admits are copied once,
// while counting the scoped document frequency, into keys and tfs (one
// region per query term, described by terms), and the search runs over
// those copies: one pass over each postings list instead of two.
type scratch struct {
	scores  []float32
	touched []uint32
	cands   []uint32
	heap    []Hit
	keys    []uint32
	tfs     []uint16
	terms   []term
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// Search analyses query like a document and returns the k best documents by
// BM25, best first; equal scores rank the smaller key first. Repeated query
// terms count once. allow, if not nil, restricts the candidates.
func (ix *Index) Search(query string, k int, allow Allow) []Hit {
	if k <= 0 {
		return []Hit{}
	}
	return ix.SearchTerms(Analyze(query, ix.stem), k, allow)
}

// SearchTerms is Search over already analysed terms (see Analyze); they are
// looked up as given. Repeated terms count once; empty terms are ignored.
func (ix *Index) SearchTerms(terms []string, k int, allow Allow) []Hit {
	hits, _ := ix.searchTerms(terms, k, allow, 0)
	return hits
}

// SearchScoped is Search with collection statistics taken from the
// documents allow admits rather than the whole index: docs is how many
// documents allow admits, and each term's document frequency is counted
// over the admitted postings. Within one conversation a speaker's name is
// common and says little, although it is rare across all conversations;
// scoped statistics also keep one tenant's vocabulary from shaping
// another's scores. docs <= 0 means whole-index statistics.
func (ix *Index) SearchScoped(query string, k int, allow Allow, docs int) []Hit {
	if k <= 0 {
		return []Hit{}
	}
	hits, _ := ix.searchTerms(Analyze(query, ix.stem), k, allow, docs)
	return hits
}

// scopedDF counts t's live postings that allow admits.
func scopedDF(t *term, allow Allow) int {
	n := 0
	for i, key := range t.keys {
		if t.tfs[i] != 0 && allow(key) {
			n++
		}
	}
	return n
}

// admittedPostings appends to keys and tfs the live postings of t that
// allow admits, and returns them as a term of their own (sorted prefix,
// then the admitted part of t's unsorted tail; no tombstones).
// With bits, a key is admitted when its bit is set (allow is not called).
func admittedPostings(t *term, allow Allow, bits []uint64, keys []uint32, tfs []uint16) (term, []uint32, []uint16) {
	start := len(keys)
	tf := t.tfs[:len(t.keys)]
	if bits != nil {
		for i, key := range t.keys[:t.sorted] {
			if w := key >> 6; int(w) < len(bits) && bits[w]&(1<<(key&63)) != 0 && tf[i] != 0 {
				keys = append(keys, key)
				tfs = append(tfs, tf[i])
			}
		}
	} else {
		for i, key := range t.keys[:t.sorted] {
			if tf[i] != 0 && allow(key) {
				keys = append(keys, key)
				tfs = append(tfs, tf[i])
			}
		}
	}
	sorted := len(keys) - start
	for i := t.sorted; i < len(t.keys); i++ {
		if key := t.keys[i]; t.tfs[i] != 0 && allow(key) {
			keys = append(keys, key)
			tfs = append(tfs, t.tfs[i])
		}
	}
	ft := term{keys: keys[start:len(keys):len(keys)], tfs: tfs[start:len(tfs):len(tfs)], sorted: sorted}
	if n := len(ft.keys); n > 0 {
		ft.maxKey = slices.Max(ft.keys)
	}
	return ft, keys, tfs
}

// qterm is a query term resolved against the index.
type qterm struct {
	name string
	t    *term
	df   int     // document frequency in the whole index: fixes the term order
	w    float64 // idf·(k1+1), also a strict upper bound of the term's contribution
}

// searchStats describes how a search ran (for tests).
type searchStats struct {
	scanned  int // terms whose postings were scanned, admitting new candidates
	pruned   int // terms only applied to existing candidates
	postings int // length of the postings lists those terms walked (at most)
}

// Pruning margin: a document outside the candidate set is ruled out only if
// the remaining terms' bound stays below the k-th score by this relative
// margin, far above float32 rounding of the sums.
const pruneMargin = 1e-4

func (ix *Index) searchTerms(terms []string, k int, allow Allow, scopedDocs int) ([]Hit, searchStats) {
	return ix.searchTermsBits(terms, k, allow, nil, scopedDocs, nil)
}

// searchTermsBits is searchTerms where, when bits is not nil, the admitted
// documents are the keys whose bit is set (and allow is their predicate).
// When post is not nil, the postings walked are post's, a subset of ix's
// documents (see SearchTermsVia); the statistics stay ix's (or the
// scope's, in a scoped search).
func (ix *Index) searchTermsBits(terms []string, k int, allow Allow, bits []uint64, scopedDocs int, post *Index) ([]Hit, searchStats) {
	var st searchStats
	if k <= 0 || len(terms) == 0 {
		return []Hit{}, st
	}
	q := slices.Clone(terms)
	slices.Sort(q)
	q = slices.Compact(q)
	if q[0] == "" {
		q = q[1:]
	}

	ix.mu.RLock()
	if ix.n == 0 || len(q) == 0 {
		ix.mu.RUnlock()
		return []Hit{}, st
	}
	if post != nil {
		post.mu.RLock()
		defer post.mu.RUnlock()
		if len(post.docLen) > len(ix.docLen) {
			post = nil // not a subset of ix: walk ix's own postings
		}
	}
	sc := scratchPool.Get().(*scratch)
	qs, allow := ix.resolve(q, allow, bits, scopedDocs, sc, post)
	a := ix.accumulate(qs, k, allow, sc, &st)
	ix.mu.RUnlock()

	out := a.top(k, sc)
	sc.release(a.touched)
	return out, st
}

// resolve looks the query terms q up, weighs them (BM25 idf over the
// scope's documents in a scoped search), drops the negligible ones and
// orders them. Held under ix.mu. In a scoped search (allow given and
// scopedDocs below the index's documents) the terms are copies in sc of
// only the admitted postings, and the allow returned is nil. With post
// (see searchTermsBits), a term's postings are post's (in a scoped
// search, the admitted ones are copied from post's).
func (ix *Index) resolve(q []string, allow Allow, bits []uint64, scopedDocs int, sc *scratch, post *Index) ([]qterm, Allow) {
	n := float64(ix.n)
	scoped := allow != nil && scopedDocs > 0 && scopedDocs < ix.n
	if scoped {
		n = float64(scopedDocs)
		// The admitted postings of every term, copied in one pass that
		// also counts them; the search then needs no allow.
		keys, tfs, fts := sc.keys[:0], sc.tfs[:0], sc.terms[:0]
		for _, name := range q {
			if id, ok := ix.lookup(name); ok {
				src := ix.view(id)
				if post != nil {
					// The subset's postings (none when it lacks the
					// term): the same admitted ones, fewer walked.
					src = term{}
					if pid, ok := post.lookup(name); ok {
						src = post.view(pid)
					}
				}
				var ft term
				ft, keys, tfs = admittedPostings(&src, allow, bits, keys, tfs)
				fts = append(fts, ft)
			}
		}
		sc.keys, sc.tfs, sc.terms = keys, tfs, fts
		allow = nil
	}
	k1 := ix.k1
	qs := make([]qterm, 0, len(q))
	j := 0
	for _, name := range q {
		id, ok := ix.lookup(name)
		if !ok {
			continue
		}
		v := ix.view(id)
		t := &v
		gdf := t.df()
		df := float64(gdf)
		if scoped {
			t = &sc.terms[j]
			j++
			df = min(float64(t.df()), n)
			if df == 0 {
				continue
			}
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		if idf < negligibleIDF {
			continue
		}
		if post != nil && !scoped {
			// A term the subset lacks adds nothing to its documents.
			pid, ok := post.lookup(name)
			if !ok {
				continue
			}
			pv := post.view(pid)
			t = &pv
		}
		qs = append(qs, qterm{name: name, t: t, df: gdf, w: idf * (k1 + 1)})
	}
	// Rarest terms first (ties by name): a fixed order for the float32
	// sums, so identical document sets give identical scores, and the order
	// in which the remaining terms' bound shrinks fastest. The order is by
	// whole-index frequency also in scoped searches, so scoping does not
	// change the order of the sums.
	slices.SortFunc(qs, func(a, b qterm) int {
		if c := a.df - b.df; c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return qs, allow
}

// accumulate adds the terms qs up into the scores of sc: each term's
// postings scanned while new documents could still make the top k, the
// remaining terms then applied to the candidates only. Held under ix.mu.
func (ix *Index) accumulate(qs []qterm, k int, allow Allow, sc *scratch, st *searchStats) accumulator {
	// rest[i]: bound on what terms i.. can add to a document; postings[i]:
	// postings those terms would scan.
	rest := make([]float64, len(qs)+1)
	postings := make([]int, len(qs)+1)
	for i := len(qs) - 1; i >= 0; i-- {
		rest[i] = rest[i+1] + qs[i].w
		postings[i] = postings[i+1] + len(qs[i].t.keys)
	}

	k1, b := ix.k1, ix.b
	avgLen := float64(ix.total) / float64(ix.n)
	nkeys := len(ix.docLen)
	if len(sc.scores) < nkeys {
		sc.scores = make([]float32, nkeys+nkeys/8)
	}
	a := accumulator{
		scores:  sc.scores[:nkeys],
		docLen:  ix.docLen[:nkeys],
		lenCode: ix.lenCode[:nkeys],
		touched: sc.touched[:0],
		allow:   allow,
		c0:      k1 * (1 - b), // BM25 denominator: tf + c0 + c1·len
	}
	if avgLen > 0 {
		a.c1 = k1 * b / avgLen
	}
	i := 0
	for ; i < len(qs); i++ {
		// Once k candidates score above anything the remaining terms could
		// give a new document, no new document can make the top k: apply the
		// remaining terms to the candidates only. Checked only when cheap
		// relative to what it can save.
		if i > 0 && float64(a.max) > rest[i]*(1+pruneMargin) && 8*len(a.touched) < postings[i] {
			if th, ok := a.kth(k, sc); ok && float64(th) > rest[i]*(1+pruneMargin) {
				break
			}
		}
		a.scan(qs[i])
		st.scanned++
		st.postings += len(qs[i].t.keys)
	}
	if i < len(qs) {
		cands := sc.cands[:0]
		for _, key := range a.touched {
			if a.scores[key] > 0 {
				cands = append(cands, key)
			}
		}
		slices.Sort(cands)
		for ; i < len(qs); i++ {
			a.update(qs[i], cands)
			st.pruned++
			st.postings += len(qs[i].t.keys)
		}
		sc.cands = cands[:0]
	}
	return a
}

// top is the best k of the touched documents, best first, with a bounded
// min-heap whose root is the worst kept hit. It zeroes the scores it
// reads, leaving sc's score array clean for the next search.
func (a *accumulator) top(k int, sc *scratch) []Hit {
	h := sc.heap[:0]
	scores := a.scores
	for _, key := range a.touched {
		s := scores[key]
		scores[key] = 0
		if s <= 0 {
			continue
		}
		hit := Hit{Key: key, Score: s}
		if len(h) < k {
			h = append(h, hit)
			siftUp(h, len(h)-1)
		} else if better(hit, h[0]) {
			h[0] = hit
			siftDown(h, 0)
		}
	}
	out := make([]Hit, len(h))
	copy(out, h)
	slices.SortFunc(out, func(a, b Hit) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	sc.heap = h[:0]
	return out
}

// release returns sc to the pool, keeping the buffers of the search
// (touched: the accumulator's) unless they grew too large, and no
// references into the index.
func (sc *scratch) release(touched []uint32) {
	sc.touched = touched[:0]
	if cap(sc.heap) > 1<<16 {
		sc.heap = nil
	}
	clear(sc.terms) // no references into the index from the pool
	sc.terms = sc.terms[:0]
	if cap(sc.keys) > 1<<22 {
		sc.keys, sc.tfs = nil, nil
	}
	scratchPool.Put(sc)
}

// accumulator adds BM25 contributions into a dense score array.
type accumulator struct {
	scores  []float32 // by key; see scratch
	docLen  []uint32
	lenCode []uint8 // min(docLen, 255): 1 byte per key keeps scans in cache
	touched []uint32
	allow   Allow
	c0, c1  float64
	max     float32 // highest score so far
}

// bm25 is one term's contribution. Every path (table, direct, candidate
// update) computes it here, rounded to float32 once; the explicit
// conversion of c1·dl forbids a fused multiply-add (Go spec), so the value is
// bit-identical whichever path and whichever architecture computes it.
func bm25(w, tf, c0, c1, dl float64) float32 {
	return float32(w * tf / (tf + c0 + float64(c1*dl)))
}

// Long postings scans precompute the contribution for tf < tabTF and
// document lengths < tabLen (an 8 KiB table) instead of dividing per posting.
const (
	tabTF     = 8
	tabLen    = 255                // lenCode 255 means "255 or more": look docLen up
	tabMinLen = 4 * tabTF * tabLen // postings needed to pay for the table
)

// scan applies a term to every document in its postings, admitting new
// candidates (subject to allow).
func (a *accumulator) scan(qt qterm) {
	keys := qt.t.keys
	tfs := qt.t.tfs[:len(keys)]
	scores, docLen, lenCode := a.scores, a.docLen, a.lenCode
	w, c0, c1 := qt.w, a.c0, a.c1
	var tab [tabTF * tabLen]float32
	var ntf uint16
	if len(keys) >= tabMinLen {
		for tf := 1; tf < tabTF; tf++ {
			for dl := range tabLen {
				tab[tf*tabLen+dl] = bm25(w, float64(tf), c0, c1, float64(dl))
			}
		}
		ntf = tabTF
	}
	best, touched, allow := a.max, a.touched, a.allow
	for i, key := range keys {
		tf := tfs[i]
		if tf == 0 {
			continue // removed
		}
		s := scores[key]
		if s <= 0 {
			if s < 0 {
				continue // rejected by allow
			}
			touched = append(touched, key)
			if allow != nil && !allow(key) {
				scores[key] = -1
				continue
			}
		}
		var c float32
		if dl := lenCode[key]; tf < ntf && dl < tabLen {
			c = tab[uint(tf)*tabLen+uint(dl)]
		} else {
			c = bm25(w, float64(tf), c0, c1, float64(docLen[key]))
		}
		s += c
		scores[key] = s
		if s > best { // not the max builtin: its NaN/±0 handling is slow here
			best = s
		}
	}
	a.max, a.touched = best, touched
}

// update applies a term to the given candidates (sorted keys, all with a
// positive score) only.
func (a *accumulator) update(qt qterm, cands []uint32) {
	t := qt.t
	scores, docLen := a.scores, a.docLen
	add := func(key uint32, tf uint16) {
		ns := scores[key] + bm25(qt.w, float64(tf), a.c0, a.c1, float64(docLen[key]))
		scores[key] = ns
		if ns > a.max {
			a.max = ns
		}
	}
	prefix := t.keys[:t.sorted]
	if len(cands)*bits.Len(uint(len(prefix))) < len(prefix) {
		lo := 0
		for _, key := range cands {
			j, found := slices.BinarySearch(prefix[lo:], key)
			lo += j
			if lo >= len(prefix) {
				break
			}
			if found {
				if tf := t.tfs[lo]; tf != 0 {
					add(key, tf)
				}
				lo++
			}
		}
	} else {
		for i, key := range prefix {
			if tf := t.tfs[i]; tf != 0 && scores[key] > 0 {
				add(key, tf)
			}
		}
	}
	for i := t.sorted; i < len(t.keys); i++ { // the short unsorted tail
		if key := t.keys[i]; scores[key] > 0 {
			add(key, t.tfs[i])
		}
	}
}

// kth returns the k-th best score among the candidates, if there are k.
func (a *accumulator) kth(k int, sc *scratch) (float32, bool) {
	h := sc.heap[:0]
	for _, key := range a.touched {
		s := a.scores[key]
		if s <= 0 {
			continue
		}
		hit := Hit{Key: key, Score: s}
		if len(h) < k {
			h = append(h, hit)
			siftUp(h, len(h)-1)
		} else if better(hit, h[0]) {
			h[0] = hit
			siftDown(h, 0)
		}
	}
	sc.heap = h[:0]
	if len(h) < k {
		return 0, false
	}
	return h[0].Score, true
}

// better reports whether a ranks before b: higher score, then smaller key.
func better(a, b Hit) bool {
	return a.Score > b.Score || (a.Score == b.Score && a.Key < b.Key)
}

func siftUp(h []Hit, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(h[p], h[i]) {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []Hit, i int) {
	for {
		worst := i
		l, r := 2*i+1, 2*i+2
		if l < len(h) && better(h[worst], h[l]) {
			worst = l
		}
		if r < len(h) && better(h[worst], h[r]) {
			worst = r
		}
		if worst == i {
			return
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// Expand returns up to n terms that characterise the documents keys best,
// weighting document i by w[i] (e.g. its score): Σ w·(1/|d|)·idf over the
// documents containing the term, with idf from the documents allow admits
// (docs of them, as in SearchScoped; docs <= 0: the whole index). Terms
// in exclude are skipped. This is pseudo-relevance feedback: the words
// that co-occur with a query in its best matches often name what the
// query only paraphrases.
func (ix *Index) Expand(keys []uint32, w []float64, exclude []string, n int, allow Allow, docs int) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if n <= 0 || ix.n == 0 {
		return nil
	}
	skip := map[uint32]bool{}
	for _, t := range exclude {
		if id, ok := ix.lookup(t); ok {
			skip[id] = true
		}
	}
	total := float64(ix.n)
	scoped := allow != nil && docs > 0 && docs < ix.n
	if scoped {
		total = float64(docs)
	}
	weight := map[uint32]float64{}
	for i, key := range keys {
		if !ix.has(key) || ix.docLen[key] == 0 {
			continue
		}
		ix.eachTerm(ix.docs[key], func(id uint32) {
			if !skip[id] {
				weight[id] += w[i] / float64(ix.docLen[key])
			}
		})
	}
	type tw struct {
		id uint32
		w  float64
	}
	var cands []tw
	for id, v := range weight {
		t := ix.view(id)
		df := float64(t.df())
		if scoped {
			df = min(float64(scopedDF(&t, allow)), total)
		}
		if df < 2 { // a word of one document expands nothing
			continue
		}
		cands = append(cands, tw{id, v * math.Log(1+(total-df+0.5)/(df+0.5))})
	}
	slices.SortFunc(cands, func(a, b tw) int {
		if a.w != b.w {
			if a.w > b.w {
				return -1
			}
			return 1
		}
		return bytes.Compare(ix.nameOf(a.id), ix.nameOf(b.id))
	})
	out := make([]string, 0, n)
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, ix.termName(c.id))
	}
	return out
}

// SearchTermsScoped is SearchScoped over already analysed terms.
func (ix *Index) SearchTermsScoped(terms []string, k int, allow Allow, docs int) []Hit {
	hits, _ := ix.searchTerms(terms, k, allow, docs)
	return hits
}

// Bits is a set of document keys: bit key%64 of word key/64.
type Bits []uint64

// Has reports whether key is in the set.
func (b Bits) Has(key uint32) bool {
	w := int(key >> 6)
	return w < len(b) && b[w]&(1<<(key&63)) != 0
}

// SearchTermsIn is SearchTermsScoped over the documents of a set: the
// cheapest filter to apply per posting.
func (ix *Index) SearchTermsIn(terms []string, k int, in Bits, docs int) []Hit {
	hits, _ := ix.searchTermsBits(terms, k, in.Has, in, docs, nil)
	return hits
}
