package retrieve

// The snapshot tests' fixture: a store with records, a deterministic
// embedder, and comparisons of engines' results and states.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/store/storetest"
)

// hashEmbedder embeds a text as the normalised sum of pseudo-random unit
// vectors of its analysed terms: deterministic, and texts sharing words are
// close.
type hashEmbedder struct {
	model string
	dim   int
}

func (h hashEmbedder) Model() string { return h.model }
func (h hashEmbedder) Dim() int      { return h.dim }

func (h hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = h.vec(t)
	}
	return out, nil
}

func (h hashEmbedder) vec(text string) []float32 {
	v := make([]float32, h.dim)
	for _, term := range lexical.Analyze(text, true) {
		f := fnv.New64a()
		f.Write([]byte(term))
		r := rand.New(rand.NewPCG(f.Sum64(), 1))
		for i := range v {
			v[i] += float32(r.NormFloat64())
		}
	}
	embed.Normalize(v)
	return v
}

var testEmb = hashEmbedder{"test:hash", 24}

// ---- a store with records ---------------------------------------------------------

type fixture struct {
	t    *testing.T
	ctx  context.Context
	st   store.Store
	r    *rand.Rand
	live map[string]memory.Record // id → head (not forgotten)
	ws   map[string]string        // id → workspace
	vec  map[string]bool          // id → has a vector of its content
	// cacheJob: vectorless caches embeddings like the embedding job.
	cacheJob bool
	// noVectors: insert stores no vectors.
	noVectors bool
	clock     time.Time
}

