package kgcompat

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
// A trigram found in more than a quarter of the texts (" th", "the",
// "ing"...) narrows little and would hold most of the index's memory: its
// list is dropped and the trigram marked common, which queries skip (a
// query of common trigrams only is answered by the pass). A trigram stays
// common once marked; the candidates still contain every match.

// kgGram is three bytes of text, packed.
type kgGram uint32

// kgGrams is a workspace's trigram index. Its methods are called under
// the kgIndex lock.
type kgGrams struct {
	post   map[kgGram][]uint32 // trigram -> sorted slots of the nodes whose blob has it
	common map[kgGram]bool     // trigrams whose list was dropped (see above)
	slots  []*kgNode           // by slot; nil once dropped
	// minCommon is the fewest texts a common trigram is in
	// (kgMinCommon; tests lower it).
	minCommon int
}

// kgMinCommon keeps small workspaces' lists whole.
const kgMinCommon = 4096

func newKGGrams() kgGrams {
	return kgGrams{post: map[kgGram][]uint32{}, common: map[kgGram]bool{}, minCommon: kgMinCommon}
}

// tooCommon reports whether a list of n slots makes its trigram common.
func (g *kgGrams) tooCommon(n int) bool { return n > max(g.minCommon, len(g.slots)/4) }

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
		if g.common[t] {
			return
		}
		list := g.post[t]
		n := len(list)
		if n > 0 && list[n-1] >= slot {
			if list[n-1] == slot {
				return
			}
			i, found := slices.BinarySearch(list, slot)
			switch {
			case found:
			case g.tooCommon(n + 1):
				delete(g.post, t)
				g.common[t] = true
			default:
				g.post[t] = slices.Insert(list, i, slot)
			}
			return
		}
		if g.tooCommon(n + 1) {
			delete(g.post, t)
			g.common[t] = true
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
// under each of q's rarest trigrams, sorted. ok is false when every
// trigram of q is common: the linear pass answers q.
func (g *kgGrams) candidates(q string) (slots []uint32, ok bool) {
	grams := kgDistinctGrams(q)
	lists := make([][]uint32, 0, len(grams))
	for _, t := range grams {
		if g.common[t] {
			continue
		}
		list, found := g.post[t]
		if !found {
			return nil, true // no text has this trigram
		}
		lists = append(lists, list)
	}
	if len(lists) == 0 {
		return nil, false // only common trigrams
	}
	slices.SortFunc(lists, func(a, b []uint32) int { return len(a) - len(b) })
	out := slices.Clone(lists[0])
	for _, list := range lists[1:min(len(lists), kgMaxIntersect)] {
		if len(out) == 0 {
			break
		}
		out = kgIntersect(out, list)
	}
	return out, true
}

// kgIntersect keeps the slots of a (sorted) that b (sorted) holds, in
// place: a merge when b is not much longer, else a search per slot.
func kgIntersect(a, b []uint32) []uint32 {
	out := a[:0]
	if len(b) > 16*len(a) {
		for _, s := range a {
			if _, found := slices.BinarySearch(b, s); found {
				out = append(out, s)
			}
		}
		return out
	}
	j := 0
	for _, s := range a {
		for j < len(b) && b[j] < s {
			j++
		}
		if j < len(b) && b[j] == s {
			out = append(out, s)
		}
	}
	return out
}

// compact drops the spare capacity the lists grew while loading.
func (g *kgGrams) compact() {
	for t, list := range g.post {
		if cap(list) > len(list) {
			g.post[t] = slices.Clone(list)
		}
	}
}

// kgUsesGrams reports whether a lowercased query can be answered from the
// trigram index.
func kgUsesGrams(q string) bool {
	return len(q) >= 3 && strings.IndexByte(q, 0) < 0
}

// bytes estimates the memory the trigram index holds: its posting lists
// (with their spare capacity), map entries and slot table.
func (g *kgGrams) bytes() int {
	n := 8*cap(g.slots) + 8*len(g.common)
	for _, list := range g.post {
		n += 4*cap(list) + 4 + 24 + 8 // the slots, the key, the slice header, the map's own share
	}
	return n
}
