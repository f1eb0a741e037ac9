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
	return ix.WordOverlapsAndMasks(heads, keys, weight, nil, nil)
}

// WordOverlapsAndMasks is WordOverlaps and, in the same walk of each
// key's terms, the probes each key holds: bit j of masks[i] is set when
// the document under keys[i] holds probes[j] (as HasTerm says; probes
// past the 64th are not looked at; masks nil when probes is). One walk
// serves both.
func (ix *Index) WordOverlapsAndMasks(heads, keys []uint32, weight func(df int) float64, probes []string, masks []uint64) (shared [][]float64, total []float64) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	shared, total = make([][]float64, len(heads)), make([]float64, len(heads))
	heads = heads[:min(len(heads), 64)]
	for h := range heads {
		shared[h] = make([]float64, len(keys))
	}
	// The heads' word terms, each with the heads holding it, in id
	// order: each head's list is sorted, so they merge (the weight is
	// computed once a term).
	lists := make([][]uint32, len(heads))
	var flat []uint32
	for h, of := range heads {
		if ix.has(of) {
			from := len(flat)
			ix.eachTerm(ix.docs[of], func(id uint32) { flat = append(flat, id) })
			lists[h] = flat[from:len(flat):len(flat)]
		}
	}
	terms := make([]headTerm, 0, len(flat))
	for {
		id, mask := uint32(0), uint64(0)
		for h, l := range lists {
			switch {
			case len(l) == 0:
			case mask == 0 || l[0] < id:
				id, mask = l[0], 1<<h
			case l[0] == id:
				mask |= 1 << h
			}
		}
		if mask == 0 {
			break
		}
		for m := mask; m != 0; m &= m - 1 {
			h := bits.TrailingZeros64(m)
			lists[h] = lists[h][1:]
		}
		if bytes.HasPrefix(ix.nameOf(id), []byte{0}) {
			continue
		}
		terms = append(terms, headTerm{id: id, mask: mask, w: weight(ix.terms[id].df())})
	}
	// total[h] sums the weights of heads[h]'s terms in id order, as
	// walking its own term list does.
	for _, t := range terms {
		for m := t.mask; m != 0; m &= m - 1 {
			total[bits.TrailingZeros64(m)] += t.w
		}
	}
	// The probes join the list with the bits of the probes naming them.
	if len(probes) > 0 {
		clear(masks[:len(keys)])
	}
	for j, p := range probes[:min(len(probes), 64)] {
		id, ok := ix.lookup(p)
		if !ok {
			continue
		}
		i, found := slices.BinarySearchFunc(terms, id, func(t headTerm, id uint32) int { return cmp.Compare(t.id, id) })
		if !found {
			terms = slices.Insert(terms, i, headTerm{id: id})
		}
		terms[i].probes |= 1 << j
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
			if t := &terms[j]; t.id == x {
				for m := t.mask; m != 0; m &= m - 1 {
					shared[bits.TrailingZeros64(m)][i] += t.w
				}
				if t.probes != 0 {
					masks[i] |= t.probes
				}
			}
		}
	}
	return shared, total
}

// headTerm is a term of WordOverlaps' heads.
type headTerm struct {
	id     uint32
	mask   uint64 // the heads holding it
	w      float64
	probes uint64 // WordOverlapsAndMasks' probes naming it
}
