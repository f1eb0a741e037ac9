package lexical

import (
	"math"
	"slices"
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
type scratch struct {
	scores  []float32
	touched []uint32
	heap    []Hit
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
	if k <= 0 || len(terms) == 0 {
		return []Hit{}
	}
	// A fixed accumulation order makes the float32 sums, and so the ranking,
	// independent of query term order and of the index's term ids.
	q := slices.Clone(terms)
	slices.Sort(q)
	q = slices.Compact(q)
	if q[0] == "" {
		q = q[1:]
	}

	ix.mu.RLock()
	if ix.n == 0 || len(q) == 0 {
		ix.mu.RUnlock()
		return []Hit{}
	}
	sc := scratchPool.Get().(*scratch)
	nkeys := len(ix.docLen)
	if len(sc.scores) < nkeys {
		sc.scores = make([]float32, nkeys+nkeys/8)
	}
	scores := sc.scores[:nkeys]
	docLen := ix.docLen[:nkeys]
	touched := sc.touched[:0]

	n := float64(ix.n)
	k1, b := ix.k1, ix.b
	avgLen := float64(ix.total) / n
	c0 := k1 * (1 - b) // BM25 denominator: tf + c0 + c1·len
	c1 := 0.0
	if avgLen > 0 {
		c1 = k1 * b / avgLen
	}
	for _, name := range q {
		id, ok := ix.dict[name]
		if !ok {
			continue
		}
		t := &ix.terms[id]
		df := float64(len(t.keys))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		if idf < negligibleIDF {
			continue
		}
		w := idf * (k1 + 1)
		keys := t.keys
		tfs := t.tfs[:len(keys)]
		for i, key := range keys {
			s := scores[key]
			if s < 0 {
				continue
			}
			if s == 0 {
				touched = append(touched, key)
				if allow != nil && !allow(key) {
					scores[key] = -1
					continue
				}
			}
			tf := float64(tfs[i])
			scores[key] = float32(float64(s) + w*tf/(tf+c0+c1*float64(docLen[key])))
		}
	}
	ix.mu.RUnlock()

	// Top k with a bounded min-heap whose root is the worst kept hit.
	h := sc.heap[:0]
	for _, key := range touched {
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

	sc.touched = touched[:0]
	sc.heap = h[:0]
	if cap(sc.heap) > 1<<16 {
		sc.heap = nil
	}
	scratchPool.Put(sc)
	return out
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
