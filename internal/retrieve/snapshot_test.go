package retrieve

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/memgate/memgate/internal/snapio"
	"hash/fnv"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/store/storetest"
	"github.com/memgate/memgate/internal/vector"
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

// ---- tests --------------------------------------------------------------------

// The main property: a snapshot of any age, restored and caught up, is the
// engine a fresh Load gives, and the engine the snapshotted one becomes by
// following the same changes.
func TestSnapshotRestoreCatchUp(t *testing.T) {
	for _, mode := range []VectorMode{VectorExact, VectorApprox} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			f := newFixture(t, filepath.Join(dir, "memgate.db"))
			opts := Options{Embedder: testEmb, Vectors: mode, HNSW: vector.HNSWConfig{Seed: 7}}
			f.insert(300)
			f.forget(f.pick()) // before Load, which skips it
			a := load(t, f.st, opts)
			path := filepath.Join(dir, "index.snapshot")
			if err := a.SaveSnapshot(path); err != nil {
				t.Fatal(err)
			}
			// The engine goes on (it would be a server); the snapshot stays.
			inSnapshot := maps.Clone(f.live)
			var forgotten []memory.Record
			for i := range 120 {
				switch i % 6 {
				case 0, 1:
					f.insert(1)
				case 2:
					f.patch(true)
				case 3:
					f.patch(false)
				case 4:
					r := f.pick()
					if _, ok := inSnapshot[r.ID]; ok {
						forgotten = append(forgotten, r)
					}
					f.forget(r)
				case 5:
					f.vectorless(1)
				}
			}
			nFilled := f.vectorless(3)
			if nFilled == 0 {
				t.Fatal("fixture: every record has a vector")
			}

			b := New(opts)
			rs, err := b.Restore(f.ctx, f.st, path)
			if err != nil {
				t.Fatal(err)
			}
			if rs.Applied == 0 || rs.Forgotten != len(forgotten) || rs.VectorsFilled == 0 || rs.Records != 299 {
				t.Fatalf("restore stats %+v (forgot %d)", rs, len(forgotten))
			}
			st := b.SnapshotStatus()
			if !st.Saved || !st.Dirty || st.Forgotten != len(forgotten) || !b.ForgetPending() {
				t.Fatalf("status after restore %+v", st)
			}

			fresh := load(t, f.st, opts)
			if mode == VectorExact {
				sameScores(t, "restored vs fresh Load", b, fresh)
			}
			stB, stFresh := state(b), state(fresh)
			// A fresh Load has no slots for forgotten records; drop them.
			var kept []string
			for _, l := range strings.Split(stB, "\n") {
				if !strings.Contains(l, "alive=false") {
					kept = append(kept, l)
				}
			}
			diffState(t, "restored vs fresh Load", strings.Join(kept, "\n"), stFresh)
			if b.Stats() != fresh.Stats() {
				t.Fatalf("stats %+v vs %+v", b.Stats(), fresh.Stats())
			}

			// The original engine following the same changes (the embedding
			// job would have handed it the new vectors) matches exactly, key
			// numbering and HNSW graph included.
			if _, err := a.CatchUp(f.ctx, f.st); err != nil {
				t.Fatal(err)
			}
			f.st.ScanVectors(f.ctx, testEmb.Model(), func(ws, id string, vec []float32) error {
				if r, ok := f.live[id]; ok {
					a.SetVector(ws, id, r.ContentSHA256, slices.Clone(vec))
				}
				return nil
			})
			diffState(t, "restored vs followed", state(b), state(a))
			sameResults(t, "restored vs followed", a, b)

			// Saving again drops the forgotten records' derived data.
			if err := b.SaveSnapshot(path); err != nil {
				t.Fatal(err)
			}
			if b.Dirty() || b.ForgetPending() {
				t.Fatalf("status after save %+v", b.SnapshotStatus())
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if mode == VectorApprox && raw[12+12+headKindOffset(t, raw)] != kindLive {
				t.Fatal("HNSW graph with forgotten tombstones was written")
			}
			c := New(opts)
			if _, err := c.Restore(f.ctx, f.st, path); err != nil {
				t.Fatal(err)
			}
			if mode == VectorExact {
				diffState(t, "second restore", state(c), state(b))
				sameResults(t, "second restore", c, b)
			} else {
				sameScores(t, "second restore (graph rebuilt)", c, fresh)
				// The rebuilt graph has no forgotten tombstones: the next
				// snapshot holds a graph again.
				if err := c.SaveSnapshot(path); err != nil {
					t.Fatal(err)
				}
				raw, _ = os.ReadFile(path)
				if raw[12+12+headKindOffset(t, raw)] != kindHNSW {
					t.Fatal("clean graph not written as a graph")
				}
				d := New(opts)
				if _, err := d.Restore(f.ctx, f.st, path); err != nil {
					t.Fatal(err)
				}
				diffState(t, "graph restore", state(d), state(c))
				sameResults(t, "graph restore", d, c)
			}
		})
	}
}

