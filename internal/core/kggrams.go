package core

import (
	"slices"
	"strings"
)

// The drop-in's search_nodes matches a query as a substring of each
// entity's lowercased text (kgNode.blob). A linear pass over those texts
// cost hundreds of milliseconds at 100,000 entities, so the knowledge-graph
// index also keeps a trigram index over them: every text containing the
// query contains each of the query's three-byte sequences, so the
// entities listed under the query's rarest trigrams are the only
// candidates, and each candidate is then tested with the very substring
// test the pass ran — the same answers, at a cost that follows the
// number of candidates instead of the number of entities. Queries shorter
// than three bytes (and queries holding the texts' NUL separator) have no
// trigram to go by and are answered by the pass.
//
// Posting lists hold node slots (numbers given to nodes in the order the
// index first saw them, never reused), sorted: a new node's slot is the
// highest, so building the index and indexing a new entity only append.

// kgGram is three bytes of text, packed.
type kgGram uint32

// kgGrams is a workspace's trigram index. Its methods are called under
// the kgIndex lock.
type kgGrams struct {
	post  map[kgGram][]uint32 // trigram -> sorted slots of the nodes whose blob has it
	slots []*kgNode           // by slot; nil once dropped
}

// kgGramsOf calls f with each trigram of s that holds no NUL (a query has
// none, so one spanning the blob's separators can never be asked for).
func kgGramsOf(s string, f func(kgGram)) {
	for i := 0; i+3 <= len(s); i++ {
		a, b, c := s[i], s[i+1], s[i+2]
		if a == 0 || b == 0 || c == 0 {
			continue
		}
		f(kgGram(a)<<16 | kgGram(b)<<8 | kgGram(c))
	}
}

// slot gives k a slot if it has none.
func (g *kgGrams) slot(k *kgNode) {
	if k.slot == 0 {
		g.slots = append(g.slots, k)
		k.slot = uint32(len(g.slots)) // slot n is slots[n-1]; 0 is "none"
	}
}

// add lists slot under every trigram of s.
func (g *kgGrams) add(slot uint32, s string) {
	kgGramsOf(s, func(t kgGram) {
		list := g.post[t]
		n := len(list)
		if n > 0 && list[n-1] >= slot {
			if list[n-1] == slot {
				return
			}
			i, found := slices.BinarySearch(list, slot)
			if !found {
				g.post[t] = slices.Insert(list, i, slot)
			}
			return
		}
		g.post[t] = append(list, slot)
	})
}

// remove takes slot off the lists of the given trigrams.
func (g *kgGrams) remove(slot uint32, grams []kgGram) {
	for _, t := range grams {
		list := g.post[t]
		if i, found := slices.BinarySearch(list, slot); found {
			list = slices.Delete(list, i, i+1)
			if len(list) == 0 {
				delete(g.post, t)
			} else {
				g.post[t] = list
			}
		}
	}
}

// distinct returns the distinct trigrams of s, sorted.
func kgDistinctGrams(s string) []kgGram {
	out := make([]kgGram, 0, len(s))
	kgGramsOf(s, func(t kgGram) { out = append(out, t) })
	slices.Sort(out)
	return slices.Compact(out)
}

// update re-lists a node whose text changed from old to its blob now.
func (g *kgGrams) update(k *kgNode, old string) {
	g.slot(k)
	now := k.blob
	if strings.HasPrefix(now, old) {
		// Text appended (a new observation, a new entity): only trigrams
		// starting in the last two bytes of old or after can be new.
		g.add(k.slot, now[max(0, len(old)-2):])
		return
	}
	was, is := kgDistinctGrams(old), kgDistinctGrams(now)
	var gone []kgGram
	for _, t := range was {
		if _, found := slices.BinarySearch(is, t); !found {
			gone = append(gone, t)
		}
	}
	g.remove(k.slot, gone)
	g.add(k.slot, now)
}

// drop takes a node out of the index.
func (g *kgGrams) drop(k *kgNode) {
	if k.slot == 0 {
		return
	}
	g.remove(k.slot, kgDistinctGrams(k.blob))
	g.slots[k.slot-1] = nil
}

// kgMaxIntersect bounds how many of a query's posting lists narrow the
// candidates: past the rarest few, each list removes little.
const kgMaxIntersect = 4

// candidates returns the slots of the nodes whose blob may contain q
// (a lowercased query of at least three bytes without NUL): those listed
// under each of q's rarest trigrams, sorted.
func (g *kgGrams) candidates(q string) []uint32 {
	grams := kgDistinctGrams(q)
	lists := make([][]uint32, 0, len(grams))
	for _, t := range grams {
		list, ok := g.post[t]
		if !ok {
			return nil // no text has this trigram
		}
		lists = append(lists, list)
	}
	if len(lists) == 0 {
		return nil
	}
	slices.SortFunc(lists, func(a, b []uint32) int { return len(a) - len(b) })
	out := slices.Clone(lists[0])
	for _, list := range lists[1:min(len(lists), kgMaxIntersect)] {
		if len(out) == 0 {
			break
		}
		out = slices.DeleteFunc(out, func(s uint32) bool {
			_, found := slices.BinarySearch(list, s)
			return !found
		})
	}
	return out
}

// kgUsesGrams reports whether a lowercased query can be answered from the
// trigram index.
func kgUsesGrams(q string) bool {
	return len(q) >= 3 && strings.IndexByte(q, 0) < 0
}
