package lexical

import "math/bits"

// The postings of every term live in chunked slabs, keys and term
// frequencies side by side, each list a region (entry.chunk, entry.off,
// entry.cap) of one chunk. A list that outgrows its region moves to a new
// one, twice as large; the region it leaves is kept on a free list by its
// size (a power of two) for the next list that needs one that size, and
// only what no list can reuse (the odd sizes of a snapshot's exact
// regions and of compaction's) is garbage; once garbage is a quarter of
// the slabs they are rewritten without it. New regions come from the free
// list of their size, else from the end of the last chunk (or a new
// chunk). Chunks keep a move from copying
// more than the list itself: one growing slab was copied whole each time
// it grew. One list per term as a slice of its own was two pointers and
// two objects a term for the collector to follow and mark on every cycle;
// a large index holds hundreds of thousands of terms, most with one or
// two postings. Measured on 500,000 synthetic documents of 690,000 terms
// (a machine under load): a forced collection with the index live took
// 140 ms with the map and the slices, about 1 ms with the arena, the table
// and the slabs, and the heap went from 190 to 144 MB.

// postChunk is the size in postings of a chunk (a larger list gets a chunk
// of its own size); a variable for tests.
var postChunk = 1 << 18

// postCompactMin is the least garbage (postings) that triggers compaction
// (a variable for tests).
var postCompactMin = 1 << 16

// slabs holds the postings lists' regions: chunks of keys and of term
// frequencies, parallel; used counts the postings of every chunk's used
// part (regions, free regions and garbage). free[b] lists free regions of
// 1<<b postings, each as its chunk and offset.
type slabs struct {
	keys    [][]uint32
	tfs     [][]uint16
	used    int
	garbage int
	free    [32][]uint32
	nfree   int // postings in free regions
}

// release takes back the region of c postings at chunk, off: the largest
// power of two it holds goes to its free list, the rest is garbage.
func (s *slabs) release(chunk, off, c uint32) {
	if c == 0 {
		return
	}
	b := bits.Len32(c) - 1
	s.free[b] = append(s.free[b], chunk, off)
	s.nfree += 1 << b
	s.garbage += int(c) - 1<<b
}

// alloc returns a region of c postings.
func (s *slabs) alloc(c uint32) (chunk, off uint32) {
	if c&(c-1) == 0 {
		if b := bits.Len32(c) - 1; len(s.free[b]) > 0 {
			l := s.free[b]
			chunk, off = l[len(l)-2], l[len(l)-1]
			s.free[b] = l[:len(l)-2]
			s.nfree -= int(c)
			return chunk, off
		}
	}
	if k := len(s.keys) - 1; k >= 0 && len(s.keys[k])+int(c) <= cap(s.keys[k]) {
		off := len(s.keys[k])
		s.keys[k] = s.keys[k][:off+int(c)]
		s.tfs[k] = s.tfs[k][:off+int(c)]
		s.used += int(c)
		return uint32(k), uint32(off)
	}
	if len(s.keys) >= int(absent) {
		panic("lexical: too many postings")
	}
	size := max(postChunk, int(c))
	s.keys = append(s.keys, make([]uint32, c, size))
	s.tfs = append(s.tfs, make([]uint16, c, size))
	s.used += int(c)
	return uint32(len(s.keys) - 1), 0
}

// region is e's whole region (its postings, then room).
func (ix *Index) region(e *entry) ([]uint32, []uint16) {
	if e.cap == 0 {
		return nil, nil
	}
	end := e.off + e.cap
	return ix.post.keys[e.chunk][e.off:end:end], ix.post.tfs[e.chunk][e.off:end:end]
}

// view is term id's postings list, read-only (it aliases the slabs until
// the next write).
func (ix *Index) view(id uint32) term {
	e := &ix.terms[id]
	keys, tfs := ix.region(e)
	return term{keys: keys[:e.n:e.n], tfs: tfs[:e.n:e.n], sorted: int(e.sorted), dead: int(e.dead), maxKey: e.maxKey}
}

// push appends a posting to e's list, moving the list when its region is
// full.
func (ix *Index) push(e *entry, key uint32, tf uint16) {
	if e.n == e.cap {
		ix.grow(e)
	}
	keys, tfs := ix.region(e)
	keys[e.n], tfs[e.n] = key, tf
	e.n++
}

// grow gives e's list a region with room for at least one more posting.
func (ix *Index) grow(e *entry) {
	if g := ix.post.garbage; g >= postCompactMin && 4*g > ix.post.used {
		ix.compactPostings()
		if e.n < e.cap {
			return
		}
	}
	c := max(2, uint32(1)<<bits.Len32(e.cap)) // the next power of two
	if uint64(c) >= uint64(absent) {
		panic("lexical: postings list too long")
	}
	oldKeys, oldTfs := ix.region(e)
	chunk, off := ix.post.alloc(c)
	copy(ix.post.keys[chunk][off:], oldKeys[:e.n])
	copy(ix.post.tfs[chunk][off:], oldTfs[:e.n])
	ix.post.release(e.chunk, e.off, e.cap)
	e.chunk, e.off, e.cap = chunk, off, c
}

// compactPostings rewrites the slabs without their garbage, each list
// keeping an eighth of its length (at least one) as room to grow.
func (ix *Index) compactPostings() {
	var s slabs
	for id := range ix.terms {
		e := &ix.terms[id]
		if e.n == 0 {
			*e = entry{name: e.name}
			continue
		}
		keys, tfs := ix.region(e)
		c := e.n + max(1, e.n/8)
		chunk, off := s.alloc(c)
		copy(s.keys[chunk][off:], keys[:e.n])
		copy(s.tfs[chunk][off:], tfs[:e.n])
		e.chunk, e.off, e.cap = chunk, off, c
	}
	ix.post = s
}

// removeList drops e's region (the term is gone).
func (ix *Index) removeList(e *entry) {
	ix.post.release(e.chunk, e.off, e.cap)
}