// headKindOffset finds the kind byte in a snapshot's head section.
func headKindOffset(t *testing.T, raw []byte) int {
	t.Helper()
	body := raw[24:]
	d := snapio.NewReader(body, snapCorrupt)
	d.Varint()
	d.Uvarint()
	d.Uvarint()
	d.Str(1 << 20)
	d.Uvarint()
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	return len(body) - int(d.Rest())
}

// A snapshot holds nothing of a forgotten record but its key.
func TestSnapshotHoldsNothingOfForgotten(t *testing.T) {
	for _, mode := range []VectorMode{VectorExact, VectorApprox} {
		t.Run(string(mode), func(t *testing.T) {
			e := New(Options{Embedder: testEmb, Vectors: mode})
			for i := range 50 {
				r := rec(i+1, fmt.Sprintf("ordinary words number %d shared", i))
				e.Upsert("w", r)
				e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
			}
			secret := rec(100, "zanzibarsecret kilimanjaro shared", func(r *memory.Record) {
				r.Entities = []string{"person:hushhush"}
				r.Category = "clandestine"
			})
			e.Upsert("w", secret)
			vec := testEmb.vec(secret.Content)
			e.SetVector("w", secret.ID, secret.ContentSHA256, vec)
			var before bytes.Buffer
			if err := e.WriteSnapshot(&before); err != nil {
				t.Fatal(err)
			}
			gone := secret
			gone.Status = memory.Forgotten
			e.Upsert("w", gone)
			var after bytes.Buffer
			if err := e.WriteSnapshot(&after); err != nil {
				t.Fatal(err)
			}
			vb := make([]byte, 0, 4*len(vec))
			if mode == VectorExact {
				for _, x := range vec[:4] {
					vb = binary.LittleEndian.AppendUint32(vb, math.Float32bits(x))
				}
			} else {
				// HNSW holds it quantised: int16 multiples of a power of two.
				m := 0.0
				for _, x := range vec {
					m = max(m, math.Abs(float64(x)))
				}
				_, exp := math.Frexp(m)
				exp -= 15
				if math.RoundToEven(math.Ldexp(m, -exp)) > math.MaxInt16 {
					exp++
				}
				for _, x := range vec[:4] {
					vb = binary.LittleEndian.AppendUint16(vb, uint16(int16(math.RoundToEven(math.Ldexp(float64(x), -exp)))))
				}
			}
			var sha [32]byte
			unhexInto(sha[:], secret.ContentSHA256)
			for _, needle := range [][]byte{[]byte("zanzibarsecret"), []byte("kilimanjaro"), []byte("hushhush"),
				[]byte("clandestine"), sha[:], vb} {
				if !bytes.Contains(before.Bytes(), needle) {
					t.Fatalf("test broken: %q not in the snapshot before the forget", needle)
				}
				if bytes.Contains(after.Bytes(), needle) {
					t.Fatalf("%q survives the forget", needle)
				}
			}
			r := New(Options{Embedder: testEmb, Vectors: mode})
			if err := r.ReadSnapshot(bytes.NewReader(after.Bytes())); err != nil {
				t.Fatal(err)
			}
			if mode == VectorExact {
				diffState(t, "round trip", state(r), state(e))
			}
			res := search(t, r, Query{Text: "zanzibarsecret", K: 100, Filter: Filter{Workspace: "w", Access: allAccess}})
			if len(res.Hits) == 0 || slices.Contains(ids(res), secret.ID) {
				t.Fatalf("forgotten record found: %v", ids(res))
			}
		})
	}
}

