package retrieve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

// refAllow is the filter predicate written plainly over the string fields:
// the compiled filter must agree with it on every key.
func refAllow(e *Engine, f Filter) func(uint32) bool {
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []memory.Status{memory.Active}
	}
	var asOf int64
	if f.AsOf != nil {
		asOf = f.AsOf.UnixMicro()
	}
	return func(key uint32) bool {
		if int(key) >= len(e.docs) {
			return false
		}
		dv := e.view(key)
		d := &dv
		switch {
		case !d.alive || d.ws != f.Workspace || !slices.Contains(statuses, d.status):
			return false
		case !slices.Contains(f.Access, d.access) && !((d.access == memory.AgentOnly || d.access == memory.UserOnly && f.OwnUser) && f.OwnAgent != "" && d.agent == f.OwnAgent):
			return false
		case len(f.Types) > 0 && !slices.Contains(f.Types, d.typ):
			return false
		}
		sc := f.Scope
		if sc.UserID != "" && sc.UserID != d.scope.UserID || sc.AgentID != "" && sc.AgentID != d.scope.AgentID ||
			sc.AppID != "" && sc.AppID != d.scope.AppID || sc.ProjectID != "" && sc.ProjectID != d.scope.ProjectID ||
			sc.SessionID != "" && sc.SessionID != d.scope.SessionID {
			return false
		}
		switch {
		case f.Category != "" && f.Category != d.category, f.Entity != "" && !slices.Contains(d.entities, f.Entity),
			!f.IncludeInvalidated && d.invalidated != 0,
			asOf != 0 && (d.validFrom != 0 && d.validFrom > asOf || d.validUntil != 0 && d.validUntil <= asOf):
			return false
		}
		return d.confidence >= float32(f.MinConfidence)
	}
}

// randomEngine applies n random writes (new records, updates that move
// records between scopes and workspaces, supersedes, invalidations,
// forgets, odd enumeration values) and returns the engine.
func randomEngine(t *testing.T, r *rand.Rand, n int) *Engine {
	t.Helper()
	e := New(Options{})
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	live := map[int]memory.Record{}
	wsOf := map[int]string{}
	for i := range n {
		id := i
		if len(live) > 0 && r.IntN(3) == 0 {
			id = r.IntN(i) // rewrite an earlier record (maybe forgotten)
		}
		rc := rec(id, pick("alpha beta", "beta gamma", "gamma delta alpha", "delta"), func(rc *memory.Record) {
			rc.Type = memory.Type(pick("episode", "belief", "decision", "custom"))
			rc.Status = memory.Status(pick("active", "active", "active", "superseded", "archived", "odd"))
			rc.Access = memory.Access(pick("public", "agent", "user", "sensitive", "system", "weird"))
			rc.Source.PrincipalID = pick("a", "b", "")
			rc.Source.Confidence = float64(r.IntN(10)) / 10
			rc.Category = pick("", "work", "home")
			rc.Scope = memory.Scope{UserID: pick("", "u1", "u2"), AppID: pick("", "app"), ProjectID: pick("", "p1", "p2", "p3"),
				SessionID: pick("", "s1", "s2")}
			rc.Entities = []string{pick("Alice", "Bob"), pick("Carol", "")}
			if r.IntN(4) == 0 {
				at := t0.Add(time.Duration(r.IntN(10)-5) * time.Hour)
				rc.ValidFrom = &at
			}
			if r.IntN(4) == 0 {
				at := t0.Add(time.Duration(r.IntN(10)-2) * time.Hour)
				rc.ValidUntil = &at
			}
			if r.IntN(6) == 0 {
				rc.InvalidatedAt = &t0
			}
		})
		ws, ok := wsOf[id]
		if !ok {
			ws = pick("w1", "w2")
			wsOf[id] = ws
		}
		if r.IntN(8) == 0 {
			rc.Status = memory.Forgotten
		}
		e.Upsert(ws, rc)
		if rc.Status == memory.Forgotten {
			delete(live, id)
		} else {
			live[id] = rc
		}
	}
	return e
}

