package retrieve

import (
	"bytes"
	"hash/maphash"
	"strings"

	"github.com/memgate/memgate/internal/memory"
)

// Per-record memory. At a million records every byte of a record's state
// is a megabyte, and every pointer is work for the garbage collector, so a
// record is held in two fixed-size, pointer-free entries: its filter
// entry (fdoc in filter.go: workspace, scope keys, category and agent as
// string codes, type, status and access as enumeration codes, confidence)
// and its doc below (id, content hash, times, version). Strings are held
// once, in the filter index's code table; the record id is a packed UUID
// and the content hash its 32 bytes. Word sets and entities live in two
// shared arenas, addressed by offset. The key index (workspace and id →
// key) is an open-addressing table of keys that compares against the docs
// themselves, so ids are not held a second time as map keys.
//
// Values outside these shapes — an id that is not a canonical lower-case
// UUID, a content hash that is not 64 lower-case hex digits, a type,
// status or access outside the enumerations — are kept as strings in a
// side table (odd), so they round-trip exactly.

// doc is the per-record state the filter entry does not hold.
type doc struct {
	id          [16]byte // packed canonical UUID (dOddID: see odd)
	sha         [32]byte // content hash (dOddSHA: see odd)
	validFrom   int64    // unix micros, 0 = open
	validUntil  int64
	invalidated int64
	eventTime   int64 // valid_from, else ingested_at: for recency
	version     int64
	ws          uint32 // workspace code; kept after a forget, as part of the key's name
	// words is the offset in Engine.words of the sorted set of word hashes
	// of the content (WordSet), kept for every type but episodes: the gate
	// compares new facts with live ones in memory, without reading them
	// back. 0: none.
	words uint32
	ents  uint32 // offset of the entity codes in Engine.ents; 0: none
	flags uint8
}

// doc flags.
const (
	dAlive   = 1 << iota
	dOddID   // the id is in odd
	dOddSHA  // the content hash is in odd
	dOddEnum // the type, status or access is outside its enumeration: all three are in odd
)

func (d *doc) alive() bool { return d.flags&dAlive != 0 }

// oddDoc holds the values of a record that do not fit the packed fields.
type oddDoc struct {
	id, sha string
	typ     memory.Type
	status  memory.Status
	access  memory.Access
}

// arena holds variable-length uint32 lists back to back, each as its
// length and its values, addressed by offset; offset 0 is none. Replaced
// lists become garbage, reclaimed by the engine's compaction.
type arena struct {
	v       []uint32
	garbage int
}

func (a *arena) add(vals []uint32) uint32 {
	if len(vals) == 0 {
		return 0
	}
	if len(a.v) == 0 {
		a.v = append(a.v, 0) // offset 0 is none
	}
	off := len(a.v)
	if off+1+len(vals) > 1<<32-1 {
		panic("retrieve: arena full")
	}
	a.v = append(a.v, uint32(len(vals)))
	a.v = append(a.v, vals...)
	return uint32(off)
}

func (a *arena) get(off uint32) []uint32 {
	if off == 0 {
		return nil
	}
	n := a.v[off]
	return a.v[off+1 : off+1+n : off+1+n]
}

func (a *arena) free(off uint32) {
	if off != 0 {
		a.garbage += 1 + int(a.v[off])
	}
}

// wasteful reports whether compaction would pay: garbage is more than half.
func (a *arena) wasteful() bool {
	return a.garbage >= 1<<14 && 2*a.garbage > len(a.v)
}

// compactArenas rewrites the arenas without their garbage. Callers hold
// e.mu for writing.
func (e *records) compactArenas() {
	if e.words.wasteful() {
		e.words = e.compactArena(&e.words, func(d *doc) *uint32 { return &d.words })
	}
	if e.ents.wasteful() {
		e.ents = e.compactArena(&e.ents, func(d *doc) *uint32 { return &d.ents })
	}
}

func (e *records) compactArena(a *arena, field func(*doc) *uint32) arena {
	out := arena{v: make([]uint32, 1, len(a.v)-a.garbage)}
	for i := range e.docs {
		if p := field(&e.docs[i]); *p != 0 {
			*p = out.add(a.get(*p))
		}
	}
	return out
}

// keyTable maps (workspace code, record id) to keys: open addressing with
// linear probing over key+1 (0: empty), compared against the docs. Keys
// are never removed (a forgotten record keeps its key).
type keyTable struct {
	slots []uint32
	n     int
	seed  maphash.Seed
}

func (t *keyTable) hashPacked(ws uint32, id *[16]byte) uint64 {
	return maphash.Bytes(t.seed, id[:]) ^ uint64(ws)*0x9e3779b97f4a7c15
}

func (t *keyTable) hashOdd(ws uint32, id string) uint64 {
	return maphash.String(t.seed, id) ^ uint64(ws)*0x9e3779b97f4a7c15 ^ 0x5bd1e995
}

// hashDoc is the hash a key's doc was filed under.
func (e *records) hashDoc(key uint32) uint64 {
	d := &e.docs[key]
	if d.flags&dOddID != 0 {
		return e.keyTab.hashOdd(d.ws, e.odd[key].id)
	}
	return e.keyTab.hashPacked(d.ws, &d.id)
}

// find returns the key of the record ws/id, if any.
func (e *records) find(ws uint32, id string) (uint32, bool) {
	t := &e.keyTab
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	var p [16]byte
	packed := packUUID(id, &p)
	var h uint64
	if packed {
		h = t.hashPacked(ws, &p)
	} else {
		h = t.hashOdd(ws, id)
	}
	for i := h & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		k := s - 1
		d := &e.docs[k]
		if d.ws != ws {
			continue
		}
		if packed {
			if d.flags&dOddID == 0 && d.id == p {
				return k, true
			}
		} else if d.flags&dOddID != 0 && e.odd[k].id == id {
			return k, true
		}
	}
}

