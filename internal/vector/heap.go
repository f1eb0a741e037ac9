package vector

import "slices"

// worse reports whether hit a ranks below hit b: a lower score, or an equal
// score and a larger key. It is a strict total order on (score, key) for
// non-NaN scores, which is what makes rankings independent of the order in
// which candidates are seen.
func worse(a, b Hit) bool {
	return a.Score < b.Score || (a.Score == b.Score && a.Key > b.Key)
}

// topK is a bounded min-heap of hits: h[0] is the worst hit kept so far, so
// a candidate is compared against the root alone and, once the heap is full,
// most candidates are rejected with a single comparison.
type topK struct {
	k int
	h []Hit
}

func newTopK(k int) topK { return topK{k: k, h: make([]Hit, 0, k)} }

// full reports whether k hits are held.
func (t *topK) full() bool { return len(t.h) >= t.k }

// accepts reports whether a hit with this score and key would enter the heap.
func (t *topK) accepts(score float32, key uint32) bool {
	if len(t.h) < t.k {
		return true
	}
	return worse(t.h[0], Hit{Key: key, Score: score})
}

// offer is push with the common rejection inlined: once the heap is full,
// a hit that does not beat the root costs one comparison. NaN scores are
// never kept once the heap is full.
func (t *topK) offer(key uint32, score float32) {
	if len(t.h) == t.k {
		w := t.h[0]
		if !(score > w.Score || (score == w.Score && key < w.Key)) {
			return
		}
	}
	t.push(Hit{Key: key, Score: score})
}

// push offers a hit; it is kept if it ranks above the current worst.
func (t *topK) push(x Hit) {
	h := t.h
	if len(h) < t.k {
		h = append(h, x)
		i := len(h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.h = h
		return
	}
	if t.k == 0 || !worse(h[0], x) {
		return
	}
	h[0] = x
	t.siftDown(0)
}

func (t *topK) siftDown(i int) {
	h := t.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// sorted returns the hits best first (score descending, ties by smaller key).
// The heap is consumed.
func (t *topK) sorted() []Hit {
	out := t.h
	sortHits(out)
	t.h = nil
	return out
}

// sortHits orders hits best first: score descending, ties by smaller key.
func sortHits(h []Hit) {
	slices.SortFunc(h, func(a, b Hit) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
}

// cand is a graph node with its score against the current query.
type cand struct {
	id    uint32
	score float32
}

// candWorse is the (score, id) total order used inside HNSW.
func candWorse(a, b cand) bool {
	return a.score < b.score || (a.score == b.score && a.id > b.id)
}

// minHeap keeps the worst candidate at the root (the beam W / result set).
type minHeap []cand

//go:norace
func (h *minHeap) push(x cand) {
	s := append(*h, x)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !candWorse(s[i], s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
	*h = s
}

//go:norace
func (h *minHeap) pop() cand {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && candWorse(s[r], s[l]) {
			m = r
		}
		if !candWorse(s[m], s[i]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// maxHeap keeps the best candidate at the root (the candidate queue C).
type maxHeap []cand

//go:norace
func (h *maxHeap) push(x cand) {
	s := append(*h, x)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !candWorse(s[p], s[i]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
	*h = s
}

//go:norace
func (h *maxHeap) pop() cand {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && candWorse(s[l], s[r]) {
			m = r
		}
		if !candWorse(s[i], s[m]) {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// drainDesc empties the heap into out, best first.
//
//go:norace
func (h *minHeap) drainDesc(out []cand) []cand {
	n := len(*h)
	if cap(out) < n {
		out = make([]cand, n, 2*n)
	}
	out = out[:n]
	for i := n - 1; i >= 0; i-- {
		out[i] = h.pop()
	}
	return out
}

// sortCandsDesc orders a short candidate list best first (insertion sort;
// the lists sorted are link lists of at most 2*M+1 entries).
//
//go:norace
func sortCandsDesc(c []cand) {
	for i := 1; i < len(c); i++ {
		x := c[i]
		j := i
		for j > 0 && candWorse(c[j-1], x) {
			c[j] = c[j-1]
			j--
		}
		c[j] = x
	}
}
