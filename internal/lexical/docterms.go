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
	type headTerm struct {
		id   uint32
		mask uint64 // the heads holding it
		w    float64
	}
	var terms []headTerm
	for h, of := range heads[:min(len(heads), 64)] {
		shared[h] = make([]float64, len(keys))
		if !ix.has(of) {
			continue
		}
		ix.eachTerm(ix.docs[of], func(id uint32) {
			if n := ix.nameOf(id); bytes.HasPrefix(n, []byte{0}) {
				return
			}
			w := weight(ix.terms[id].df())
			total[h] += w
			i, found := slices.BinarySearchFunc(terms, id, func(t headTerm, id uint32) int { return cmp.Compare(t.id, id) })
			if !found {
				terms = slices.Insert(terms, i, headTerm{id: id, w: w})
			}
			terms[i].mask |= 1 << h
		})
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
