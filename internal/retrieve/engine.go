// Package retrieve is memgate's read path (SPEC §5): in-memory lexical and
// vector indexes over every record head, kept current by the service's
// change notifications, and a search that routes the query, runs the
// candidate generators in parallel, filters before ranking, fuses by
// reciprocal rank and explains every result.
package retrieve

import (
	"cmp"
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/vector"
)

// VectorMode selects the vector index.
type VectorMode string

const (
	VectorAuto   VectorMode = "auto" // exact up to the auto threshold, HNSW above
	VectorExact  VectorMode = "exact"
	VectorApprox VectorMode = "hnsw"
)

// Options configure an Engine.
type Options struct {
	Embedder embed.Embedder // nil: lexical (+ graph) only
	Vectors  VectorMode
	// AutoThreshold is the vector count above which auto mode builds HNSW.
	// 0: autoScanFloats / the embedder's dimension (250,000 vectors of
	// 100 dimensions, 48,828 of 512).
	AutoThreshold int
	HNSW          vector.HNSWConfig
	Logger        *slog.Logger
}

// vectorIndex is what the engine needs of vector.Exact and vector.HNSW.
type vectorIndex interface {
	Add(key uint32, v []float32)
	Remove(key uint32)
	Len() int
	Vector(key uint32) ([]float32, bool)
	Search(q []float32, k int, allow vector.Allow) []vector.Hit
	SearchIn(q []float32, k int, keys []uint32, allow vector.Allow) []vector.Hit
}

// Engine holds the indexes of every workspace. Keys are dense document
// numbers; a record keeps its key for the life of the process.
type Engine struct {
	opts Options
	log  *slog.Logger

	mu      sync.RWMutex
	records // the documents (see docs.go)
	lex     *lexical.Index
	// facts holds the postings of the live facts again (facts.go).
	facts  *lexical.Index
	vecs   vectorIndex
	approx bool

	graph GraphSignal

	changeSeq int64 // change log position applied; guarded by mu
	// catchMu serialises CatchUp: two catch-ups reading the same change
	// could otherwise apply an older read of a record after a newer one.
	catchMu sync.Mutex
	// pending holds the keys of documents whose content changed in this
	// process's view and that have no vector yet (see pending.go);
	// guarded by mu.
	pending map[uint32]struct{}

	// sessions lists the episode keys of each conversation session
	// in turn order, for context expansion; sessBits is the set of those
	// keys.
	sessions map[sessKey][]uint32
	sessBits lexical.Bits
	// fx holds the integer-coded filter fields and the candidate lists
	// (see filter.go).
	fx     filterIndex
	fcache filterCache
	// similarWalked counts the fact postings SimilarTo walked (tests).
	similarWalked atomic.Int64
}

// GraphSignal is the slot for the graph candidate generator (personalised
// PageRank over the memory graph), filled by core. It returns candidate
// record ids with their scores, in no particular order and not yet
// filtered by the search's documents: Search calls it before it takes the
// engine's read lock (the signal reads the graph and the store, and may
// write to the engine through the service), then keeps the candidates the
// filter admits and ranks them. f is the search's filter: its workspace,
// and its access levels and owner, which limit the graph nodes and edges
// the signal may walk to those the searcher sees.
type GraphSignal func(ctx context.Context, f Filter, query string) ([]Scored, error)

// Scored is a candidate from a signal.
type Scored struct {
	ID    string
	Score float64
}

// New returns an empty engine; Load fills it from a store.
func New(o Options) *Engine {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Vectors == "" {
		o.Vectors = VectorAuto
	}
	e := &Engine{opts: o, log: o.Logger, records: newRecords(),
		sessions: map[sessKey][]uint32{}, fx: newFilterIndex(), fcache: filterCache{minDocs: filterCacheMin},
		lex: lexical.New(lexical.DefaultOptions()), facts: lexical.New(lexical.DefaultOptions())}
	return e
}

// SetGraph installs the graph signal.
func (e *Engine) SetGraph(g GraphSignal) {
	e.mu.Lock()
	e.graph = g
	e.mu.Unlock()
}

// Embedder returns the configured embedder (nil for none).
func (e *Engine) Embedder() embed.Embedder { return e.opts.Embedder }