// WriteSnapshot/ReadSnapshot without a store: every field of every
// document, odd ids and hashes included, sessions, counters, interned
// strings.
func TestSnapshotRoundTripState(t *testing.T) {
	e := New(Options{Embedder: testEmb})
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		id := fmt.Sprintf("00000000-0000-7000-8000-%012d", i)
		switch i % 17 {
		case 3:
			id = strings.ToUpper(id) // not canonical: kept as text
		case 5:
			id = fmt.Sprintf("legacy-%d", i)
		}
		at := t0.Add(time.Duration(r.IntN(1000)) * time.Minute)
		rec := memory.Record{ID: id, Type: memory.Episode, Content: fmt.Sprintf("%s %s turn %d", words[r.IntN(len(words))], words[r.IntN(len(words))], i),
			Status: memory.Active, Access: memory.Public, IngestedAt: at, Category: "c" + fmt.Sprint(i%3),
			Source: memory.Source{Agent: "a" + fmt.Sprint(i%4), Confidence: float64(i%10) / 10},
			Scope:  memory.Scope{UserID: "u" + fmt.Sprint(i%5), AgentID: "ag", AppID: "app", ProjectID: "p" + fmt.Sprint(i%2), SessionID: "s" + fmt.Sprint(i%7)}}
		rec.ContentSHA256 = memory.SHA256Hex(rec.Content)
		if i%11 == 0 {
			rec.ContentSHA256 = "not-a-hash"
		}
		if i%13 == 0 {
			rec.Entities = []string{"e:" + fmt.Sprint(i%3), "e:x"}
		}
		if i%3 == 0 {
			vf, vu := at.Add(-time.Hour), at.Add(time.Hour)
			rec.ValidFrom, rec.ValidUntil = &vf, &vu
		}
		if i%9 == 0 {
			rec.InvalidatedAt = &at
			rec.Type = memory.Belief
		}
		if i%2 == 0 {
			at2 := t0.Add(-time.Duration(i) * time.Second) // out-of-order turns
			rec.ValidFrom = &at2
		}
		e.Upsert([]string{"w", "w2"}[i%2], rec)
		if i%4 != 0 {
			e.SetVector([]string{"w", "w2"}[i%2], rec.ID, rec.ContentSHA256, testEmb.vec(rec.Content))
		}
		if i%10 == 0 && i > 0 {
			prev := memory.Record{ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", i-1), Status: memory.Forgotten}
			e.Upsert([]string{"w", "w2"}[(i-1)%2], prev)
		}
	}
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	got := New(Options{Embedder: testEmb})
	if err := got.ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	diffState(t, "round trip", state(got), state(e))
	if !reflect.DeepEqual(got.keyNames(), e.keyNames()) {
		t.Fatal("keys differ")
	}
	for k := range e.docs {
		a, b := e.view(uint32(k)), got.view(uint32(k))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("doc %d:\n%+v\n%+v", k, a, b)
		}
	}
	for _, ws := range []string{"w", "w2"} {
		for _, q := range queries() {
			q.Filter.Workspace = ws
			if a, b := search(t, e, q), search(t, got, q); compareResults(a, b) != nil {
				t.Fatalf("query %q: %v\n%+v\n%+v", q.Text, compareResults(a, b), a, b)
			}
		}
	}
	// Both engines take the same further changes alike.
	for _, x := range []*Engine{e, got} {
		x.Upsert("w", rec(5000, "alpha bravo new turn", session("s1")))
		x.Upsert("w", memory.Record{ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", 2), Status: memory.Forgotten})
	}
	diffState(t, "after changes", state(got), state(e))
}

func TestSnapshotRejectsOtherConfiguration(t *testing.T) {
	e := New(Options{Embedder: testEmb, Vectors: VectorExact})
	for i := range 20 {
		r := rec(i+1, fmt.Sprintf("words %d", i))
		e.Upsert("w", r)
		e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
	}
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"other model":     {Embedder: hashEmbedder{"test:other", 24}},
		"other dimension": {Embedder: hashEmbedder{"test:hash", 32}},
		"no embedder":     {},
		"hnsw wanted":     {Embedder: testEmb, Vectors: VectorApprox},
		"auto wants hnsw": {Embedder: testEmb, AutoThreshold: 5},
	} {
		x := New(o)
		err := x.ReadSnapshot(bytes.NewReader(buf.Bytes()))
		if !errors.Is(err, ErrSnapshotMismatch) {
			t.Fatalf("%s: %v", name, err)
		}
		if x.Stats().Docs != 0 {
			t.Fatalf("%s: engine not left empty", name)
		}
	}
	ok := New(Options{Embedder: testEmb}) // auto: exact for 20 vectors
	if err := ok.ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if err := ok.ReadSnapshot(bytes.NewReader(buf.Bytes())); err == nil {
		t.Fatal("ReadSnapshot into a filled engine")
	}
	// A snapshot without vectors, for an engine without an embedder.
	plain := New(Options{})
	plain.Upsert("w", rec(1, "hello there"))
	buf.Reset()
	if err := plain.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if err := New(Options{Embedder: testEmb}).ReadSnapshot(bytes.NewReader(buf.Bytes())); !errors.Is(err, ErrSnapshotMismatch) {
		t.Fatalf("embedder configured, snapshot without: %v", err)
	}
	if err := New(Options{}).ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	// Another format version.
	v2 := slices.Clone(buf.Bytes())
	binary.LittleEndian.PutUint32(v2[8:], snapVersion+1)
	if err := New(Options{}).ReadSnapshot(bytes.NewReader(v2)); !errors.Is(err, ErrSnapshotMismatch) {
		t.Fatalf("other version: %v", err)
	}
}

