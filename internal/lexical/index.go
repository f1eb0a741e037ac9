// Package lexical is an in-memory BM25 index over short texts (memory
// records: chat turns, facts). It is memgate's lexical retrieval signal.
//
// Documents are identified by dense uint32 keys assigned by the caller; the
// index keeps per-key arrays sized to the largest key seen, so keys should be
// small consecutive numbers (a row number), not hashes.
//
// # Storage
//
// Each term has a postings list held as two parallel, pointer-free slices
// (keys []uint32, tfs []uint16: 6 bytes per posting, no per-posting
// pointers). Each document keeps the ids of its distinct terms in one shared
// arena ([]uint32) plus its token count, so Remove knows exactly which
// postings lists to visit.
//
// Removal deletes postings directly (no tombstones): a postings list whose
// keys were appended in increasing order (the normal case: keys grow) is kept
// sorted, the key is found by binary search and the tail is shifted down
// with one copy; a list that received an out-of-order key is marked unsorted
// and the key is found by a linear scan and swap-removed. Either way Remove
// costs O(Σ postings of that document's terms) at worst, usually far less. A
// term whose last posting goes is deleted from the dictionary and its id
// reused. Arena slots of removed or replaced documents are garbage and the
// arena is compacted once garbage exceeds half of it (amortised O(1)).
//
// # Scoring
//
// Okapi BM25 with idf = ln(1 + (N − df + 0.5)/(df + 0.5)), where N is the
// number of live documents (including documents whose text produced no
// terms) and the length normaliser uses the current average document length
// (tokens after analysis). A document's score is accumulated term-at-a-time
// in a fixed (lexicographic) term order, so identical document sets give
// bit-identical scores whatever the insertion order; ties rank the smaller
// key first.
package lexical

import (
	"math"
	"slices"
	"sync"
)

// Hit is one search result.
type Hit struct {
	Key   uint32
	Score float32
}

// Allow filters candidate documents. A nil Allow admits every document. It is
// called at most once per candidate document per search, before any of its
// score is accumulated, while the index is read-locked: it must not call
// back into the same Index's mutating methods.
type Allow func(key uint32) bool

// Options configures scoring and analysis.
type Options struct {
	K1   float64 // term-frequency saturation; ≤ 0, NaN or Inf means 1.2
	B    float64 // length normalisation in [0, 1]; outside it (or NaN) means 0.75; 0 disables it
	Stem bool    // apply the light English stemmer in Analyze
}

// DefaultOptions returns K1 1.2, B 0.75, Stem true.
func DefaultOptions() Options { return Options{K1: 1.2, B: 0.75, Stem: true} }

const (
	absent = ^uint32(0) // docRef.off of a key that holds no document
	maxTF  = math.MaxUint16
	// arenaCompactMin is the least garbage that triggers arena compaction.
	arenaCompactMin = 1 << 12
)

type term struct {
	name   string
	keys   []uint32 // document keys
	tfs    []uint16 // term frequency per posting, parallel to keys
	sorted bool     // keys are strictly increasing
}

type docRef struct{ off, n uint32 } // distinct term ids: arena[off : off+n]

// Index is a BM25 index. It is safe for concurrent use: searches run in
// parallel under a read lock, Add and Remove take the write lock.
type Index struct {
	k1, b float64
	stem  bool

	mu      sync.RWMutex
	dict    map[string]uint32 // term → id (index into terms)
	terms   []term
	free    []uint32 // ids of deleted terms, reused first
	docs    []docRef // by key
	docLen  []uint32 // by key: tokens after analysis (0 when absent)
	arena   []uint32 // distinct term ids of each document
	garbage int      // dead arena slots
	n       int      // live documents
	total   uint64   // Σ docLen of live documents
}

// New returns an empty index.
func New(opts Options) *Index {
	if !(opts.K1 > 0) || math.IsInf(opts.K1, 0) {
		opts.K1 = 1.2
	}
	if !(opts.B >= 0 && opts.B <= 1) {
		opts.B = 0.75
	}
	return &Index{k1: opts.K1, b: opts.B, stem: opts.Stem, dict: make(map[string]uint32)}
}

// Len returns the number of documents in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.n
}

// Stats returns the number of documents and their average length in tokens
// (after analysis).
func (ix *Index) Stats() (docs int, avgLen float64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.n == 0 {
		return 0, 0
	}
	return ix.n, float64(ix.total) / float64(ix.n)
}

// DocFreq returns the number of documents containing term. term is an
// analysed term (as produced by Analyze with the index's Stem setting).
func (ix *Index) DocFreq(term string) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if id, ok := ix.dict[term]; ok {
		return len(ix.terms[id].keys)
	}
	return 0
}

// Add indexes text under key, replacing any document already there. A text
// with no terms still counts as a (zero-length) document.
func (ix *Index) Add(key uint32, text string) {
	tb := getTokens()
	analyzeInto(tb, text, ix.stem)
	ix.mu.Lock()
	ix.addLocked(key, tb)
	ix.mu.Unlock()
	putTokens(tb)
}