// Load indexes every record head and every current vector of the
// configured model. It is called once at start, before traffic.
func (e *Engine) Load(ctx context.Context, st Source) (LoadStats, error) {
	start := time.Now()
	var stats LoadStats
	// Changes committed while we scan are replayed by CatchUp, so the
	// position is taken first.
	head, err := st.ChangeHead(ctx)
	if err != nil {
		return stats, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.changeSeq = head
	err = st.ScanRecords(ctx, func(ws string, r memory.Record) error {
		if r.Status == memory.Forgotten {
			return nil
		}
		e.upsertLocked(ws, r)
		stats.Records++
		return nil
	})
	if err != nil {
		return stats, err
	}
	stats.Lexical = time.Since(start)
	if emb := e.opts.Embedder; emb != nil {
		vstart := time.Now()
		type kv struct {
			key uint32
			vec []float32
		}
		var pending []kv
		err = st.ScanVectors(ctx, emb.Model(), func(ws, id string, vec []float32) error {
			if len(vec) != emb.Dim() {
				return nil // a vector of another dimension: re-embedded by the job
			}
			if key, ok := e.lookup(ws, id); ok {
				pending = append(pending, kv{key, append([]float32(nil), vec...)})
			}
			return nil
		})
		if err != nil {
			return stats, err
		}
		// An embedder that does not know its dimension yet (a remote one
		// that was down at start) has no vectors to load; SetVector
		// creates the index once the first vector arrives.
		if emb.Dim() > 0 {
			e.vecs, e.approx = e.newVectorIndex(len(pending))
			for _, p := range pending {
				e.vecs.Add(p.key, p.vec)
			}
		}
		stats.Vectors = len(pending)
		stats.VectorLoad = time.Since(vstart)
	}
	stats.Total = time.Since(start)
	return stats, nil
}

// CatchUp applies the change log written since the last Load or CatchUp,
// so records written by other processes (the CLI, other replicas) become
// searchable, and this process's own writes too: the change log is the
// index's only input after Load (or Restore). Catch-ups run one at a
// time. It returns how many changes it applied.
func (e *Engine) CatchUp(ctx context.Context, st Source) (int, error) {
	e.catchMu.Lock()
	defer e.catchMu.Unlock()
	e.mu.RLock()
	from := e.changeSeq
	e.mu.RUnlock()
	n := 0
	for {
		chs, err := st.ListChanges(ctx, from, 1000)
		if err != nil {
			return n, err
		}
		heads, err := readHeads(ctx, st, chs)
		if err != nil {
			return n, err // retried from this page next time
		}
		for _, ch := range chs {
			e.mu.Lock()
			if r, ok := heads[ch.Workspace][ch.RecordID]; ok && e.upsertLocked(ch.Workspace, r) {
				e.markPendingLocked(e.keyOfLocked(ch.Workspace, r.ID))
			}
			e.changeSeq = max(e.changeSeq, ch.Seq)
			e.mu.Unlock()
			n++
		}
		if len(chs) < 1000 {
			return n, nil
		}
		from = chs[len(chs)-1].Seq
	}
}

// readHeads reads the current heads of the records a page of changes
// names, one read a workspace (one record: the prepared single read). A
// record that is gone is absent.
func readHeads(ctx context.Context, st Source, chs []store.Change) (map[string]map[string]memory.Record, error) {
	ids := map[string][]string{}
	seen := make(map[store.Change]bool, len(chs))
	for _, ch := range chs {
		if k := (store.Change{Workspace: ch.Workspace, RecordID: ch.RecordID}); !seen[k] {
			seen[k] = true
			ids[ch.Workspace] = append(ids[ch.Workspace], ch.RecordID)
		}
	}
	out := make(map[string]map[string]memory.Record, len(ids))
	for ws, list := range ids {
		if len(list) > 1 {
			m, err := st.GetRecords(ctx, ws, list)
			if err != nil {
				return nil, err
			}
			out[ws] = m
			continue
		}
		r, err := st.GetRecord(ctx, ws, list[0])
		switch {
		case err == nil:
			out[ws] = map[string]memory.Record{r.ID: r}
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	return out, nil
}

// LoadStats reports what Load did.
type LoadStats struct {
	Records, Vectors           int
	Lexical, VectorLoad, Total time.Duration
}

// autoScanFloats bounds the floats an exact scan reads per query in auto
// mode. An exact search scores every vector, so its cost is vectors ×
// dimension: the 250,000 vectors auto mode allowed before were set for
// 100 dimensions (25M floats); at the built-in encoder's 512 the same
// count is 128M floats, and 101k × 512 already costs about 30 ms of CPU a
// query, three times what a knowledge search may take (docs/knowledge.md).
// Above the bound HNSW searches in under a millisecond, with recall@10
// against exact of 0.97–0.99 on real 512-d vectors (docs/knowledge.md).
const autoScanFloats = 25_000_000

// autoThreshold is the vector count above which auto mode builds HNSW:
// Options.AutoThreshold, else autoScanFloats over the dimension (read
// when the index is made: an OpenAI-compatible embedder learns its
// dimension from its first answer).
func (e *Engine) autoThreshold() int {
	if e.opts.AutoThreshold > 0 {
		return e.opts.AutoThreshold
	}
	dim := 100
	if e.opts.Embedder != nil && e.opts.Embedder.Dim() > 0 {
		dim = e.opts.Embedder.Dim()
	}
	return autoScanFloats / dim
}

func (e *Engine) newVectorIndex(n int) (vectorIndex, bool) {
	dim := e.opts.Embedder.Dim()
	mode := e.opts.Vectors
	if mode == VectorAuto {
		mode = VectorExact
		if n > e.autoThreshold() {
			mode = VectorApprox
		}
	}
	if mode == VectorApprox {
		return vector.NewHNSW(dim, e.opts.HNSW), true
	}
	return vector.NewExact(dim), false
}

func micros(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return t.UnixMicro()
}

// Upsert indexes the current head of a record (or removes it when it is
// forgotten). The service does not call it (it follows the change log
// with CatchUp); it is for building an index without a store.
func (e *Engine) Upsert(ws string, r memory.Record) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.upsertLocked(ws, r) {
		e.markPendingLocked(e.keyOfLocked(ws, r.ID))
	}
}

// keyOfLocked is the key of an indexed record; e.mu is held.
func (e *Engine) keyOfLocked(ws, id string) uint32 {
	key, _ := e.lookup(ws, id)
	return key
}

// upsertLocked indexes r and reports whether its content changed (so it
// needs a new vector).
func (e *Engine) upsertLocked(ws string, r memory.Record) bool {
	if r.Status == memory.Forgotten {
		if key, ok := e.lookup(ws, r.ID); ok {
			e.forgetLocked(key)
		}
		return false
	}
	wc := e.fx.code(ws)
	key, exists := e.find(wc, r.ID)
	if !exists {
		key = uint32(len(e.docs))
		nd := doc{ws: wc}
		if !packUUID(r.ID, &nd.id) {
			nd.flags = dOddID
			e.odd[key] = &oddDoc{id: r.ID}
		}
		e.docs = append(e.docs, nd)
		e.file(key)
	}
	d := &e.docs[key]
	wasAlive := d.alive()
	same := wasAlive && e.shaIs(key, r.ContentSHA256)
	if wasAlive {
		e.unlinkSession(key)
	}
	nf := e.fx.encode(wc, &r)
	flags := d.flags&dOddID | dAlive
	var sha [32]byte
	if !unhexInto(sha[:], r.ContentSHA256) {
		flags |= dOddSHA
		sha = [32]byte{}
	}
	if nf.typ == 0 || nf.status == 0 || nf.access == 0 {
		flags |= dOddEnum
	}
	if flags&(dOddID|dOddSHA|dOddEnum) != 0 {
		o := e.odd[key]
		if o == nil {
			o = &oddDoc{}
			e.odd[key] = o
		}
		*o = oddDoc{id: o.id}
		if flags&dOddSHA != 0 {
			o.sha = r.ContentSHA256
		}
		if flags&dOddEnum != 0 {
			o.typ, o.status, o.access = r.Type, r.Status, r.Access
		}
	} else {
		delete(e.odd, key)
	}
	words := d.words
	if r.Type != memory.Episode {
		if !same || words == 0 { // same content: the word set is still right, if it has one
			e.words.free(words)
			words = e.words.add(WordSet(r.Content))
		}
	} else {
		e.words.free(words)
		words = 0
	}
	e.ents.free(d.ents)
	var ents []uint32
	for _, x := range r.Entities {
		ents = append(ents, e.fx.code(x))
	}
	ev := r.IngestedAt.UnixMicro()
	if r.ValidFrom != nil {
		ev = r.ValidFrom.UnixMicro()
	}
	oldEvent := d.eventTime
	*d = doc{id: d.id, sha: sha, validFrom: micros(r.ValidFrom), validUntil: micros(r.ValidUntil), invalidated: micros(r.InvalidatedAt),
		eventTime: ev, version: int64(r.Version), ws: wc, words: words, ents: e.ents.add(ents), flags: flags}
	e.fx.set(key, nf)
	e.linkSession(key)
	e.refreshCached(key)
	if !same || r.Type == memory.Skill || filePath(&r) != "" || r.Type == memory.Episode && oldEvent != ev {
		// A skill's trigger is searchable with its content, and may change
		// while the content does not; a memory file's path is searched as
		// words with its text, and a rename keeps the content, so both are
		// re-indexed every version. A turn's derived day keys follow its
		// event time (derive.go).
		e.lex.AddWithKeys(key, lexicalText(&r), append(fieldTerms(&r), derivedFields(&r, time.UnixMicro(ev).UTC())...), linkFields(&r))
	}
	e.refreshFact(key)
	if !same {
		if wasAlive && e.vecs != nil {
			e.vecs.Remove(key) // stale: the embedding job computes the new one
		}
	}
	e.compactArenas()
	return !same
}

// forgetLocked drops a record from the indexes; its key keeps its name.
func (e *Engine) forgetLocked(key uint32) {
	e.unlinkSession(key)
	e.fx.set(key, fdoc{})
	d := &e.docs[key]
	e.words.free(d.words)
	e.ents.free(d.ents)
	*d = doc{id: d.id, ws: d.ws, flags: d.flags & dOddID}
	if o := e.odd[key]; o != nil {
		if d.flags&dOddID != 0 {
			*o = oddDoc{id: o.id}
		} else {
			delete(e.odd, key)
		}
	}
	e.refreshCached(key)
	e.lex.Remove(key)
	e.facts.Remove(key)
	delete(e.pending, key)
	if e.vecs != nil {
		e.vecs.Remove(key)
	}
	e.compactArenas()
}

// SetVector installs a record's vector if the record still has the content
// the vector was computed from.
func (e *Engine) SetVector(ws, id, sha string, vec []float32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	key, ok := e.lookup(ws, id)
	if !ok || !e.docs[key].alive() || !e.shaIs(key, sha) {
		return
	}
	if e.vecs == nil {
		if e.opts.Embedder == nil || len(vec) != e.opts.Embedder.Dim() {
			return
		}
		e.vecs, e.approx = e.newVectorIndex(0)
	}
	e.vecs.Add(key, vec)
	delete(e.pending, key)
}

// Stats describes the indexes.
type Stats struct {
	Docs        int    `json:"docs"`
	Vectors     int    `json:"vectors"`
	VectorIndex string `json:"vector_index"`
	Model       string `json:"model,omitempty"`
}

// Stats reports index sizes.
func (e *Engine) Stats() Stats {
	e.mu.RLock()
	defer e.mu.RUnlock()
	st := Stats{Docs: e.lex.Len(), VectorIndex: "none"}
	if e.opts.Embedder != nil {
		st.Model = e.opts.Embedder.Model()
		st.VectorIndex = "exact"
		if e.approx {
			st.VectorIndex = "hnsw"
		}
	}
	if e.vecs != nil {
		st.Vectors = e.vecs.Len()
	}
	return st
}

// WordSet returns the sorted, distinct 32-bit hashes of the lowercased
// words of text: nothing dropped or stemmed, so "turn a" and "turn b"
// differ. Hash collisions only make two texts look marginally closer.
func WordSet(text string) []uint32 {
	var out []uint32
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		h := fnv.New32a()
		h.Write([]byte(w))
		out = append(out, h.Sum32())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Overlap counts the words two word sets share and the words only in a
// and only in b.
func Overlap(a, b []uint32) (shared, onlyA, onlyB int) {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			shared++
			i++
			j++
		case a[i] < b[j]:
			onlyA++
			i++
		default:
			onlyB++
			j++
		}
	}
	return shared, onlyA + len(a) - i, onlyB + len(b) - j
}

// Similar is a live record compared word by word with a text.
type Similar struct {
	ID                        string
	Version                   int
	Scope                     memory.Scope
	Entities                  []string
	Shared, OnlyMine, OnlyOld int
}

// SimilarTo compares words (a WordSet) with the k best lexical candidates
// matching f, in memory. Records without a word signature (episodes) are
// skipped.
func (e *Engine) SimilarTo(f Filter, text string, words []uint32, k int) []Similar {
	terms := lexical.Analyze(text, true)
	slices.Sort(terms)
	terms = slices.Compact(terms)
	slices.SortStableFunc(terms, func(a, b string) int { return cmp.Compare(e.lex.DocFreq(a), e.lex.DocFreq(b)) })
	if len(terms) > 6 {
		terms = terms[:6]
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	// The filter as a bitset when it has a short candidate list (or a
	// cached one): a bit test per candidate instead of a check.
	c := e.compile(&f)
	allow := lexical.Allow(c.ok)
	if adm := c.materialise(); adm != nil {
		defer adm.release()
		allow = adm.bits.Has
	} else if bits := e.cachedBits(c); bits != nil {
		allow = lexical.Bits(bits).Has
	}
	var hits []lexical.Hit
	if factsOnly(&f) {
		var walked int
		hits, walked = e.lex.SearchTermsVia(e.facts, terms, k, allow)
		e.similarWalked.Add(int64(walked))
	} else {
		hits = e.lex.SearchTerms(terms, k, allow)
	}
	var out []Similar
	for _, h := range hits {
		ws := e.wordsOf(h.Key)
		if ws == nil {
			continue
		}
		sh, mine, old := Overlap(words, ws)
		out = append(out, Similar{ID: e.idOf(h.Key), Version: int(e.docs[h.Key].version), Scope: e.scopeOf(h.Key),
			Entities: e.entitiesOf(h.Key), Shared: sh, OnlyMine: mine, OnlyOld: old})
	}
	return out
}

// sessKey names a conversation session: workspace and session id codes.
type sessKey struct{ ws, sid uint32 }

var episodeCode = enumCode(typeEnum, memory.Episode)

// sessionKey returns the session of a live episode with a session id.
func (e *Engine) sessionKey(key uint32) (sessKey, bool) {
	if int(key) >= len(e.fx.filt) {
		return sessKey{}, false
	}
	f := &e.fx.filt[key]
	if f.typ != episodeCode || f.scope[4] == 0 {
		return sessKey{}, false
	}
	return sessKey{f.ws, f.scope[4]}, true
}

// turnCompare orders the turns of a session: event time, then id (UUIDv7,
// so write order).
func (e *records) turnCompare(a, b uint32) int {
	if c := cmp.Compare(e.docs[a].eventTime, e.docs[b].eventTime); c != 0 {
		return c
	}
	return e.idCompare(a, b)
}

// linkSession inserts an episode into its session's turn order.
func (e *Engine) linkSession(key uint32) {
	sk, ok := e.sessionKey(key)
	if !ok {
		return
	}
	list := e.sessions[sk]
	i, _ := slices.BinarySearchFunc(list, key, e.turnCompare)
	e.sessions[sk] = slices.Insert(list, i, key)
	e.sessBits = setBit(e.sessBits, key)
}

// setBit adds key to a set, growing it as needed.
func setBit(b lexical.Bits, key uint32) lexical.Bits {
	if w := int(key >> 6); w >= len(b) {
		b = append(b, make([]uint64, w+1-len(b)+len(b)/4)...)
	}
	b[key>>6] |= 1 << (key & 63)
	return b
}

func (e *Engine) unlinkSession(key uint32) {
	sk, ok := e.sessionKey(key)
	if !ok {
		return
	}
	list := e.sessions[sk]
	if i := slices.Index(list, key); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if w := int(key >> 6); w < len(e.sessBits) {
		e.sessBits[w] &^= 1 << (key & 63)
	}
	if len(list) == 0 {
		delete(e.sessions, sk)
	} else {
		e.sessions[sk] = list
	}
}

// neighbours returns the episodes just before and after key in its session.
func (e *Engine) neighbours(key uint32) (prev, next uint32, hasPrev, hasNext bool) {
	sk, ok := e.sessionKey(key)
	if !ok {
		return
	}
	list := e.sessions[sk]
	i := slices.Index(list, key)
	if i < 0 {
		return
	}
	if i > 0 {
		prev, hasPrev = list[i-1], true
	}
	if i+1 < len(list) {
		next, hasNext = list[i+1], true
	}
	return
}

// scopeDocs estimates how many documents a filter admits: the live count
// of its narrowest scope key, or of its workspace. It feeds scoped
// lexical statistics, where an estimate is enough.
func (e *Engine) scopeDocs(f Filter) int {
	return e.compile(&f).total
}

// lexicalText is what the lexical index reads of a record: its content,
// and for a procedure (a skill with a trigger) the trigger too, so a
// query that matches the trigger finds the procedure.
func lexicalText(r *memory.Record) string {
	if p, ok := memory.ProcedureOf(*r); ok && p.Trigger != "" {
		return r.Content + "\n" + p.Trigger
	}
	if path := filePath(r); path != "" {
		return r.Content + "\n" + path
	}
	return r.Content
}
