package retrieve

import (
	"encoding/binary"
	"math"
	"slices"
	"sync"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/vector"
)

// Filtering is the hot loop of every search: lexical search asks for each
// posting it meets, exact vector search for each vector, and HNSW for
// each node it considers. So the filterable fields of every document are
// integer-coded in one compact fdoc array (the strings are held once, in
// the code table), so a check is one 40-byte read and a few integer
// compares. An array of structs rather than one array
// per field: a check touches every field, and one cache line beats
// several.
//
// A filter naming a workspace and scope keys (user, agent, app, project,
// session) also has a candidate list: the sorted keys of the live
// documents of its narrowest key. A search whose list is small
// enumerates it — exact vector search scores only those vectors, HNSW
// scores them exactly instead of walking the graph — and turns it into a
// bitset that the lexical index tests per posting.

// fdoc is the integer-coded filterable state of one document.
type fdoc struct {
	ws       uint32    // workspace code; 0: no live document
	scope    [5]uint32 // codes of user, agent, app, project and session id; 0: empty
	category uint32
	agent    uint32 // the writer's principal id (source.principal_id), which owns access "agent"
	conf     float32
	typ      uint8 // enum codes (see enumCode); 0: a value outside the enumerations
	status   uint8
	access   uint8
	flags    uint8
}

const (
	fInvalidated = 1 << iota // invalidated_at set
	fValidity                // valid_from or valid_until set
)

var (
	typeEnum   = []memory.Type{memory.Belief, memory.Decision, memory.Episode, memory.Skill, memory.Entity, memory.Preference, memory.Reflection, memory.Resource}
	statusEnum = []memory.Status{memory.Provisional, memory.Active, memory.Quarantined, memory.Archived, memory.Superseded, memory.Forgotten}
	accessEnum = memory.AccessLevels
)

// enumCode is v's position in enum plus one, or 0 when it is not there
// (compared as a string then, so an unexpected value still filters right).
func enumCode[T ~string](enum []T, v T) uint8 {
	return uint8(slices.Index(enum, v) + 1)
}

// enumMask is the set of codes of vs; bit 0 stands for values outside the
// enumeration.
func enumMask[T ~string](enum []T, vs []T) uint64 {
	var m uint64
	for _, v := range vs {
		m |= 1 << enumCode(enum, v)
	}
	return m
}

// listKey names a candidate list: a workspace's documents (field 0) or
// those with a scope key (field 1+i for scope field i) of value v.
type listKey struct {
	ws    uint32
	field uint8
	v     uint32
}

// filterIndex is the integer-coded filter state of the documents and the
// candidate lists. Callers hold the engine's lock.
type filterIndex struct {
	filt  []fdoc
	codes map[string]uint32 // string → code, from 1
	names []string          // code → string; names[0] = ""
	lists map[listKey][]uint32
}

func newFilterIndex() filterIndex {
	return filterIndex{codes: map[string]uint32{}, names: []string{""}, lists: map[listKey][]uint32{}}
}

// code returns s's code, assigning one if it has none. "" is 0.
func (x *filterIndex) code(s string) uint32 {
	if s == "" {
		return 0
	}
	if c, ok := x.codes[s]; ok {
		return c
	}
	c := uint32(len(x.names))
	x.codes[s] = c
	x.names = append(x.names, s)
	return c
}

// lookup returns s's code without assigning one: ok is false for a string
// no document ever held.
func (x *filterIndex) lookup(s string) (uint32, bool) {
	if s == "" {
		return 0, true
	}
	c, ok := x.codes[s]
	return c, ok
}

func scopeFields(s *memory.Scope) [5]string {
	return [5]string{s.UserID, s.AgentID, s.AppID, s.ProjectID, s.SessionID}
}

