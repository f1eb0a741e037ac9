package lexical

import (
	"bytes"
	"cmp"
	"math/bits"
	"slices"
)

// WordOverlaps is how much of the words of each document of heads each
// document of keys holds: shared[h][i] sums weight(df) over the word
// terms of heads[h] that keys[i] holds (df the term's document
// frequency), total[h] sums it over all of heads[h]'s word terms, in
// term-id order both. It walks each document's own sorted term list once
// against the heads' terms together, so its cost is the documents'
// lengths, not the terms' postings. At most the first 64 heads are
// read (a bit mask each); the ranker asks for three.
func (ix *Index) WordOverlaps(heads, keys []uint32, weight func(df int) float64) (shared [][]float64, total []float64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	shared, total = make([][]float64, len(heads)), make([]float64, len(heads))
	heads = heads[:min(len(heads), 64)]
	// The heads' word terms, each with the heads holding it: gathered
	// head by head, sorted once by id, then merged (the weight is
	// computed once a term).
	type headOf struct {
		id uint32
		h  uint8
	}
	var all []headOf
	for h, of := range heads {
		if ix.has(of) {
			ix.eachTerm(ix.docs[of], func(id uint32) { all = append(all, headOf{id, uint8(h)}) })
		}
	}
	slices.SortFunc(all, func(a, b headOf) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.h, b.h)) })
	terms := make([]headTerm, 0, len(all))
	for _, a := range all {
		if n := len(terms); n > 0 && terms[n-1].id == a.id {
			terms[n-1].mask |= 1 << a.h
			continue
		}
		if bytes.HasPrefix(ix.nameOf(a.id), []byte{0}) {
			continue
		}
		terms = append(terms, headTerm{id: a.id, mask: 1 << a.h, w: weight(ix.terms[a.id].df())})
	}
	// total[h] sums the weights of heads[h]'s terms in id order, as
	// walking its own term list does.
	for _, t := range terms {
		for m := t.mask; m != 0; m &= m - 1 {
			total[bits.TrailingZeros64(m)] += t.w
		}
	}
	for h := range heads {
		shared[h] = make([]float64, len(keys))
	}
	if len(terms) == 0 {
		return shared, total
	}
	last := terms[len(terms)-1].id
	for i, k := range keys {
		if !ix.has(k) {
			continue
		}
		d := ix.docs[k]
		p, x, j := ix.arena[d.off:], uint32(0), 0
		for range d.n {
			v, n := uvarint32(p)
			p, x = p[n:], x+v
			if x > last {
				break
			}
			for terms[j].id < x {
				j++
			}
			if t := terms[j]; t.id == x {
				for m := t.mask; m != 0; m &= m - 1 {
					shared[bits.TrailingZeros64(m)][i] += t.w
				}
			}
		}
	}
	return shared, total
}

// headTerm is a term of WordOverlaps' heads.
type headTerm struct {
	id   uint32
	mask uint64 // the heads holding it
	w    float64
}

// TermMasks sets bit j of masks[i] when the document under keys[i] holds
// terms[j] (HasTerm of every key and term; terms past the 64th are not
// looked at). It looks each term up once and walks each document's
// sorted term list once for all the terms, up to the largest of their
// ids, where HasTerm looks up and walks once a key and term.
func (ix *Index) TermMasks(keys []uint32, terms []string, masks []uint64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	clear(masks[:len(keys)])
	type probe struct {
		id   uint32
		mask uint64 // the indexes into terms naming it
	}
	var ps []probe
	for j, t := range terms[:min(len(terms), 64)] {
		id, ok := ix.lookup(t)
		if !ok {
			continue
		}
		i, found := slices.BinarySearchFunc(ps, id, func(p probe, id uint32) int { return cmp.Compare(p.id, id) })
		if !found {
			ps = slices.Insert(ps, i, probe{id: id})
		}
		ps[i].mask |= 1 << j
	}
	if len(ps) == 0 {
		return
	}
	last := ps[len(ps)-1].id
	for i, k := range keys {
		if !ix.has(k) {
			continue
		}
		d := ix.docs[k]
		p, x, j := ix.arena[d.off:], uint32(0), 0
		for range d.n {
			v, n := uvarint32(p)
			p, x = p[n:], x+v
			if x > last {
				break
			}
			for ps[j].id < x {
				j++
			}
			if ps[j].id == x {
				masks[i] |= ps[j].mask
			}
		}
	}
}
