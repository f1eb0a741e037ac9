// Package lexical is an in-memory BM25 index over short texts (memory
// records: chat turns, facts). It is memgate's lexical retrieval signal.
//
// Documents are identified by dense uint32 keys assigned by the caller; the
// index keeps per-key arrays sized to the largest key seen, so keys should be
// small consecutive numbers (a row number), not hashes.
//
// # Storage
//
// Nothing the index holds per term or per document is a pointer, so the
// garbage collector's work does not grow with the index (issue 14). Term
// names are back to back in one byte arena, found through an
// open-addressing table of term ids (dict.go). Each term's postings list
// is a region of two parallel slabs shared by all terms (keys []uint32,
// tfs []uint16: 6 bytes per posting; postings.go). Each document keeps the ids of its distinct terms in one shared
// byte arena (ascending, as varints: the first id, then the differences;
// about two bytes a term instead of four) plus its token count, so Remove
// knows exactly which postings lists to visit.
//
// Postings lists are kept sorted by key with tombstones: keys appended in
// increasing order (the normal case: keys grow) extend a sorted prefix;
// out-of-order keys go to a short unsorted tail that is merged in once it
// exceeds 1/16 of the list. Remove finds the key in each of the document's
// lists by binary search and zeroes its tf — a tombstone, skipped by searches
// and excluded from df — or, for a key in the short tail, scans the tail and
// swap-deletes it. Re-adding the key revives its tombstone in place; a list whose tombstones exceed half its
// length is rebuilt. So Remove is O(Σ log df) plus amortised rebuilds, never
// worse than O(Σ postings of that document's terms), and lists stay sorted,
// which keeps searches cache-friendly and lets them look candidates up by
// binary search. A term whose last live posting goes is deleted from the
// dictionary and its id reused. Arena slots of removed or replaced documents
// are garbage and the arena is compacted once garbage exceeds half of it.
//
// # Scoring
//
// Okapi BM25 with idf = ln(1 + (N − df + 0.5)/(df + 0.5)), where N is the
// number of live documents (including documents whose text produced no
// terms) and the length normaliser uses the current average document length
// (tokens after analysis). Scores are accumulated term-at-a-time into a
// pooled dense float32 array indexed by key, rarest term first (equal df by
// term), an order that depends only on the document set, so identical
// document sets give bit-identical scores whatever the insertion order; ties
// rank the smaller key first. The top k are kept in a bounded heap.
//
// Query evaluation prunes exactly (the results equal exhaustive scoring):
// once k candidates score above the most the remaining, more common terms
// could give a document (Σ idf·(k1+1)), no new document can enter the top k,
// so those terms are only applied to the existing candidates, by binary
// search in their sorted postings. Terms with idf below 1e-4 (present in all
// but ~0.01% of documents) are skipped. A typical query with one or two rare
// words therefore never scans the postings of its common words.
package lexical