func TestSnapshotCorruptFileRejected(t *testing.T) {
	for _, mode := range []VectorMode{VectorExact, VectorApprox} {
		e := New(Options{Embedder: testEmb, Vectors: mode})
		rr := rand.New(rand.NewPCG(3, 4))
		for i := range 60 {
			r := rec(i+1, fmt.Sprintf("%s %s %d", words[rr.IntN(len(words))], words[rr.IntN(len(words))], i), session("s"))
			e.Upsert("w", r)
			e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
		}
		e.Upsert("w", memory.Record{ID: rec(7, "").ID, Status: memory.Forgotten})
		var buf bytes.Buffer
		if err := e.WriteSnapshot(&buf); err != nil {
			t.Fatal(err)
		}
		data := buf.Bytes()
		try := func(what string, bad []byte) {
			t.Helper()
			x := New(Options{Embedder: testEmb, Vectors: mode})
			err := x.ReadSnapshot(bytes.NewReader(bad))
			if err == nil {
				t.Fatalf("%s %s: accepted", mode, what)
			}
			if !errors.Is(err, ErrSnapshotCorrupt) && !errors.Is(err, ErrSnapshotMismatch) {
				t.Fatalf("%s %s: %v", mode, what, err)
			}
			if x.Stats().Docs != 0 || x.keyTab.n != 0 || len(x.docs) != 0 {
				t.Fatalf("%s %s: engine not left empty", mode, what)
			}
		}
		for n := 0; n < len(data); n += 1 + n/50 {
			try(fmt.Sprintf("truncated to %d", n), data[:n])
		}
		for range 400 {
			bad := slices.Clone(data)
			for range 1 + rr.IntN(3) {
				bad[rr.IntN(len(bad))] ^= byte(1 + rr.IntN(255))
			}
			try("damaged", bad)
		}
	}
	// A corrupt file: LoadSnapshot fails, the engine stays usable for Load.
	dir := t.TempDir()
	path := filepath.Join(dir, "index.snapshot")
	garbage := binary.LittleEndian.AppendUint32([]byte("MGENGSNP"), snapVersion)
	if err := os.WriteFile(path, append(garbage, "garbage"...), 0o600); err != nil {
		t.Fatal(err)
	}
	e := New(Options{})
	if err := e.LoadSnapshot(path); !errors.Is(err, ErrSnapshotCorrupt) {
		t.Fatalf("garbage file: %v", err)
	}
	if err := e.LoadSnapshot(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// countingStore counts the store-wide vector queries Restore makes.
type countingStore struct {
	store.Reader
	counts, scans int
}

func (c *countingStore) CountVectors(ctx context.Context, model string) (int, int, error) {
	c.counts++
	return c.Reader.CountVectors(ctx, model)
}

func (c *countingStore) ScanVectors(ctx context.Context, model string, fn func(ws, id string, vec []float32) error) error {
	c.scans++
	return c.Reader.ScanVectors(ctx, model, fn)
}

// Vectors the embedding job stored after the snapshot come from its cache,
// without a scan of every vector; vectors stored otherwise are found by the
// count-and-scan fallback.
func TestRestoreFillsVectors(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, filepath.Join(dir, "memgate.db"))
	f.cacheJob = true
	f.insert(100)
	a := load(t, f.st, Options{Embedder: testEmb})
	path := filepath.Join(dir, "index.snapshot")
	if err := a.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	n := f.vectorless(5)
	if n != 5 {
		t.Fatalf("fixture: %d vectorless", n)
	}
	restore := func() (*Engine, RestoreStats, *countingStore) {
		cs := &countingStore{Reader: f.st}
		e := New(Options{Embedder: testEmb})
		rs, err := e.Restore(f.ctx, cs, path)
		if err != nil {
			t.Fatal(err)
		}
		return e, rs, cs
	}
	e, rs, cs := restore()
	if rs.VectorsFilled != 5 || cs.scans != 0 {
		t.Fatalf("filled %d with %d counts, %d scans", rs.VectorsFilled, cs.counts, cs.scans)
	}
	diffState(t, "cache fill", state(e), state(load(t, f.st, Options{Embedder: testEmb})))
	// Without the cache: found by the fallback.
	f.cacheJob = false
	f.vectorless(3)
	e, rs, cs = restore()
	if rs.VectorsFilled != 8 || cs.scans != 1 {
		t.Fatalf("filled %d with %d counts, %d scans", rs.VectorsFilled, cs.counts, cs.scans)
	}
	diffState(t, "scan fill", state(e), state(load(t, f.st, Options{Embedder: testEmb})))
	// Records without a vector anywhere: one count, no scan.
	if err := e.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	f.noVectors = true
	f.insert(3)
	if len(f.lacking()) == 0 {
		t.Fatal("fixture: no record lacks a vector")
	}
	_, rs, cs = restore()
	if rs.VectorsFilled != 0 || cs.counts != 1 || cs.scans != 0 {
		t.Fatalf("filled %d with %d counts, %d scans", rs.VectorsFilled, cs.counts, cs.scans)
	}
}

// The snapshot writes every field of doc: a field added there must be
// added to encodeDocsLocked and decodeDocs, and then here.
func TestSnapshotCoversDocFields(t *testing.T) {
	var got []string
	for f := range reflect.TypeFor[doc]().Fields() {
		got = append(got, f.Name)
	}
	want := []string{"id", "sha", "validFrom", "validUntil", "invalidated", "eventTime", "version", "ws", "words", "ents", "flags"}
	if !slices.Equal(got, want) {
		t.Fatalf("doc has fields %v; the snapshot writes %v", got, want)
	}
}

// FuzzDecodeDocs feeds the documents decoder directly, below the section
// checksum: its own checks must reject whatever does not decode.
func FuzzDecodeDocs(f *testing.F) {
	e := New(Options{})
	for i := range 30 {
		r := rec(i+1, fmt.Sprintf("words %d", i), session("s"), func(r *memory.Record) {
			r.Entities = []string{"e:1"}
			if i%4 == 0 {
				r.ID = fmt.Sprintf("legacy-%d", i)
				r.ContentSHA256 = "x"
			}
		})
		e.Upsert("w", r)
	}
	e.Upsert("w", memory.Record{ID: rec(3, "").ID, Status: memory.Forgotten})
	e.mu.RLock()
	p, err := e.encodeDocsLocked()
	n := len(e.docs)
	e.mu.RUnlock()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p, n)
	f.Add(p[:len(p)/2], n)
	// One live document claiming 2^40 entities, or words.
	one := append([]byte{1, 0, 1, docAlive}, make([]byte, 11)...)
	one = append(one, 1, 'x', 0, 0, 0, 0, 0, 0, 0, 0, 0)
	f.Add(binary.AppendUvarint(slices.Clone(one), 1<<40), 1)
	f.Add(binary.AppendUvarint(append(slices.Clone(one), 0, 0), 1<<40), 1)
	f.Fuzz(func(t *testing.T, p []byte, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		s, err := decodeDocs(p, n)
		if err != nil {
			if !errors.Is(err, ErrSnapshotCorrupt) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(s.docs) != n || s.keyTab.n != n {
			t.Fatalf("%d docs, %d keys for %d", len(s.docs), s.keyTab.n, n)
		}
	})
}

// A snapshot of another database, or of this one before it was replaced
// by an older copy, is refused by Restore.
func TestRestoreRefusesOtherDatabase(t *testing.T) {
	dir := t.TempDir()
	f1 := newFixture(t, filepath.Join(dir, "one.db"))
	f1.insert(40)
	a := load(t, f1.st, Options{Embedder: testEmb})
	path := filepath.Join(dir, "index.snapshot")
	if err := a.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	// Another database with more changes than the snapshot's position.
	f2 := newFixture(t, filepath.Join(dir, "two.db"))
	f2.insert(60)
	if _, err := New(Options{Embedder: testEmb}).Restore(f2.ctx, f2.st, path); !errors.Is(err, ErrSnapshotMismatch) || !errors.Is(err, ErrSnapshotForeign) {
		t.Fatalf("other database: %v", err)
	}
	// One with fewer.
	f3 := newFixture(t, filepath.Join(dir, "three.db"))
	f3.insert(5)
	if _, err := New(Options{Embedder: testEmb}).Restore(f3.ctx, f3.st, path); !errors.Is(err, ErrSnapshotMismatch) || !errors.Is(err, ErrSnapshotForeign) {
		t.Fatalf("older database: %v", err)
	}
	// The right one.
	if _, err := New(Options{Embedder: testEmb}).Restore(f1.ctx, f1.st, path); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotStatusAndSaveFile(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, filepath.Join(dir, "memgate.db"))
	f.insert(30)
	e := load(t, f.st, Options{Embedder: testEmb})
	if st := e.SnapshotStatus(); st.Saved || !st.Dirty {
		t.Fatalf("fresh %+v", st)
	}
	path := filepath.Join(dir, "index.snapshot")
	if err := e.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	if st := e.SnapshotStatus(); !st.Saved || st.Dirty || st.Forgotten != 0 {
		t.Fatalf("saved %+v", st)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file %v %v", fi, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".index.snapshot.*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	f.insert(1)
	if _, err := e.CatchUp(f.ctx, f.st); err != nil {
		t.Fatal(err)
	}
	if st := e.SnapshotStatus(); !st.Dirty || st.Forgotten != 0 {
		t.Fatalf("after insert %+v", st)
	}
	if err := e.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	// A vector alone (the embedding job) makes the engine dirty.
	r := f.live[f.lacking()[0]]
	e.SetVector(f.ws[r.ID], r.ID, r.ContentSHA256, testEmb.vec(r.Content))
	if st := e.SnapshotStatus(); !st.Dirty || st.Forgotten != 0 {
		t.Fatalf("after a vector %+v", st)
	}
	f.forget(f.pick())
	if _, err := e.CatchUp(f.ctx, f.st); err != nil {
		t.Fatal(err)
	}
	if st := e.SnapshotStatus(); !st.Dirty || st.Forgotten != 1 || !e.ForgetPending() {
		t.Fatalf("after forget %+v", st)
	}
	if err := e.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	if e.Dirty() || e.ForgetPending() {
		t.Fatalf("after save %+v", e.SnapshotStatus())
	}
	// A failed save keeps the old file and leaves no temporary file.
	if err := e.SaveSnapshot(filepath.Join(dir, "missing-dir", "x")); err == nil {
		t.Fatal("save into a missing directory")
	}
	x := New(Options{Embedder: testEmb})
	if _, err := x.Restore(f.ctx, f.st, path); err != nil {
		t.Fatal(err)
	}
	if x.Dirty() {
		t.Fatalf("restored current snapshot is dirty: %+v", x.SnapshotStatus())
	}
}

// Saving while the engine is written to and searched (run with -race).
func TestSnapshotConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	e := New(Options{Embedder: testEmb})
	for i := range 200 {
		r := rec(i+1, fmt.Sprintf("turn %d %s", i, words[i%len(words)]), session("s"))
		e.Upsert("w", r)
		e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 200; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := rec(i+1, fmt.Sprintf("turn %d %s", i, words[i%len(words)]), session("s"))
			e.Upsert("w", r)
			e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
			if i%5 == 0 {
				e.Upsert("w", memory.Record{ID: rec(i-100, "").ID, Status: memory.Forgotten})
			}
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			search(t, e, Query{Text: "turn alpha", Filter: Filter{Workspace: "w", Access: allAccess}, Context: 0.5})
			e.SnapshotStatus()
		}
	})
	path := filepath.Join(dir, "index.snapshot")
	for range 5 {
		if err := e.SaveSnapshot(path); err != nil {
			t.Fatal(err)
		}
		x := New(Options{Embedder: testEmb})
		if err := x.LoadSnapshot(path); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// ---- scale measurement ----------------------------------------------------------

// TestSnapshotScale measures snapshots at scale; it runs only when
// MEMGATE_SNAPSHOT_SCALE is set (a record count). MEMGATE_SNAPSHOT_DIR
// holds the database and the snapshot across phases; MEMGATE_SNAPSHOT_PHASE
// is "build" (create the database if absent: synthetic short texts with
// 100-dimensional vectors; time Load and SaveSnapshot; then write changes
// for the next phase to catch up on), "restore" (a fresh process: open
// the database and Restore, as serve starts) or "save" (restore, then time
// WriteSnapshot and SaveSnapshot, and how long a write waits for a save).
// MEMGATE_SNAPSHOT_VECTORS is exact (default) or hnsw. Peak RSS is the
// process's VmHWM.
func TestSnapshotScale(t *testing.T) {
	n := 0
	fmt.Sscan(os.Getenv("MEMGATE_SNAPSHOT_SCALE"), &n)
	if n <= 0 {
		t.Skip("set MEMGATE_SNAPSHOT_SCALE to a record count to measure snapshots at scale")
	}
	dir := os.Getenv("MEMGATE_SNAPSHOT_DIR")
	if dir == "" {
		t.Fatal("set MEMGATE_SNAPSHOT_DIR")
	}
	mode := VectorMode(os.Getenv("MEMGATE_SNAPSHOT_VECTORS"))
	if mode == "" {
		mode = VectorExact
	}
	emb := hashEmbedder{"test:scale100", 100}
	opts := Options{Embedder: emb, Vectors: mode}
	ctx := context.Background()
	dbPath, snap := filepath.Join(dir, "memgate.db"), filepath.Join(dir, "index.snapshot")
	start := time.Now()
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	opened := time.Since(start)
	switch os.Getenv("MEMGATE_SNAPSHOT_PHASE") {
	case "build":
		if head, _ := st.ChangeHead(ctx); head == 0 {
			t0 := time.Now()
			scaleFill(t, st, emb, n)
			t.Logf("database: %d records with vectors written in %v", n, time.Since(t0).Round(time.Millisecond))
		}
		e := New(opts)
		ls, err := e.Load(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Load (the path a snapshot replaces): %d records, %d vectors: lexical+docs %v, vectors %v, total %v; rss %.0f MB",
			ls.Records, ls.Vectors, ls.Lexical.Round(time.Millisecond), ls.VectorLoad.Round(time.Millisecond), ls.Total.Round(time.Millisecond), peakRSS())
		t0 := time.Now()
		if err := e.SaveSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(snap)
		t.Logf("SaveSnapshot: %v, %.1f MB; peak rss %.0f MB", time.Since(t0).Round(time.Millisecond), float64(fi.Size())/1e6, peakRSS())
		// Changes for the restore to catch up on.
		scaleChanges(t, st, emb, 1000)
	case "restore":
		e := New(opts)
		cpu0 := cpuTime()
		rs, err := e.Restore(ctx, st, snap)
		if err != nil {
			t.Fatal(err)
		}
		total := time.Since(start)
		t.Logf("Restore used %v of CPU", (cpuTime() - cpu0).Round(time.Millisecond))
		t.Logf("cold start: open database %v + Restore %v (read %v, catch-up of %d changes and checks %v) = %v; %d records, %d vectors, %d filled; peak rss %.0f MB",
			opened.Round(time.Millisecond), rs.Total.Round(time.Millisecond), rs.Read.Round(time.Millisecond), rs.Applied,
			(rs.Total - rs.Read).Round(time.Millisecond), total.Round(time.Millisecond), rs.Records, rs.Vectors, rs.VectorsFilled, peakRSS())
		res := search(t, e, Query{Text: "zorba velu kitani", K: 5, Filter: Filter{Workspace: "w1", Access: allAccess}})
		if len(res.Hits) == 0 {
			t.Fatal("restored index finds nothing")
		}
		t0 := time.Now()
		for range 20 {
			search(t, e, Query{Text: "zorba velu kitani", K: 10, Filter: Filter{Workspace: "w1", Access: allAccess}})
		}
		t.Logf("search after restore: %v per query (%v)", time.Since(t0)/20, res.Signals)
	case "save":
		e := New(opts)
		if _, err := e.Restore(ctx, st, snap); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			t0 := time.Now()
			if err := e.WriteSnapshot(io.Discard); err != nil {
				t.Fatal(err)
			}
			t.Logf("WriteSnapshot to io.Discard (encoding under the read lock): %v", time.Since(t0).Round(time.Millisecond))
		}
		g := newScaleText(3)
		for i := range 3 {
			// A writer arriving during the save waits for the read lock.
			var waited time.Duration
			var wg sync.WaitGroup
			t0 := time.Now()
			wg.Go(func() {
				time.Sleep(50 * time.Millisecond)
				w0 := time.Now()
				e.Upsert("w1", scaleRecord(g, i, time.Now()))
				waited = time.Since(w0)
			})
			if err := e.SaveSnapshot(snap + ".again"); err != nil {
				t.Fatal(err)
			}
			total := time.Since(t0)
			wg.Wait()
			t.Logf("SaveSnapshot: %v (a write issued 50ms in waited %v); peak rss %.0f MB", total.Round(time.Millisecond), waited.Round(time.Millisecond), peakRSS())
		}
	default:
		t.Fatal("MEMGATE_SNAPSHOT_PHASE is build, restore or save")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSS() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}

// scaleText draws 6–20 words from a Zipf-like vocabulary of 30,000
// pseudo-words.
type scaleText struct {
	r     *rand.Rand
	words []string
	zipf  *rand.Zipf
}

func newScaleText(seed uint64) *scaleText {
	r := rand.New(rand.NewPCG(seed, 11))
	vr := rand.New(rand.NewPCG(20240501, 1))
	const cons, vows = "bcdfghjklmnprstvz", "aeiou"
	seen := map[string]bool{}
	var words []string
	for len(words) < 30000 {
		var sb strings.Builder
		for range 2 + vr.IntN(3) {
			sb.WriteByte(cons[vr.IntN(len(cons))])
			sb.WriteByte(vows[vr.IntN(len(vows))])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return &scaleText{r: r, words: words, zipf: rand.NewZipf(r, 1.1, 2, uint64(len(words)-1))}
}

func (g *scaleText) text() string {
	n := 6 + g.r.IntN(15)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.words[g.zipf.Uint64()]
	}
	return strings.Join(ws, " ")
}

func scaleVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	embed.Normalize(v)
	return v
}

func scaleRecord(g *scaleText, i int, at time.Time) memory.Record {
	r := memory.Record{ID: memory.NewID(), Type: memory.Episode, Content: g.text(), Status: memory.Active,
		Access: memory.Public, Version: 1, Category: "chat", Metadata: []byte(`{}`), Entities: []string{},
		Source:     memory.Source{Agent: fmt.Sprintf("agent-%d", i%20), Kind: memory.Observed, Confidence: 0.8, Evidence: []string{}},
		Scope:      memory.Scope{UserID: fmt.Sprintf("u%d", i/2000), SessionID: fmt.Sprintf("s%d", i/40)},
		IngestedAt: at, CreatedAt: at, UpdatedAt: at,
		Gate: memory.GateInfo{DecisionID: memory.NewID(), Decision: memory.DecisionAccepted, Origin: memory.OriginExternal}}
	if i%5 == 0 {
		r.Type, r.Category = memory.Belief, "fact"
		r.Entities = []string{"person:" + g.words[g.zipf.Uint64()]}
	}
	r.ContentSHA256 = memory.SHA256Hex(r.Content)
	return r
}

func putJob(ctx context.Context, tx store.Tx, emb hashEmbedder, r memory.Record, v []float32) error {
	if err := tx.PutCachedEmbeddings(ctx, emb.Model(), map[string][]float32{r.ContentSHA256: v}); err != nil {
		return err
	}
	return tx.PutVectors(ctx, emb.Model(), []store.Vector{{Workspace: "w1", RecordID: r.ID, ContentSHA256: r.ContentSHA256, Vec: v}})
}

func scaleFill(t *testing.T, st store.Store, emb hashEmbedder, n int) {
	ctx := context.Background()
	if err := st.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: "w1", Settings: []byte(`{}`), CreatedAt: storetest.T0})
	}); err != nil {
		t.Fatal(err)
	}
	g := newScaleText(1)
	vr := rand.New(rand.NewPCG(5, 6))
	const batch = 2000
	for i := 0; i < n; i += batch {
		var vs []store.Vector
		err := st.Tx(ctx, func(tx store.Tx) error {
			for j := i; j < min(n, i+batch); j++ {
				r := scaleRecord(g, j, storetest.T0.Add(time.Duration(j)*time.Second))
				if err := tx.InsertRecord(ctx, "w1", r); err != nil {
					return err
				}
				vs = append(vs, store.Vector{Workspace: "w1", RecordID: r.ID, ContentSHA256: r.ContentSHA256, Vec: scaleVec(vr, emb.Dim())})
			}
			return tx.PutVectors(ctx, emb.Model(), vs)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// scaleChanges inserts, patches and forgets records after the snapshot,
// storing vectors of the new contents as the embedding job does (with its
// cache).
func scaleChanges(t *testing.T, st store.Store, emb hashEmbedder, n int) {
	ctx := context.Background()
	g := newScaleText(99)
	vr := rand.New(rand.NewPCG(7, 8))
	recs, err := st.ListRecords(ctx, "w1", store.RecordQuery{Limit: store.MaxLimit, Access: store.AccessFilter{Levels: allAccess}})
	if err != nil || len(recs) < 100 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	err = st.Tx(ctx, func(tx store.Tx) error {
		for i := range n {
			switch {
			case i < 100:
				if err := tx.PurgeRecord(ctx, "w1", recs[i].ID, time.Now()); err != nil {
					return err
				}
			case i < 300:
				r := recs[i]
				next := storetest.NextVersion(r, time.Now(), func(x *memory.Record) {
					x.Content = g.text()
					x.ContentSHA256 = memory.SHA256Hex(x.Content)
				})
				if err := tx.UpdateRecord(ctx, "w1", next, r.Version); err != nil {
					return err
				}
				if err := putJob(ctx, tx, emb, next, scaleVec(vr, emb.Dim())); err != nil {
					return err
				}
			default:
				r := scaleRecord(g, i, time.Now())
				if err := tx.InsertRecord(ctx, "w1", r); err != nil {
					return err
				}
				if err := putJob(ctx, tx, emb, r, scaleVec(vr, emb.Dim())); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