// encode codes a live record of workspace ws (a code).
func (x *filterIndex) encode(ws uint32, r *memory.Record) fdoc {
	f := fdoc{ws: ws, category: x.code(r.Category), agent: x.code(r.Source.PrincipalID), conf: float32(r.Source.Confidence)}
	for i, v := range scopeFields(&r.Scope) {
		f.scope[i] = x.code(v)
	}
	f.typ, f.status, f.access = enumCode(typeEnum, r.Type), enumCode(statusEnum, r.Status), enumCode(accessEnum, r.Access)
	f.flags = timeFlags(micros(r.InvalidatedAt), micros(r.ValidFrom), micros(r.ValidUntil))
	return f
}

// timeFlags are the flags of a document's invalidation and validity times.
func timeFlags(invalidated, validFrom, validUntil int64) uint8 {
	var fl uint8
	if invalidated != 0 {
		fl |= fInvalidated
	}
	if validFrom != 0 || validUntil != 0 {
		fl |= fValidity
	}
	return fl
}

// set records key's coded document (zero: none, it was forgotten) and
// keeps the candidate lists current.
func (x *filterIndex) set(key uint32, nf fdoc) {
	if int(key) >= len(x.filt) {
		x.filt = append(x.filt, make([]fdoc, int(key)+1-len(x.filt))...)
	}
	old := &x.filt[key]
	if old.ws != nf.ws || old.scope != nf.scope {
		x.relist(key, old, -1)
		x.relist(key, &nf, +1)
	}
	*old = nf
}

// relist adds key to (delta > 0) or removes it from the lists of f.
func (x *filterIndex) relist(key uint32, f *fdoc, delta int) {
	if f.ws == 0 {
		return
	}
	x.relistOne(listKey{ws: f.ws}, key, delta)
	for i, v := range f.scope {
		if v != 0 {
			x.relistOne(listKey{f.ws, uint8(1 + i), v}, key, delta)
		}
	}
}

func (x *filterIndex) relistOne(lk listKey, key uint32, delta int) {
	l := x.lists[lk]
	if delta > 0 {
		if n := len(l); n == 0 || l[n-1] < key {
			l = append(l, key) // the usual case: a new document has the largest key
		} else if i, found := slices.BinarySearch(l, key); !found {
			l = slices.Insert(l, i, key)
		}
	} else if i, found := slices.BinarySearch(l, key); found {
		l = slices.Delete(l, i, i+1)
	}
	if len(l) == 0 {
		delete(x.lists, lk)
	} else {
		x.lists[lk] = l
	}
}

// rebuildLists derives the candidate lists from filt (after a snapshot is
// read). Keys ascend, so every list is built sorted. Documents are
// grouped by workspace and scope, so each costs one map lookup (none when
// it shares its neighbour's), not one per list.
func (x *filterIndex) rebuildLists() {
	type groupKey struct {
		ws    uint32
		scope [5]uint32
	}
	groups := map[groupKey]int{}
	var members [][6]int32 // group → its lists (-1: none)
	index := map[listKey]int32{}
	var lks []listKey
	var ls [][]uint32
	list := func(lk listKey) int32 {
		li, ok := index[lk]
		if !ok {
			li = int32(len(lks))
			index[lk] = li
			lks, ls = append(lks, lk), append(ls, nil)
		}
		return li
	}
	var last groupKey
	g := -1
	for key := range x.filt {
		f := &x.filt[key]
		if f.ws == 0 {
			continue
		}
		if gk := (groupKey{f.ws, f.scope}); g < 0 || gk != last {
			var ok bool
			if g, ok = groups[gk]; !ok {
				g = len(members)
				groups[gk] = g
				m := [6]int32{list(listKey{ws: f.ws}), -1, -1, -1, -1, -1}
				for i, v := range f.scope {
					if v != 0 {
						m[1+i] = list(listKey{f.ws, uint8(1 + i), v})
					}
				}
				members = append(members, m)
			}
			last = gk
		}
		for _, li := range members[g] {
			if li >= 0 {
				ls[li] = append(ls[li], uint32(key))
			}
		}
	}
	x.lists = make(map[listKey][]uint32, len(lks))
	for i, lk := range lks {
		x.lists[lk] = ls[i]
	}
}