// Remove deletes the document under key, if any.
func (ix *Index) Remove(key uint32) {
	ix.mu.Lock()
	if ix.has(key) {
		ix.removeLocked(key)
		ix.maybeCompact()
	}
	ix.mu.Unlock()
}

func (ix *Index) has(key uint32) bool {
	return int(key) < len(ix.docs) && ix.docs[key].off != absent
}

func (ix *Index) addLocked(key uint32, tb *tokenList) {
	if ix.has(key) {
		ix.removeLocked(key)
		ix.maybeCompact()
	}
	if int(key) >= len(ix.docs) {
		ix.growKeys(int(key) + 1)
	}
	ids := tb.ids[:0]
	for i := range tb.len() {
		tok := tb.token(i)
		id, ok := ix.dict[string(tok)] // no allocation for the lookup
		if !ok {
			id = ix.newTerm(string(tok))
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	off := len(ix.arena)
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[i] {
			j++
		}
		ix.arena = append(ix.arena, ids[i])
		ix.addPosting(ids[i], key, min(j-i, maxTF))
		i = j
	}
	if len(ix.arena) >= int(absent) {
		panic("lexical: index too large")
	}
	ix.docs[key] = docRef{off: uint32(off), n: uint32(len(ix.arena) - off)}
	ix.docLen[key] = uint32(len(ids))
	ix.n++
	ix.total += uint64(len(ids))
	tb.ids = ids
}

func (ix *Index) growKeys(n int) {
	if n > cap(ix.docs) {
		c := max(n, 2*cap(ix.docs), 1024)
		docs := make([]docRef, len(ix.docs), c)
		copy(docs, ix.docs)
		ix.docs = docs
		lens := make([]uint32, len(ix.docLen), c)
		copy(lens, ix.docLen)
		ix.docLen = lens
	}
	for i := len(ix.docs); i < n; i++ {
		ix.docs = append(ix.docs, docRef{off: absent})
		ix.docLen = append(ix.docLen, 0)
	}
}

func (ix *Index) newTerm(name string) uint32 {
	var id uint32
	if k := len(ix.free); k > 0 {
		id = ix.free[k-1]
		ix.free = ix.free[:k-1]
	} else {
		if len(ix.terms) >= int(absent) {
			panic("lexical: too many terms")
		}
		id = uint32(len(ix.terms))
		ix.terms = append(ix.terms, term{})
	}
	ix.terms[id] = term{name: name, sorted: true}
	ix.dict[name] = id
	return id
}

func (ix *Index) addPosting(id, key uint32, tf int) {
	t := &ix.terms[id]
	if k := len(t.keys); k > 0 && t.keys[k-1] > key {
		t.sorted = false
	}
	t.keys = append(t.keys, key)
	t.tfs = append(t.tfs, uint16(tf))
}

func (ix *Index) removeLocked(key uint32) {
	d := ix.docs[key]
	for _, id := range ix.arena[d.off : d.off+d.n] {
		ix.removePosting(id, key)
	}
	ix.garbage += int(d.n)
	ix.n--
	ix.total -= uint64(ix.docLen[key])
	ix.docs[key] = docRef{off: absent}
	ix.docLen[key] = 0
}

func (ix *Index) removePosting(id, key uint32) {
	t := &ix.terms[id]
	var i int
	if t.sorted {
		var found bool
		if i, found = slices.BinarySearch(t.keys, key); !found {
			panic("lexical: postings list out of sync")
		}
	} else if i = slices.Index(t.keys, key); i < 0 {
		panic("lexical: postings list out of sync")
	}
	last := len(t.keys) - 1
	if last == 0 {
		delete(ix.dict, t.name)
		*t = term{}
		ix.free = append(ix.free, id)
		return
	}
	if t.sorted {
		copy(t.keys[i:], t.keys[i+1:])
		copy(t.tfs[i:], t.tfs[i+1:])
	} else {
		t.keys[i] = t.keys[last]
		t.tfs[i] = t.tfs[last]
	}
	t.keys = t.keys[:last]
	t.tfs = t.tfs[:last]
	if last == 1 {
		t.sorted = true
	}
	if c := cap(t.keys); c >= 64 && last < c/4 { // give memory back after mass removal
		t.keys = slices.Clip(slices.Clone(t.keys))
		t.tfs = slices.Clip(slices.Clone(t.tfs))
	}
}

// maybeCompact rewrites the document arena without its dead slots once they
// make up more than half of it.
func (ix *Index) maybeCompact() {
	if ix.n == 0 {
		ix.arena, ix.garbage = nil, 0
		return
	}
	if ix.garbage < arenaCompactMin || 2*ix.garbage < len(ix.arena) {
		return
	}
	arena := make([]uint32, 0, len(ix.arena)-ix.garbage)
	for k, d := range ix.docs {
		if d.off == absent {
			continue
		}
		off := len(arena)
		arena = append(arena, ix.arena[d.off:d.off+d.n]...)
		ix.docs[k].off = uint32(off)
	}
	ix.arena, ix.garbage = arena, 0
}