func randomFilter(r *rand.Rand) Filter {
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	f := Filter{Workspace: pick("w1", "w2", "w3"), Access: everyone, OwnAgent: pick("", "a", "c"), Category: pick("", "", "work", "nowhere"),
		Entity: pick("", "", "", "Alice", "Carol"), IncludeInvalidated: r.IntN(2) == 0, MinConfidence: float64(r.IntN(5)) / 10,
		Scope: memory.Scope{UserID: pick("", "", "u1", "u9"), AppID: pick("", "app"), ProjectID: pick("", "p1", "p2"), SessionID: pick("", "", "s1")}}
	if r.IntN(3) == 0 {
		f.Access = []memory.Access{memory.Public, memory.Access(pick("weird", "user"))}
	}
	if r.IntN(3) == 0 {
		f.Access, f.OwnUser = []memory.Access{memory.Public}, true
	}
	if r.IntN(3) == 0 {
		f.Types = []memory.Type{memory.Type(pick("episode", "belief", "custom"))}
	}
	if r.IntN(3) == 0 {
		f.Statuses = []memory.Status{memory.Active, memory.Status(pick("superseded", "odd", "archived"))}
	}
	if r.IntN(3) == 0 {
		at := t0.Add(time.Duration(r.IntN(8)-4) * time.Hour)
		f.AsOf = &at
	}
	return f
}

// checkLists compares the candidate lists with the documents: every list
// holds exactly the live documents of its workspace and key, sorted.
func checkLists(t *testing.T, e *Engine) {
	t.Helper()
	want := map[listKey][]uint32{}
	for key := range e.docs {
		dv := e.view(uint32(key))
		d := &dv
		if !d.alive {
			if e.fx.filt[key] != (fdoc{}) {
				t.Fatalf("key %d: dead document with filter fields %+v", key, e.fx.filt[key])
			}
			continue
		}
		ws := e.fx.codes[d.ws]
		want[listKey{ws: ws}] = append(want[listKey{ws: ws}], uint32(key))
		for i, v := range scopeFields(&d.scope) {
			if v != "" {
				lk := listKey{ws, uint8(1 + i), e.fx.codes[v]}
				want[lk] = append(want[lk], uint32(key))
			}
		}
	}
	if len(want) != len(e.fx.lists) {
		t.Fatalf("%d lists, want %d", len(e.fx.lists), len(want))
	}
	for lk, l := range want {
		if got := e.fx.lists[lk]; !slices.Equal(got, l) {
			t.Fatalf("list %q/%d/%q = %v, want %v", e.fx.names[lk.ws], lk.field, e.fx.names[lk.v], got, l)
		}
	}
}

func TestCompiledFilterMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		e := randomEngine(t, r, 300)
		checkLists(t, e)
		for range 200 {
			f := randomFilter(r)
			ref, c := refAllow(e, f), e.compile(&f)
			n := 0
			for key := range uint32(len(e.docs) + 2) {
				if want := ref(key); c.ok(key) != want {
					t.Fatalf("round %d key %d (%+v): compiled %v, reference %v, filter %+v", round, key, e.view(uint32(min(int(key), len(e.docs)-1))), !want, want, f)
				} else if want {
					n++
					if c.list != nil && !slices.Contains(c.list, key) {
						t.Fatalf("admitted key %d missing from the candidate list", key)
					}
				}
			}
			if a := c.materialise(); a != nil {
				for key := range uint32(len(e.docs) + 2) {
					if a.bits.Has(key) != ref(key) {
						t.Fatalf("bitset disagrees on key %d", key)
					}
				}
				a.release()
			}
			if n > c.total {
				t.Fatalf("%d admitted, estimate %d", n, c.total)
			}
		}
	}
	// A released bitset is clean for the next search.
	a := admittedPool.Get().(*admitted)
	for i, w := range a.bits {
		if w != 0 {
			t.Fatalf("pooled bitset word %d not cleared", i)
		}
	}
}