// filter is a Filter compiled against the engine's codes.
type filter struct {
	f                         *Filter
	e                         *Engine
	filt                      []fdoc
	none                      bool // names a workspace, scope key or category no document has
	ws                        uint32
	scope                     [5]uint32
	category                  uint32
	entity                    uint32 // code of f.Entity
	ownAgent                  uint32 // 0: none
	types, statuses, accesses uint64 // enum masks
	asOf                      int64
	minConf                   float32
	// list holds the candidates (sorted keys) when the filter names scope
	// keys or a workspace that is not the whole index; nil otherwise.
	list  []uint32
	total int // live documents of the filter's narrowest key (its workspace or scope)
}

// compile compiles f. Callers hold e.mu.
func (e *Engine) compile(f *Filter) *filter {
	x := &e.fx
	c := &filter{f: f, e: e, filt: x.filt, types: ^uint64(0), minConf: float32(f.MinConfidence)}
	var ok bool
	if c.ws, ok = x.lookup(f.Workspace); !ok || c.ws == 0 {
		c.none = true
		return c
	}
	for i, v := range scopeFields(&f.Scope) {
		if c.scope[i], ok = x.lookup(v); !ok {
			c.none = true
			return c
		}
	}
	if c.category, ok = x.lookup(f.Category); !ok {
		c.none = true
		return c
	}
	if c.entity, ok = x.lookup(f.Entity); !ok {
		c.none = true // no document has the entity
		return c
	}
	if f.OwnAgent != "" {
		c.ownAgent, _ = x.lookup(f.OwnAgent) // unknown: matches no document's agent
	}
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []memory.Status{memory.Active}
	}
	c.statuses = enumMask(statusEnum, statuses)
	c.accesses = enumMask(accessEnum, f.Access)
	if len(f.Types) > 0 {
		c.types = enumMask(typeEnum, f.Types)
	}
	if f.AsOf != nil {
		c.asOf = f.AsOf.UnixMicro()
	}
	list := x.lists[listKey{ws: c.ws}]
	whole := len(list) == e.lex.Len()
	for i, v := range c.scope {
		if v != 0 {
			if l := x.lists[listKey{c.ws, uint8(1 + i), v}]; len(l) < len(list) || whole {
				list, whole = l, false
			}
		}
	}
	c.total = len(list)
	if !whole {
		c.list = list
	}
	return c
}

// ok reports whether the filter admits key.
func (c *filter) ok(key uint32) bool {
	if int(key) >= len(c.filt) {
		return false
	}
	d := &c.filt[key]
	if c.none || d.ws != c.ws {
		return false
	}
	if c.statuses>>d.status&1 == 0 || c.types>>d.typ&1 == 0 {
		return false
	}
	if c.accesses>>d.access&1 == 0 && !((d.access == accessAgentOnly || d.access == accessUserOnly && c.f.OwnUser) && c.ownAgent != 0 && d.agent == c.ownAgent) {
		return false
	}
	for i, v := range c.scope {
		if v != 0 && d.scope[i] != v {
			return false
		}
	}
	if c.category != 0 && d.category != c.category {
		return false
	}
	if d.conf < c.minConf {
		return false
	}
	if d.flags != 0 {
		if d.flags&fInvalidated != 0 && !c.f.IncludeInvalidated {
			return false
		}
		if d.flags&fValidity != 0 && c.asOf != 0 {
			dd := &c.e.docs[key]
			if dd.validFrom != 0 && dd.validFrom > c.asOf || dd.validUntil != 0 && dd.validUntil <= c.asOf {
				return false
			}
		}
	}
	if d.status == 0 || d.typ == 0 || d.access == 0 || c.f.Entity != "" {
		return c.slow(key)
	}
	return true
}