var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike
november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu deploy pipeline
postgres mysql kafka redis cluster outage friday monday lunch coffee hiking paris tokyo berlin
cat dog bailey project compiler weather budget invoice release migration rollback latency`)

func newFixture(t *testing.T, path string) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &fixture{t: t, ctx: ctx, st: st, r: rand.New(rand.NewPCG(uint64(len(path)), 3)),
		live: map[string]memory.Record{}, ws: map[string]string{}, vec: map[string]bool{}, clock: storetest.T0}
	f.tx(func(tx store.Tx) error {
		for _, ws := range []string{"w1", "w2"} {
			if err := tx.CreateWorkspace(ctx, memory.Workspace{ID: ws, Settings: []byte(`{}`), CreatedAt: storetest.T0}); err != nil {
				return err
			}
		}
		return nil
	})
	return f
}

func (f *fixture) tx(fn func(store.Tx) error) {
	f.t.Helper()
	if err := f.st.Tx(f.ctx, fn); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) text() string {
	n := 3 + f.r.IntN(9)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[f.r.IntN(len(words))]
	}
	return strings.Join(ws, " ")
}

func (f *fixture) tick() time.Time {
	f.clock = f.clock.Add(time.Second)
	return f.clock
}

// insert writes n records, giving most a vector.
func (f *fixture) insert(n int) []memory.Record {
	var out []memory.Record
	for range n {
		r := storetest.NewRecord(f.text(), func(r *memory.Record) {
			at := f.tick()
			r.IngestedAt, r.CreatedAt, r.UpdatedAt = at, at, at
			r.Type = []memory.Type{memory.Episode, memory.Episode, memory.Belief, memory.Decision}[f.r.IntN(4)]
			r.Access = []memory.Access{memory.Public, memory.Public, memory.AgentOnly, memory.Sensitive}[f.r.IntN(4)]
			r.Status = []memory.Status{memory.Active, memory.Active, memory.Active, memory.Provisional}[f.r.IntN(4)]
			r.Category = []string{"other", "technology", "personal"}[f.r.IntN(3)]
			r.Source.PrincipalID = fmt.Sprintf("agent-%d", f.r.IntN(3))
			r.Source.Confidence = 0.5 + float64(f.r.IntN(50))/100
			r.Scope = memory.Scope{UserID: fmt.Sprintf("u%d", f.r.IntN(3)), SessionID: fmt.Sprintf("s%d", f.r.IntN(6))}
			if f.r.IntN(3) == 0 {
				r.Scope.ProjectID = "p1"
			}
			if f.r.IntN(3) == 0 {
				r.Entities = []string{"person:" + words[f.r.IntN(len(words))], "place:paris"}
			}
			if f.r.IntN(4) == 0 {
				vf := at.Add(-time.Duration(f.r.IntN(100)) * time.Hour)
				r.ValidFrom = &vf
			}
			if f.r.IntN(8) == 0 {
				r.InvalidatedAt = &at
			}
		})
		ws := []string{"w1", "w1", "w2"}[f.r.IntN(3)]
		f.tx(func(tx store.Tx) error { return tx.InsertRecord(f.ctx, ws, r) })
		f.live[r.ID], f.ws[r.ID] = r, ws
		if f.r.IntN(5) != 0 && !f.noVectors {
			f.putVector(r)
		}
		out = append(out, r)
	}
	return out
}

func (f *fixture) putVector(r memory.Record) { f.putVectorCached(r, false) }

// putVectorCached stores r's vector; cached, it also caches the embedding
// by content hash, as the embedding job does.
func (f *fixture) putVectorCached(r memory.Record, cached bool) {
	f.vec[r.ID] = true
	v := testEmb.vec(r.Content)
	f.tx(func(tx store.Tx) error {
		if cached {
			if err := tx.PutCachedEmbeddings(f.ctx, testEmb.Model(), map[string][]float32{r.ContentSHA256: v}); err != nil {
				return err
			}
		}
		return tx.PutVectors(f.ctx, testEmb.Model(), []store.Vector{{Workspace: f.ws[r.ID], RecordID: r.ID,
			ContentSHA256: r.ContentSHA256, Vec: v}})
	})
}

// pick returns a random live record.
func (f *fixture) pick() memory.Record {
	ids := make([]string, 0, len(f.live))
	for id := range f.live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return f.live[ids[f.r.IntN(len(ids))]]
}

// patch changes a record: its content (and vector), or only its metadata.
func (f *fixture) patch(content bool) memory.Record {
	r := f.pick()
	next := storetest.NextVersion(r, f.tick(), func(n *memory.Record) {
		if content {
			n.Content = f.text() + " patched"
			n.ContentSHA256 = memory.SHA256Hex(n.Content)
		} else {
			n.Status = memory.Archived
			n.Scope.SessionID = "s-moved"
			n.Entities = []string{"topic:moved"}
		}
	})
	f.tx(func(tx store.Tx) error { return tx.UpdateRecord(f.ctx, f.ws[r.ID], next, r.Version) })
	f.live[r.ID] = next
	if content {
		f.vec[r.ID] = false
	}
	if content && f.r.IntN(2) == 0 {
		f.putVector(next)
	}
	return next
}

func (f *fixture) forget(r memory.Record) {
	f.tx(func(tx store.Tx) error { return tx.PurgeRecord(f.ctx, f.ws[r.ID], r.ID, f.tick()) })
	delete(f.live, r.ID)
	delete(f.vec, r.ID)
}

// vectorless gives vectors to live records that have none, as the
// embedding job does: no change-log entry.
func (f *fixture) vectorless(n int) int {
	added := 0
	for _, id := range f.lacking() {
		if added == n {
			break
		}
		f.putVectorCached(f.live[id], f.cacheJob)
		added++
	}
	return added
}

// lacking lists the live records without a vector, by id.
func (f *fixture) lacking() []string {
	var out []string
	for id := range f.live {
		if !f.vec[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// ---- comparisons --------------------------------------------------------------

var allAccess = []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly, memory.System, memory.Sensitive}

func queries() []Query {
	var qs []Query
	texts := []string{"deploy pipeline friday", "postgres cluster outage", "what did Bailey say about Paris and Tokyo",
		"tell me about the release", "alpha", "patched", "coffee lunch hiking", "zulu yankee xray whiskey"}
	for i, text := range texts {
		for _, ws := range []string{"w1", "w2"} {
			q := Query{Text: text, K: 10, Filter: Filter{Workspace: ws, Access: allAccess}}
			switch i % 4 {
			case 1:
				q.Filter.Scope.UserID = "u1"
				q.Filter.Types = []memory.Type{memory.Episode}
			case 2:
				q.Filter.Statuses = []memory.Status{memory.Active, memory.Provisional, memory.Archived}
				q.Filter.Entity = "place:paris"
				q.Context = 0.5
			case 3:
				q.Filter.Scope.ProjectID = "p1"
				q.Feedback, q.FeedbackDocs, q.FeedbackTerms = 0.5, 3, 3
				q.MMR = 0.7
				q.Filter.IncludeInvalidated = true
			}
			qs = append(qs, q)
		}
	}
	return qs
}

func search(t *testing.T, e *Engine, q Query) Result {
	t.Helper()
	q.Now = storetest.T0.Add(24 * time.Hour)
	q.RecencyHalfLife, q.RecencyWeight = time.Hour, 0.1
	res, err := e.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// sameResults requires the same results: ids, signal ranks and raw scores
// exactly, fused scores to rounding (Search sums the signals in map order,
// so the last bits of a fused score vary from call to call).
func sameResults(t *testing.T, what string, a, b *Engine) {
	t.Helper()
	for i, q := range queries() {
		ra, rb := search(t, a, q), search(t, b, q)
		if err := compareResults(ra, rb); err != nil {
			t.Fatalf("%s: query %d (%q): %v:\n%+v\n%+v", what, i, q.Text, err, ra, rb)
		}
		if i == 0 && len(ra.Hits) == 0 {
			t.Fatalf("%s: query %q finds nothing", what, q.Text)
		}
	}
}

func compareResults(a, b Result) error {
	if a.Route != b.Route || !slices.Equal(a.Signals, b.Signals) || !slices.Equal(a.Degraded, b.Degraded) || len(a.Hits) != len(b.Hits) {
		return errors.New("route, signals or hit count differ")
	}
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y)) }
	byID := map[string]Hit{}
	for i, h := range a.Hits {
		byID[h.ID] = h
		if !near(h.Score, b.Hits[i].Score) {
			return fmt.Errorf("hit %d: score %v vs %v", i, h.Score, b.Hits[i].Score)
		}
	}
	for _, h := range b.Hits {
		g, ok := byID[h.ID]
		if !ok || g.Workspace != h.Workspace || !reflect.DeepEqual(g.Signals, h.Signals) || !near(g.Score, h.Score) {
			return fmt.Errorf("hit %s differs", h.ID)
		}
	}
	return nil
}

// sameScores compares engines whose key numbering may differ (a restored
// engine against a fresh Load): with every candidate returned, each
// record's raw signal scores must be identical. Fused scores depend on
// ranks, and ranks on how equal scores are ordered, which is by key.
func sameScores(t *testing.T, what string, a, b *Engine) {
	t.Helper()
	for i, q := range queries() {
		q.K, q.Pool, q.MMR, q.Context, q.Feedback = 1000, 1000, 0, 0, 0
		ra, rb := search(t, a, q), search(t, b, q)
		scores := func(r Result) map[string]map[string]float64 {
			m := map[string]map[string]float64{}
			for _, h := range r.Hits {
				m[h.ID] = map[string]float64{}
				for sig, s := range h.Signals {
					m[h.ID][sig] = s.Score
				}
			}
			return m
		}
		if sa, sb := scores(ra), scores(rb); !reflect.DeepEqual(sa, sb) {
			t.Fatalf("%s: query %d (%q): signal scores differ:\n%v\n%v", what, i, q.Text, sa, sb)
		}
	}
}

// state renders an engine's logical state by record, independent of key
// numbering.
func state(e *Engine) string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var lines []string
	name := func(key uint32) string { return e.wsOf(key) + "/" + e.idOf(key) }
	keys := e.keyNames()
	if len(keys) != len(e.docs) || e.keyTab.n != len(e.docs) {
		lines = append(lines, fmt.Sprintf("%d names, %d filed, %d docs", len(keys), e.keyTab.n, len(e.docs)))
	}
	for k, key := range keys {
		if got, ok := e.lookup(e.wsOf(key), e.idOf(key)); !ok || got != key {
			lines = append(lines, fmt.Sprintf("key %q not found", k))
		}
		d := e.view(key)
		line := fmt.Sprintf("key %q alive=%v", k, d.alive)
		if d.alive {
			if d.ws+"\x00"+d.id != k {
				line += " MISNAMED"
			}
			ents := d.entities
			if len(ents) == 0 {
				ents = nil
			}
			d.entities = nil
			line += fmt.Sprintf(" %+v ents=%q lex=%v", d, ents, e.lex.Has(key))
			if e.vecs != nil {
				v, ok := e.vecs.Vector(key)
				line += fmt.Sprintf(" vec=%v/%x", ok, vecBits(v))
			}
		}
		lines = append(lines, line)
	}
	for sk, list := range e.sessions {
		var names []string
		for _, k := range list {
			names = append(names, name(k))
		}
		lines = append(lines, fmt.Sprintf("session %q %q %v", e.fx.names[sk.ws], e.fx.names[sk.sid], names))
	}
	inSession := 0
	for _, list := range e.sessions {
		for _, k := range list {
			if !e.sessBits.Has(k) {
				lines = append(lines, "session turn not in sessBits: "+name(k))
			}
			inSession++
		}
	}
	for _, w := range e.sessBits {
		inSession -= bits.OnesCount64(w)
	}
	if inSession != 0 {
		lines = append(lines, fmt.Sprintf("sessBits holds %d keys too many", -inSession))
	}
	fx := &e.fx
	for lk, list := range fx.lists {
		var names []string
		for _, k := range list {
			names = append(names, name(k))
		}
		if !slices.IsSorted(list) {
			names = append(names, "UNSORTED")
		}
		lines = append(lines, fmt.Sprintf("list %q %d %q %v", fx.names[lk.ws], lk.field, fx.names[lk.v], names))
	}
	for key := range fx.filt {
		f := fx.filt[key]
		if f.ws == 0 {
			continue
		}
		var sc [5]string
		for i, v := range f.scope {
			sc[i] = fx.names[v]
		}
		lines = append(lines, fmt.Sprintf("filt %s ws=%q scope=%q cat=%q agent=%q conf=%v enums=%d,%d,%d flags=%d", name(uint32(key)),
			fx.names[f.ws], sc, fx.names[f.category], fx.names[f.agent], f.conf, f.typ, f.status, f.access, f.flags))
	}
	for c, s := range fx.names {
		if c > 0 && fx.codes[s] != uint32(c) {
			lines = append(lines, "bad code "+s)
		}
	}
	n, avg := e.lex.Stats()
	lines = append(lines, fmt.Sprintf("lex %d %v approx=%v seq=%d", n, avg, e.approx, e.changeSeq))
	if e.vecs != nil {
		lines = append(lines, fmt.Sprintf("vectors %d", e.vecs.Len()))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func vecBits(v []float32) uint64 {
	h := fnv.New64a()
	for _, x := range v {
		binary.Write(h, binary.LittleEndian, math.Float32bits(x))
	}
	return h.Sum64()
}

func diffState(t *testing.T, what, a, b string) {
	t.Helper()
	if a == b {
		return
	}
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			t.Fatalf("%s: state differs at line %d:\n  %s\n  %s", what, i, la[i], lb[i])
		}
	}
	t.Fatalf("%s: state differs: %d vs %d lines", what, len(la), len(lb))
}

func load(t *testing.T, st store.Reader, o Options) *Engine {
	t.Helper()
	e := New(o)
	if _, err := e.Load(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return e
}

// restored is a new engine (default options) read from a snapshot of e.
func restored(t *testing.T, e *Engine) *Engine {
	t.Helper()
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	e2 := New(Options{})
	if err := e2.ReadSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	return e2
}