import (
	"encoding/binary"
	"hash/maphash"
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

// entry is one term: its name (dict.go) and its postings list, a region of
// the index's two postings slabs (postings.go). keys[:sorted] is strictly
// increasing; keys[sorted:] is a short unsorted tail of out-of-order
// appends (bounded by tailLimit, then merged in). A posting removed from
// the sorted prefix stays in place with tf 0 (a tombstone) until more than
// half of the list is dead, when the list is rebuilt; re-adding the key
// revives it. A posting removed from the tail is swap-deleted, so the tail
// holds no tombstones. Each key appears at most once per list. An entry
// holds no pointer, so the collector never scans the terms, however many.
type entry struct {
	name   nameRef // in Index.names (dict.go)
	chunk  uint32  // the region's chunk of the slabs (postings.go)
	off    uint32  // its first posting there
	n, cap uint32  // postings, and the region's length
	sorted uint32  // length of the sorted prefix
	dead   uint32  // tombstones
	maxKey uint32  // largest key in the list (live or dead)
}

func (e *entry) df() int { return int(e.n - e.dead) }

// term is a read-only view of a postings list (Index.view), or a list of
// a search's own (a scoped search's admitted postings).
type term struct {
	keys   []uint32 // document keys
	tfs    []uint16 // term frequency per posting, parallel to keys; 0 = removed
	sorted int      // length of the sorted prefix of keys
	dead   int      // tombstones
	maxKey uint32   // largest key in keys (live or dead)
}

func (t *term) df() int { return len(t.keys) - t.dead }

// tailLimit is the longest unsorted tail a list of n postings keeps.
func tailLimit(n int) int { return max(64, n/16) }

// docRef locates a document's distinct term ids: n varints at arena[off:]
// (the first id, then the differences to the previous one).
type docRef struct{ off, n uint32 }

// Index is a BM25 index. It is safe for concurrent use: searches run in
// parallel under a read lock, Add and Remove take the write lock.
type Index struct {
	k1, b float64
	stem  bool

	mu sync.RWMutex
	// The dictionary (dict.go): the terms' names back to back, and an
	// open-addressing table of term ids, id+1 (0: empty).
	names       []byte
	nameGarbage int // dead bytes of names
	slots       []uint32
	nterms      int // terms in slots
	seed        maphash.Seed
	terms       []entry
	// The postings of every term, in regions of chunked slabs
	// (postings.go).
	post    slabs
	free    []uint32 // ids of deleted terms, reused first
	docs    []docRef // by key
	docLen  []uint32 // by key: tokens after analysis (0 when absent)
	lenCode []uint8  // by key: min(docLen, 255), a compact copy for scans
	arena   []byte   // distinct term ids of each document (see docRef)
	garbage int      // dead arena bytes
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
	return &Index{k1: opts.K1, b: opts.B, stem: opts.Stem, seed: maphash.MakeSeed()}
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
	if id, ok := ix.lookup(term); ok {
		return ix.terms[id].df()
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
		id, ok := ix.lookupBytes(tok)
		if !ok {
			id = ix.newTerm(tok)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if len(ix.arena)+5*len(ids) >= int(absent) {
		panic("lexical: index too large")
	}
	off := len(ix.arena)
	prev, n := uint32(0), 0
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[i] {
			j++
		}
		ix.arena = binary.AppendUvarint(ix.arena, uint64(ids[i]-prev))
		prev = ids[i]
		n++
		ix.addPosting(ids[i], key, min(j-i, maxTF))
		i = j
	}
	ix.docs[key] = docRef{off: uint32(off), n: uint32(n)}
	ix.docLen[key] = uint32(len(ids))
	ix.lenCode[key] = uint8(min(len(ids), 255))
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
		codes := make([]uint8, len(ix.lenCode), c)
		copy(codes, ix.lenCode)
		ix.lenCode = codes
	}
	for i := len(ix.docs); i < n; i++ {
		ix.docs = append(ix.docs, docRef{off: absent})
		ix.docLen = append(ix.docLen, 0)
		ix.lenCode = append(ix.lenCode, 0)
	}
}

func (ix *Index) newTerm(name []byte) uint32 {
	var id uint32
	if k := len(ix.free); k > 0 {
		id = ix.free[k-1]
		ix.free = ix.free[:k-1]
	} else {
		if len(ix.terms) >= int(absent) {
			panic("lexical: too many terms")
		}
		id = uint32(len(ix.terms))
		ix.terms = append(ix.terms, entry{})
	}
	ix.terms[id] = entry{name: ix.addName(name)}
	ix.link(id)
	return id
}

func (ix *Index) addPosting(id, key uint32, tf int) {
	e := &ix.terms[id]
	if e.n == 0 || key > e.maxKey {
		e.maxKey = key
		if e.sorted == e.n { // no tail: the sorted prefix grows
			e.sorted++
			ix.push(e, key, uint16(tf))
			return
		}
	} else {
		keys, tfs := ix.region(e)
		if i, ok := slices.BinarySearch(keys[:e.sorted], key); ok {
			tfs[i] = uint16(tf) // a tombstone of an earlier version (the tail has none)
			e.dead--
			return
		}
	}
	ix.push(e, key, uint16(tf))
	if int(e.n-e.sorted) > tailLimit(int(e.sorted)) {
		ix.rebuild(e)
	}
}

// rebuild rewrites e's list sorted, without tombstones, in its region.
func (ix *Index) rebuild(e *entry) {
	keys, tfs := ix.region(e)
	keys, tfs = keys[:e.n], tfs[:e.n]
	tail := make([]uint64, 0, e.n-e.sorted)
	for i := e.sorted; i < e.n; i++ {
		if tfs[i] != 0 {
			tail = append(tail, uint64(keys[i])<<16|uint64(tfs[i]))
		}
	}
	slices.Sort(tail)
	// The merged list is built aside (merging in place could overwrite
	// a posting not yet read), then copied back.
	merged := make([]uint64, 0, e.df())
	i := uint32(0)
	for _, p := range tail {
		k := uint32(p >> 16)
		for ; i < e.sorted && keys[i] < k; i++ {
			if tfs[i] != 0 {
				merged = append(merged, uint64(keys[i])<<16|uint64(tfs[i]))
			}
		}
		merged = append(merged, p)
	}
	for ; i < e.sorted; i++ {
		if tfs[i] != 0 {
			merged = append(merged, uint64(keys[i])<<16|uint64(tfs[i]))
		}
	}
	for j, p := range merged {
		keys[j], tfs[j] = uint32(p>>16), uint16(p)
	}
	n := uint32(len(merged))
	e.n, e.sorted, e.dead = n, n, 0
	if n > 0 {
		e.maxKey = keys[n-1]
	}
}

// eachTerm calls fn with each term id of d, ascending, and returns the end
// of d's bytes in the arena.
func (ix *Index) eachTerm(d docRef, fn func(id uint32)) uint32 {
	p := ix.arena[d.off:]
	id, at := uint32(0), 0
	for range d.n {
		v, n := uvarint32(p[at:])
		at += n
		id += v
		if fn != nil {
			fn(id)
		}
	}
	return d.off + uint32(at)
}

// uvarint32 decodes a varint of the arena, with a fast path for the
// common one-byte case.
func uvarint32(p []byte) (uint32, int) {
	if len(p) > 0 && p[0] < 0x80 {
		return uint32(p[0]), 1
	}
	v, n := binary.Uvarint(p)
	if n <= 0 || v > math.MaxUint32 {
		panic("lexical: corrupt document arena")
	}
	return uint32(v), n
}

func (ix *Index) removeLocked(key uint32) {
	d := ix.docs[key]
	end := ix.eachTerm(d, func(id uint32) { ix.removePosting(id, key) })
	ix.garbage += int(end - d.off)
	ix.n--
	ix.total -= uint64(ix.docLen[key])
	ix.docs[key] = docRef{off: absent}
	ix.docLen[key] = 0
	ix.lenCode[key] = 0
}

func (ix *Index) removePosting(id, key uint32) {
	e := &ix.terms[id]
	keys, tfs := ix.region(e)
	keys, tfs = keys[:e.n], tfs[:e.n]
	if i, ok := slices.BinarySearch(keys[:e.sorted], key); ok {
		if tfs[i] == 0 {
			panic("lexical: postings list out of sync")
		}
		tfs[i] = 0 // tombstone
		e.dead++
	} else {
		i = slices.Index(keys[e.sorted:], key) // the tail holds no tombstones
		if i < 0 {
			panic("lexical: postings list out of sync")
		}
		i += int(e.sorted)
		last := len(keys) - 1
		keys[i], tfs[i] = keys[last], tfs[last]
		e.n--
	}
	switch {
	case e.dead == e.n:
		ix.unlink(id)
		ix.removeList(e)
		*e = entry{}
		ix.free = append(ix.free, id)
	case 2*e.dead > e.n:
		ix.rebuild(e)
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
	arena := make([]byte, 0, len(ix.arena)-ix.garbage)
	for k, d := range ix.docs {
		if d.off == absent {
			continue
		}
		off := len(arena)
		arena = append(arena, ix.arena[d.off:ix.eachTerm(d, nil)]...)
		ix.docs[k].off = uint32(off)
	}
	ix.arena, ix.garbage = arena, 0
}