// records is the per-record state of an engine.
type records struct {
	docs   []doc
	odd    map[uint32]*oddDoc // by key
	keyTab keyTable
	words  arena // word sets
	ents   arena // entity codes
}

func newRecords() records {
	return records{odd: map[uint32]*oddDoc{}, keyTab: keyTable{seed: maphash.MakeSeed()}}
}

// lookup returns the key of the record ws/id, if any.
func (e *Engine) lookup(ws, id string) (uint32, bool) {
	c, ok := e.fx.lookup(ws)
	if !ok {
		return 0, false
	}
	return e.find(c, id)
}

// file enters key (whose doc holds its ws and id) in the key table.
func (e *records) file(key uint32) {
	t := &e.keyTab
	if 4*(t.n+1) > 3*len(t.slots) {
		e.growKeys(max(1024, 2*len(t.slots)))
	}
	e.place(key)
	t.n++
}

func (e *records) place(key uint32) {
	t := &e.keyTab
	mask := uint64(len(t.slots) - 1)
	for i := e.hashDoc(key) & mask; ; i = (i + 1) & mask {
		if t.slots[i] == 0 {
			t.slots[i] = key + 1
			return
		}
	}
}

func (e *records) growKeys(size int) {
	t := &e.keyTab
	old := t.slots
	t.slots = make([]uint32, size)
	for _, s := range old {
		if s != 0 {
			e.place(s - 1)
		}
	}
}

// rebuildKeys files every doc (after a snapshot is read), sized for them.
// It reports a duplicate name.
func (e *records) rebuildKeys() (dup uint32, ok bool) {
	size := 1024
	for 4*len(e.docs) > 3*size {
		size *= 2
	}
	e.keyTab.slots, e.keyTab.n = make([]uint32, size), 0
	for key := range e.docs {
		k := uint32(key)
		d := &e.docs[k]
		var found bool
		if d.flags&dOddID != 0 {
			_, found = e.find(d.ws, e.odd[k].id)
		} else {
			_, found = e.findPacked(d.ws, &d.id)
		}
		if found {
			return k, false
		}
		e.place(k)
		e.keyTab.n++
	}
	return 0, true
}

func (e *records) findPacked(ws uint32, p *[16]byte) (uint32, bool) {
	t := &e.keyTab
	mask := uint64(len(t.slots) - 1)
	for i := t.hashPacked(ws, p) & mask; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		d := &e.docs[s-1]
		if d.ws == ws && d.flags&dOddID == 0 && d.id == *p {
			return s - 1, true
		}
	}
}

// ---- accessors (callers hold e.mu) ----

// idOf returns key's record id.
func (e *records) idOf(key uint32) string {
	d := &e.docs[key]
	if d.flags&dOddID != 0 {
		return e.odd[key].id
	}
	var b [36]byte
	return string(appendUUID(b[:0], d.id[:]))
}

// wsOf returns key's workspace.
func (e *Engine) wsOf(key uint32) string { return e.fx.names[e.docs[key].ws] }

// idLess orders keys by record id (string order).
func (e *records) idLess(a, b uint32) bool { return e.idCompare(a, b) < 0 }

func (e *records) idCompare(a, b uint32) int {
	da, db := &e.docs[a], &e.docs[b]
	if (da.flags|db.flags)&dOddID == 0 {
		// Canonical lower-case UUIDs sort as their bytes do.
		return bytes.Compare(da.id[:], db.id[:])
	}
	return strings.Compare(e.idOf(a), e.idOf(b))
}

// shaIs reports whether key's content hash is sha.
func (e *records) shaIs(key uint32, sha string) bool {
	d := &e.docs[key]
	if d.flags&dOddSHA != 0 {
		return e.odd[key].sha == sha
	}
	var b [32]byte
	return unhexInto(b[:], sha) && b == d.sha
}

// shaOf returns key's content hash.
func (e *records) shaOf(key uint32) string {
	d := &e.docs[key]
	if d.flags&dOddSHA != 0 {
		return e.odd[key].sha
	}
	var b [64]byte
	return string(appendHex(b[:0], d.sha[:]))
}

// enums returns a live key's type, status and access.
func (e *Engine) enums(key uint32) (memory.Type, memory.Status, memory.Access) {
	if e.docs[key].flags&dOddEnum != 0 {
		o := e.odd[key]
		return o.typ, o.status, o.access
	}
	f := &e.fx.filt[key]
	return typeEnum[f.typ-1], statusEnum[f.status-1], accessEnum[f.access-1]
}

// scopeOf returns a live key's scope.
func (e *Engine) scopeOf(key uint32) memory.Scope {
	n, s := e.fx.names, &e.fx.filt[key].scope
	return memory.Scope{UserID: n[s[0]], AgentID: n[s[1]], AppID: n[s[2]], ProjectID: n[s[3]], SessionID: n[s[4]]}
}

// entitiesOf returns a live key's entities (nil for none).
func (e *Engine) entitiesOf(key uint32) []string {
	codes := e.ents.get(e.docs[key].ents)
	if len(codes) == 0 {
		return nil
	}
	out := make([]string, len(codes))
	for i, c := range codes {
		out[i] = e.fx.names[c]
	}
	return out
}

// hasEntity reports whether key's entities include the one coded c.
func (e *records) hasEntity(key uint32, c uint32) bool {
	for _, x := range e.ents.get(e.docs[key].ents) {
		if x == c {
			return true
		}
	}
	return false
}

// wordsOf returns key's word set (nil for none).
func (e *records) wordsOf(key uint32) []uint32 { return e.words.get(e.docs[key].words) }
