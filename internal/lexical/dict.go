package lexical

import (
	"bytes"
	"hash/maphash"
)

// The dictionary (term name → id) holds no Go strings and no map: the
// names live back to back in one byte arena, each term pointing at its own
// by offset (nameRef), and lookups go through an open-addressing table of
// term ids (linear probing) that compares against the arena. A map with
// string keys and a string per term are two pointers per term for the
// garbage collector to follow on every cycle, and a large index holds
// hundreds of thousands of terms (every distinct number, name and typo):
// with them the collector's marking grew with the store, and ingestion
// slowed with it (issue 14). Arena and table are pointer-free.

// nameRef locates a term's name in Index.names; n == 0 marks a free term.
type nameRef struct{ off, n uint32 }

// nameCompactMin is the least dead name bytes that trigger compaction.
const nameCompactMin = 1 << 12

// nameOf is the name of term id, a view of the arena: copy it to keep it
// past the lock.
func (ix *Index) nameOf(id uint32) []byte {
	r := ix.terms[id].name
	return ix.names[r.off : r.off+r.n : r.off+r.n]
}

// termName is the name of term id as a string.
func (ix *Index) termName(id uint32) string { return string(ix.nameOf(id)) }

// lookup returns the id of the term named name.
func (ix *Index) lookup(name string) (uint32, bool) {
	if ix.nterms == 0 {
		return 0, false
	}
	mask := uint64(len(ix.slots) - 1)
	for i := maphash.String(ix.seed, name) & mask; ; i = (i + 1) & mask {
		s := ix.slots[i]
		if s == 0 {
			return 0, false
		}
		if string(ix.nameOf(s-1)) == name {
			return s - 1, true
		}
	}
}

// lookupBytes is lookup of a name held as bytes (a token), without
// converting it.
func (ix *Index) lookupBytes(name []byte) (uint32, bool) {
	if ix.nterms == 0 {
		return 0, false
	}
	mask := uint64(len(ix.slots) - 1)
	for i := maphash.Bytes(ix.seed, name) & mask; ; i = (i + 1) & mask {
		s := ix.slots[i]
		if s == 0 {
			return 0, false
		}
		if bytes.Equal(ix.nameOf(s-1), name) {
			return s - 1, true
		}
	}
}

// link enters term id, whose name is set and not in the table, into the
// table, growing it to keep it at most half full.
func (ix *Index) link(id uint32) {
	ix.nterms++
	if 2*ix.nterms > len(ix.slots) {
		ix.rehash(max(64, 2*len(ix.slots))) // places id too
		return
	}
	placeSlot(ix.slots, maphash.Bytes(ix.seed, ix.nameOf(id)), id)
}

func placeSlot(slots []uint32, h uint64, id uint32) {
	mask := uint64(len(slots) - 1)
	i := h & mask
	for slots[i] != 0 {
		i = (i + 1) & mask
	}
	slots[i] = id + 1
}

// rehash rebuilds the table with n slots (a power of two) from the terms.
func (ix *Index) rehash(n int) {
	ix.slots = make([]uint32, n)
	for id := range ix.terms {
		if ix.terms[id].name.n != 0 {
			placeSlot(ix.slots, maphash.Bytes(ix.seed, ix.nameOf(uint32(id))), uint32(id))
		}
	}
}

// unlink removes term id from the table (backward-shift deletion, so
// probes need no tombstones) and its name from the arena.
func (ix *Index) unlink(id uint32) {
	mask := uint64(len(ix.slots) - 1)
	i := maphash.Bytes(ix.seed, ix.nameOf(id)) & mask
	for ix.slots[i] != id+1 {
		if ix.slots[i] == 0 {
			panic("lexical: dictionary out of sync")
		}
		i = (i + 1) & mask
	}
	for j := i; ; {
		j = (j + 1) & mask
		s := ix.slots[j]
		if s == 0 {
			break
		}
		h := maphash.Bytes(ix.seed, ix.nameOf(s-1)) & mask
		// s stays where it is if its home slot h lies cyclically in (i, j].
		if i <= j && i < h && h <= j || i > j && (i < h || h <= j) {
			continue
		}
		ix.slots[i] = s
		i = j
	}
	ix.slots[i] = 0
	ix.nterms--
	// The name's bytes are zeroed, not just left as garbage: a term goes
	// when its last document does, which may be an erasure, and the words
	// of an erased record must not stay readable in the process.
	r := ix.terms[id].name
	clear(ix.names[r.off : r.off+r.n])
	ix.nameGarbage += int(r.n)
}

// addName appends name to the arena, compacting it first when most of it
// is dead.
func (ix *Index) addName(name []byte) nameRef {
	if ix.nameGarbage >= nameCompactMin && 2*ix.nameGarbage > len(ix.names) {
		names := make([]byte, 0, len(ix.names)-ix.nameGarbage+len(name))
		for id := range ix.terms {
			if r := ix.terms[id].name; r.n != 0 {
				off := len(names)
				names = append(names, ix.names[r.off:r.off+r.n]...)
				ix.terms[id].name.off = uint32(off)
			}
		}
		ix.names, ix.nameGarbage = names, 0
	}
	if len(ix.names)+len(name) >= int(absent) {
		panic("lexical: term names too large")
	}
	r := nameRef{off: uint32(len(ix.names)), n: uint32(len(name))}
	ix.names = append(ix.names, name...)
	return r
}

// buildSlots is the table of terms whose names are in names (a decoded
// snapshot's), or an error naming a duplicate.
func buildSlots(seed maphash.Seed, names []byte, terms []entry) ([]uint32, error) {
	n := 64
	for n < 2*len(terms) {
		n *= 2
	}
	slots := make([]uint32, n)
	mask := uint64(n - 1)
	for id := range terms {
		r := terms[id].name
		name := names[r.off : r.off+r.n]
		i := maphash.Bytes(seed, name) & mask
		for ; slots[i] != 0; i = (i + 1) & mask {
			o := terms[slots[i]-1].name
			if bytes.Equal(names[o.off:o.off+o.n], name) {
				return nil, corrupt("term %d twice", id)
			}
		}
		slots[i] = uint32(id) + 1
	}
	return slots, nil
}