// TestCandidateListsFollowChanges moves a record between scopes and
// workspaces, supersedes and forgets it, and checks the lists and searches
// after each step.
func TestCandidateListsFollowChanges(t *testing.T) {
	e := New(Options{Embedder: testEmb, Vectors: VectorExact})
	ctx := context.Background()
	inScope := func(p string) Filter {
		return Filter{Workspace: "w", Access: everyone, Scope: memory.Scope{ProjectID: p}}
	}
	find := func(f Filter, text string) []string {
		t.Helper()
		res, err := e.Search(ctx, Query{Text: text, Filter: f, Context: -1})
		if err != nil {
			t.Fatal(err)
		}
		return ids(res)
	}
	// Enough records that the scope lists are short relative to the index
	// (so the bitset and SearchIn paths run).
	for i := range 40 {
		r := rec(100+i, fmt.Sprintf("filler text number %d", i), func(r *memory.Record) { r.Scope.ProjectID = "big" })
		e.Upsert("w", r)
		e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
	}
	r := rec(1, "kafka cluster outage", func(r *memory.Record) { r.Scope.ProjectID = "p1"; r.Type = memory.Belief })
	e.Upsert("w", r)
	e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
	checkLists(t, e)
	for _, sig := range [][]string{{SignalLexical}, {SignalDense}} {
		f := inScope("p1")
		res, _ := e.Search(ctx, Query{Text: "kafka outage", Filter: f, Signals: sig, Context: -1})
		if got := ids(res); !slices.Equal(got, []string{r.ID}) {
			t.Fatalf("%v in p1: %v", sig, got)
		}
	}
	// Move to p2 (same content: vector kept).
	r.Scope.ProjectID, r.Version = "p2", 2
	e.Upsert("w", r)
	checkLists(t, e)
	if got := find(inScope("p1"), "kafka outage"); len(got) != 0 {
		t.Fatalf("p1 after the move: %v", got)
	}
	if got := find(inScope("p2"), "kafka outage"); !slices.Equal(got, []string{r.ID}) {
		t.Fatalf("p2 after the move: %v", got)
	}
	// Supersede: still listed, no longer admitted by default, admitted
	// when superseded records are asked for.
	r.Status, r.Version = memory.Superseded, 3
	e.Upsert("w", r)
	checkLists(t, e)
	if got := find(inScope("p2"), "kafka outage"); len(got) != 0 {
		t.Fatalf("superseded record found: %v", got)
	}
	f := inScope("p2")
	f.Statuses = []memory.Status{memory.Superseded}
	if got := find(f, "kafka outage"); !slices.Equal(got, []string{r.ID}) {
		t.Fatalf("superseded record not found when asked for: %v", got)
	}
	// Another workspace with the same scope names sees nothing of it.
	other := rec(2, "kafka cluster outage", func(r *memory.Record) { r.Scope.ProjectID = "p2" })
	e.Upsert("x", other)
	checkLists(t, e)
	f.Workspace = "x"
	f.Statuses = nil
	if got := find(f, "kafka outage"); !slices.Equal(got, []string{other.ID}) {
		t.Fatalf("workspace x: %v", got)
	}
	// Forget: gone from every list and every search.
	r.Status = memory.Forgotten
	e.Upsert("w", r)
	checkLists(t, e)
	f = inScope("p2")
	f.Statuses = []memory.Status{memory.Superseded, memory.Active}
	if got := find(f, "kafka outage"); len(got) != 0 {
		t.Fatalf("forgotten record found: %v", got)
	}
	if _, ok := e.fx.lists[listKey{e.fx.codes["w"], 4, e.fx.codes["p2"]}]; ok {
		t.Fatal("an empty list is kept")
	}
}