var accessAgentOnly = enumCode(accessEnum, memory.AgentOnly)

var accessUserOnly = enumCode(accessEnum, memory.UserOnly)

// slow checks what the codes cannot: values outside the enumerations and
// entities.
func (c *filter) slow(key uint32) bool {
	f := c.f
	typ, status, access := c.e.enums(key)
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []memory.Status{memory.Active}
	}
	if !slices.Contains(statuses, status) {
		return false
	}
	if !slices.Contains(f.Access, access) && !((access == memory.AgentOnly || access == memory.UserOnly && f.OwnUser) && f.OwnAgent != "" && c.e.fx.names[c.filt[key].agent] == f.OwnAgent) {
		return false
	}
	if len(f.Types) > 0 && !slices.Contains(f.Types, typ) {
		return false
	}
	return f.Entity == "" || c.e.hasEntity(key, c.entity)
}

// admitted is a filter's candidate list turned into a bitset of the keys
// it admits, for searches that test many keys.
type admitted struct {
	bits lexical.Bits
	keys []uint32 // the keys set, to clear the bitset cheaply
}

var admittedPool = sync.Pool{New: func() any { return new(admitted) }}

// materialise returns the bitset of the admitted keys of c's list, or nil
// when c has no list or the list is too long to be worth it (a lazy check
// per key is cheaper then). Release it with release.
func (c *filter) materialise() *admitted {
	if c.list == nil || c.none || 4*len(c.list) > len(c.filt) {
		return nil
	}
	a := admittedPool.Get().(*admitted)
	if n := (len(c.filt) + 63) / 64; len(a.bits) < n {
		a.bits = make([]uint64, n+n/8)
	}
	a.keys = a.keys[:0]
	for _, k := range c.list {
		if c.ok(k) {
			a.bits[k>>6] |= 1 << (k & 63)
			a.keys = append(a.keys, k)
		}
	}
	return a
}

func (a *admitted) release() {
	for _, k := range a.keys {
		a.bits[k>>6] = 0
	}
	if cap(a.keys) > 1<<20 {
		a.keys = nil
	}
	admittedPool.Put(a)
}

// denseSearch runs the vector search of a compiled filter. A short
// candidate list is scored exactly, vector by vector: for the exact index
// that skips the scan of every other vector; for HNSW it replaces a graph
// walk that would mostly visit filtered-out nodes and, past a few percent
// selectivity, widen its beam until it falls back to a scan of the whole
// index. allow is c.ok or its materialised bitset.
func (e *Engine) denseSearch(q []float32, k int, c *filter, allow func(uint32) bool) []vector.Hit {
	if c.none {
		return nil
	}
	n := e.vecs.Len()
	if c.list != nil {
		limit := n / 8 // a listed vector costs a few times a scanned one
		if e.approx {
			limit = max(hnswExactList, n/32)
		}
		if len(c.list) <= limit {
			return e.vecs.SearchIn(q, k, c.list, vector.Allow(allow))
		}
	}
	return e.vecs.Search(q, k, vector.Allow(allow))
}

// hnswExactList is the longest candidate list HNSW search scores exactly
// whatever the index size (about 1 ms of 100-d scoring).
const hnswExactList = 20_000

// Filters without a short candidate list (unscoped searches of a large
// workspace) would be checked key by key for every posting and vector a
// search meets. The engine keeps the admitted bitsets of the few most
// recent such filters instead — a workspace's searches mostly repeat a
// handful of principals' filters — and keeps them current on every write,
// like Lucene's filter cache.
const (
	filterCacheSize = 8
	filterCacheMin  = 1 << 15 // smaller candidate sets are cheap to check lazily
)

type cachedFilter struct {
	sig  string
	f    Filter
	bits []uint64
	used int64 // last use, for eviction
}

type filterCache struct {
	mu      sync.Mutex // guards the slice and used; bits change only under the engine's write lock
	entries []*cachedFilter
	clock   int64
	minDocs int // candidate count from which a filter is cached (tests lower it)
}

// signature identifies a filter for the cache.
func signature(f *Filter) string {
	var b []byte
	str := func(s string) { b = append(b, s...); b = append(b, 0) }
	str(f.Workspace)
	for _, s := range scopeFields(&f.Scope) {
		str(s)
	}
	str(f.Category)
	str(f.Entity)
	str(f.OwnAgent)
	if f.OwnUser {
		str("own-user")
	}
	for _, t := range f.Types {
		str(string(t))
	}
	b = append(b, 1)
	for _, s := range f.Statuses {
		str(string(s))
	}
	b = append(b, 1)
	for _, a := range f.Access {
		str(string(a))
	}
	b = append(b, 1)
	if f.AsOf != nil {
		b = binary.LittleEndian.AppendUint64(b, uint64(f.AsOf.UnixMicro()))
	}
	b = append(b, 1)
	if f.IncludeInvalidated {
		b = append(b, 1)
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(f.MinConfidence))
	return string(b)
}

// cachedBits returns the admitted bitset of c from the cache, building it
// when c's candidates are many. nil: not worth caching. Callers hold e.mu
// (read); the bitset stays valid while they do.
func (e *Engine) cachedBits(c *filter) []uint64 {
	fc := &e.fcache
	if c.none || c.total < fc.minDocs || (c.list != nil && 4*len(c.list) <= len(c.filt)) {
		return nil
	}
	sig := signature(c.f)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.clock++
	for _, ce := range fc.entries {
		if ce.sig == sig {
			ce.used = fc.clock
			return ce.bits
		}
	}
	ce := &cachedFilter{sig: sig, f: cloneFilter(c.f), used: fc.clock, bits: make([]uint64, (len(c.filt)+63)/64)}
	list := c.list
	if list == nil {
		list = e.fx.lists[listKey{ws: c.ws}]
	}
	for _, k := range list {
		if c.ok(k) {
			ce.bits[k>>6] |= 1 << (k & 63)
		}
	}
	if len(fc.entries) < filterCacheSize {
		fc.entries = append(fc.entries, ce)
	} else {
		old := 0
		for i, x := range fc.entries {
			if x.used < fc.entries[old].used {
				old = i
			}
		}
		fc.entries[old] = ce
	}
	return ce.bits
}

func cloneFilter(f *Filter) Filter {
	g := *f
	g.Types, g.Statuses, g.Access = slices.Clone(f.Types), slices.Clone(f.Statuses), slices.Clone(f.Access)
	if f.AsOf != nil {
		t := *f.AsOf
		g.AsOf = &t
	}
	return g
}

// refreshCached updates key's bit in every cached filter. Callers hold
// e.mu for writing.
func (e *Engine) refreshCached(key uint32) {
	fc := &e.fcache
	fc.mu.Lock()
	defer fc.mu.Unlock()
	for _, ce := range fc.entries {
		if w := int(key >> 6); w >= len(ce.bits) {
			ce.bits = append(ce.bits, make([]uint64, w+1-len(ce.bits)+len(ce.bits)/8)...)
		}
		c := e.compile(&ce.f)
		if c.ok(key) {
			ce.bits[key>>6] |= 1 << (key & 63)
		} else {
			ce.bits[key>>6] &^= 1 << (key & 63)
		}
	}
}

// lexSearch runs a scoped lexical search, over the admitted set when it
// is known as a bitset (in), else with the predicate.
func (e *Engine) lexSearch(terms []string, k int, allow func(uint32) bool, in lexical.Bits, docs int) []lexical.Hit {
	if in != nil {
		return e.lex.SearchTermsIn(terms, k, in, docs)
	}
	return e.lex.SearchTermsScoped(terms, k, lexical.Allow(allow), docs)
}