// TestScopedDenseSearchIsExact checks that a scoped dense search returns
// only admitted documents, and the exact ranking, on both index kinds.
func TestScopedDenseSearchIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	build := func(mode VectorMode) *Engine {
		e := New(Options{Embedder: testEmb, Vectors: mode})
		for i := range 2000 {
			rc := rec(i, fmt.Sprintf("%s %s %s", words[i%len(words)], words[(i*7)%len(words)], words[(i*13)%len(words)]), func(rc *memory.Record) {
				rc.Scope.ProjectID = fmt.Sprintf("p%d", i%50)
				if i%3 == 0 {
					rc.Access = memory.Sensitive
				}
			})
			e.Upsert("w", rc)
			e.SetVector("w", rc.ID, rc.ContentSHA256, testEmb.vec(rc.Content))
		}
		return e
	}
	exact, approx := build(VectorExact), build(VectorApprox)
	if !approx.approx {
		t.Fatal("not an HNSW engine")
	}
	for range 50 {
		f := Filter{Workspace: "w", Access: []memory.Access{memory.Public}, Scope: memory.Scope{ProjectID: fmt.Sprintf("p%d", r.IntN(50))}}
		q := Query{Text: words[r.IntN(len(words))] + " " + words[r.IntN(len(words))], Filter: f, Signals: []string{SignalDense}, Context: -1, K: 20}
		a, err := exact.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		b, err := approx.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(a), ids(b)) || len(ids(a)) == 0 {
			t.Fatalf("scoped dense search: exact %v, hnsw %v", ids(a), ids(b))
		}
		ok := refAllow(exact, f)
		for _, h := range a.Hits {
			if k, _ := exact.lookup("w", h.ID); !ok(k) {
				t.Fatalf("%s returned but not admitted", h.ID)
			}
		}
	}
}

// TestFilterCacheFollowsWrites caches the bitsets of many filters, keeps
// writing, and checks every cached bitset against the reference after
// each batch of writes.
func TestFilterCacheFollowsWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	e := randomEngine(t, r, 200)
	e.fcache.minDocs = 0
	var filters []Filter
	for len(filters) < filterCacheSize { // all stay cached: the bitsets are maintained, not rebuilt
		f := randomFilter(r)
		f.Scope = memory.Scope{} // no short candidate list
		filters = append(filters, f)
	}
	check := func(stage string) {
		t.Helper()
		e.mu.RLock()
		defer e.mu.RUnlock()
		for _, f := range filters {
			c := e.compile(&f)
			bits := e.cachedBits(c)
			if bits == nil {
				if !c.none {
					t.Fatalf("%s: filter %+v not cached", stage, f)
				}
				continue
			}
			ref, has := refAllow(e, f), lexical.Bits(bits).Has
			for key := range uint32(len(e.docs) + 70) {
				if has(key) != ref(key) {
					t.Fatalf("%s: cached bit of key %d is %v, filter %+v", stage, key, has(key), f)
				}
			}
		}
	}
	check("initial")
	for round := range 10 {
		// More writes: new keys (the bitsets grow), updates, forgets.
		for range 30 {
			id := r.IntN(len(e.docs) + 100)
			rc := rec(id, "alpha", func(rc *memory.Record) {
				rc.Status = memory.Status([]string{"active", "superseded", "forgotten"}[r.IntN(3)])
				rc.Access = []memory.Access{memory.Public, memory.Sensitive}[r.IntN(2)]
				rc.Scope.ProjectID = []string{"", "p1", "p2"}[r.IntN(3)]
				rc.Entities = []string{[]string{"Alice", "Bob"}[r.IntN(2)]}
				rc.Type = []memory.Type{memory.Episode, memory.Belief}[r.IntN(2)]
			})
			ws := []string{"w1", "w2"}[r.IntN(2)]
			if _, ok := e.lookup("w1", rc.ID); ok {
				ws = "w1"
			} else if _, ok := e.lookup("w2", rc.ID); ok {
				ws = "w2"
			}
			e.Upsert(ws, rc)
		}
		check(fmt.Sprintf("round %d", round))
	}
}
