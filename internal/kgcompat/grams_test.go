package kgcompat

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// kgScanCandidates is the linear pass the trigram index replaced: every
// live entity whose text contains q, in the reference's order.
func (sp *kgSpace) kgScanCandidates(q string) []string {
	var out []string
	for _, k := range sp.ents {
		if strings.Contains(k.blob, q) {
			out = append(out, k.n.ID)
		}
	}
	return out
}

// kgIndexedCandidates is what kgMatch tests: the index's candidates that
// pass the substring test.
func (sp *kgSpace) kgIndexedCandidates(q string) []string {
	var out []string
	f := newKGFinder(q)
	for _, k := range sp.matchCandidates(q) {
		if f.contains(k.blob) {
			out = append(out, k.n.ID)
		}
	}
	return out
}

// checkGrams fails unless the trigram index lists exactly the trigrams of
// the nodes' current texts: as rebuilt from scratch, so text that left a
// node (a deleted or forgotten observation, a dropped node) is under no
// trigram any more.
func checkGrams(t *testing.T, sp *kgSpace, what string) {
	t.Helper()
	want := map[kgGram][]uint32{}
	for _, k := range sp.nodes {
		if k.slot == 0 || sp.grams.slots[k.slot-1] != k {
			t.Fatalf("%s: node %s not in the trigram index (slot %d)", what, k.n.ID, k.slot)
		}
		for _, g := range kgDistinctGrams(k.blob) {
			if !sp.grams.common[g] { // common: no list, never narrows
				want[g] = append(want[g], k.slot)
			}
		}
	}
	for g := range want {
		slices.Sort(want[g])
	}
	if !maps.EqualFunc(want, sp.grams.post, slices.Equal) {
		for g, l := range sp.grams.post {
			if !slices.Equal(l, want[g]) {
				t.Fatalf("%s: trigram %q lists slots %v, want %v", what, []byte{byte(g >> 16), byte(g >> 8), byte(g)}, l, want[g])
			}
		}
		t.Fatalf("%s: trigram index has %d trigrams, want %d", what, len(sp.grams.post), len(want))
	}
	live := 0
	for _, k := range sp.grams.slots {
		if k != nil {
			live++
		}
	}
	if live != len(sp.nodes) {
		t.Fatalf("%s: %d slots in use for %d nodes", what, live, len(sp.nodes))
	}
}

// TestKGGramsMatchScan: on random corpora (a small alphabet, so texts
// share many trigrams and near misses are common), through random node
// and observation puts, updates, deletions and reloads, the entities the
// trigram index finds for random queries are exactly those the linear
// pass finds, in the same order, and the index always equals one rebuilt
// from the current texts. Every other round marks trigrams common early
// (in more than two texts and a quarter of them), so queries mixing
// common and listed trigrams, and queries of common ones only, are asked;
// half the rounds sort the candidates, half pick them (kgPickRatio).
func TestKGGramsMatchScan(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 4))
	alphabet := []rune("abc 4?éΣσ")
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	defer func(r int) { kgPickRatio = r }(kgPickRatio)
	for round := range 20 {
		kgPickRatio = []int{0, 1 << 30}[round/2%2] // candidates picked, or sorted
		sp := newKGSpace()
		if round%2 == 1 {
			sp.grams.minCommon = 2
		}
		recs := 0
		stored := map[string]memory.Record{} // the records put, by id
		names := make([]string, 12)
		for i := range names {
			names[i] = word(1 + r.IntN(6))
		}
		node := func(i int, placeholder, archived bool) memory.Node {
			props := fmt.Sprintf(`{"entity_type":%q,"kg_seq":"%04d"}`, word(r.IntN(5)), r.IntN(10000))
			if placeholder {
				props = `{"kg_placeholder":true}`
			}
			st := memory.NodeActive
			if archived {
				st = memory.NodeArchived
			}
			return memory.Node{ID: fmt.Sprintf("n%02d", i), Label: EntityLabel, NaturalKey: NodeKey(names[i]), Properties: []byte(props), Status: st}
		}
		rec := func(id int) memory.Record {
			var ents []string
			for range 1 + r.IntN(2) {
				ents = append(ents, kgEntityRef(names[r.IntN(len(names))]))
			}
			st := []memory.Status{memory.Active, memory.Provisional, memory.Quarantined, memory.Forgotten}[r.IntN(4)] // forgotten: the text erased
			rec := memory.Record{ID: fmt.Sprintf("r%03d", id), Type: memory.Entity, Category: ObservationCategory, Status: st,
				Access: memory.Public, Content: word(r.IntN(30)), Entities: ents}
			stored[rec.ID] = rec
			return rec
		}
		for step := range 150 {
			what := fmt.Sprintf("round %d step %d", round, step)
			switch r.IntN(9) {
			case 0, 1:
				sp.putNode(node(r.IntN(len(names)), r.IntN(6) == 0, r.IntN(8) == 0))
				if k := sp.nodes[fmt.Sprintf("n%02d", r.IntN(len(names)))]; k != nil {
					sp.reblob(k)
				}
				for _, k := range sp.nodes {
					sp.reblob(k) // as kgApplyGraph does after putNode
				}
			case 2, 3, 4:
				recs++
				sp.putRecord(rec(recs))
			case 5:
				if recs > 0 { // an update: the record's new version
					sp.putRecord(rec(1 + r.IntN(recs)))
				}
			case 6:
				if recs > 0 { // a deleted or forgotten observation
					id := fmt.Sprintf("r%03d", 1+r.IntN(recs))
					sp.dropRecord(id)
					delete(stored, id)
				}
			case 7:
				sp.dropNode(fmt.Sprintf("n%02d", r.IntN(len(names))))
			case 8:
				if r.IntN(10) == 0 { // a reload: the index built in one pass
					fresh := newKGSpace()
					fresh.grams.minCommon = sp.grams.minCommon
					fresh.loading = true
					for _, k := range sp.nodes {
						fresh.putNode(k.n)
					}
					for _, rec := range stored {
						fresh.putRecord(rec)
					}
					fresh.loading = false
					for _, k := range fresh.nodes {
						fresh.reblob(k)
					}
					sp = fresh
				}
			}
			checkGrams(t, sp, what)
			for range 6 {
				q := word(r.IntN(5))
				if len(sp.ents) > 0 && r.IntN(3) == 0 { // a query taken from a text
					b := sp.ents[r.IntN(len(sp.ents))].blob
					a := r.IntN(len(b) + 1)
					q = b[a : a+r.IntN(min(8, len(b)-a)+1)]
				}
				if got, want := sp.kgIndexedCandidates(q), sp.kgScanCandidates(q); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: query %q: indexed %v, scan %v", what, q, got, want)
				}
			}
		}
	}
}

// kgHasGram reports whether any indexed text of the workspace has the
// trigrams of s (a lowercased string of at least three bytes).
func kgHasGrams(sp *kgSpace, s string) bool {
	slots, ok := sp.grams.candidates(s)
	return !ok || len(slots) > 0
}

// TestKGForgetLeavesNoTrigrams: the words of an observation forgotten
// (Forget, one record) or of an entity whose subject is forgotten
// (ForgetSubject) leave the trigram index along with the text, in the
// service that erased them and in a second service that learns of the
// erasure from the change logs; what was not erased is still found.
func TestKGForgetLeavesNoTrigrams(t *testing.T) {
	ctx := context.Background()
	s, ps := kgService(t, nil)
	op := ps["op"]
	other := New(core.New(core.Options{Store: s.svc.Store(), Policy: s.svc.Policy()}))
	if _, err := s.CreateEntities(ctx, op, []Entity{
		{Name: "Jane Roe", EntityType: "person", Observations: []string{"case qzxv-4411 opened", "likes tea"}},
		{Name: "Bob", EntityType: "person", Observations: []string{"passport wkpj-9087", "runs the VPN"}},
	}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []*Service{s, other} { // both load their index now
		if g := mustGraph(t)(svc.SearchNodes(ctx, op, "qzxv-4411", 0)); len(g.Entities) != 1 {
			t.Fatalf("before forgetting: %+v", g)
		}
	}
	recs, err := s.svc.Store().ListRecords(ctx, op.Workspace, store.RecordQuery{Types: []memory.Type{memory.Entity}, Category: ObservationCategory,
		Access: store.AccessFilter{Levels: memory.AccessLevels}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	forgot := false
	for _, r := range recs {
		if strings.Contains(r.Content, "wkpj-9087") {
			if _, err := s.svc.Forget(ctx, op, r.ID); err != nil {
				t.Fatal(err)
			}
			forgot = true
		}
	}
	if !forgot {
		t.Fatal("no record holds Bob's passport")
	}
	if _, err := s.svc.ForgetSubject(ctx, op, kgEntityRef("Jane Roe")); err != nil {
		t.Fatal(err)
	}
	for i, svc := range []*Service{s, other} {
		for _, q := range []string{"qzxv-4411", "wkpj-9087", "jane roe"} {
			if g := mustGraph(t)(svc.SearchNodes(ctx, op, q, 0)); len(g.Entities) != 0 && g.Ranked == 0 {
				t.Errorf("service %d: %q still found: %+v", i, q, g)
			}
		}
		sp, err := svc.kgSpace(ctx, op.Workspace)
		if err != nil {
			t.Fatal(err)
		}
		svc.kg.mu.RLock()
		for _, erased := range []string{"qzxv", "zxv-4411", "wkpj", "kpj-9087"} {
			if kgHasGrams(sp, erased) {
				t.Errorf("service %d: the trigram index still lists the erased %q", i, erased)
			}
		}
		if !kgHasGrams(sp, "runs the vpn") {
			t.Errorf("service %d: Bob's other observation left the trigram index", i)
		}
		checkGrams(t, sp, fmt.Sprintf("service %d", i))
		svc.kg.mu.RUnlock()
	}
}

// kgBenchSpace builds, in memory, the index of the benchmark corpus's
// first n entities as kgLoad would.
func kgBenchSpace(n int) *kgSpace {
	sp := newKGSpace()
	sp.loading = true
	for i, e := range kgBenchEntities(0, n) {
		id := fmt.Sprintf("n%07d", i)
		sp.putNode(memory.Node{ID: id, Label: EntityLabel, NaturalKey: NodeKey(e.Name), Status: memory.NodeActive,
			Properties: fmt.Appendf(nil, `{"entity_type":%q}`, e.EntityType)})
		for j, o := range e.Observations {
			sp.putRecord(memory.Record{ID: fmt.Sprintf("r%07d%d", i, j), Type: memory.Entity, Category: ObservationCategory, Status: memory.Active,
				Access: memory.Public, Content: kgContent(e.Name, o), Entities: []string{kgEntityRef(e.Name)}})
		}
	}
	sp.loading = false
	for _, k := range sp.nodes {
		sp.reblob(k)
	}
	sp.grams.compact()
	return sp
}

// kgFinderScan is the linear pass kgMatch ran before the trigram index.
func (sp *kgSpace) kgFinderScan(q string) []*kgNode {
	var out []*kgNode
	f := newKGFinder(q)
	for _, k := range sp.ents {
		if f.contains(k.blob) {
			out = append(out, k)
		}
	}
	return out
}

// BenchmarkKGGrams: the trigram index of 100,000 benchmark entities —
// its size beside the texts it indexes, and the candidates it gives for a
// ticket number, a name, a city (12,500 entities) and words every entity
// has, against the linear pass.
func BenchmarkKGGrams(b *testing.B) {
	sp := kgBenchSpace(100_000)
	blob := 0
	for _, k := range sp.nodes {
		blob += len(k.blob)
	}
	b.Logf("100,000 entities: texts %.1f MB, trigram index %.1f MB, %d trigrams", float64(blob)/1e6, float64(sp.grams.bytes())/1e6, len(sp.grams.post))
	for _, q := range []string{"ticket 4242", "person 4242", "osaka", "design document"} {
		b.Run(q+"/index", func(b *testing.B) {
			for b.Loop() {
				_ = sp.kgIndexedCandidates(q)
			}
		})
		b.Run(q+"/scan", func(b *testing.B) {
			for b.Loop() {
				_ = sp.kgFinderScan(q)
			}
		})
	}
}

// TestKGGramsNarrow: the work of a search follows its answer, not the
// corpus. Over 20,000 benchmark entities the index's candidates for a
// name or a ticket number are the few entities that contain it, for a
// city exactly those that contain it (a seventh of the corpus), and words
// every entity has are left to the pass rather than listed.
func TestKGGramsNarrow(t *testing.T) {
	sp := kgBenchSpace(20_000)
	for _, c := range []struct {
		q        string
		maxExtra int // candidates that turn out not to contain q
	}{{"person 4242", 0}, {"ticket 17", 0}, {"osaka", 0}, {"nairobi", 0}} {
		slots, ok := sp.grams.candidates(c.q)
		matches := len(sp.kgFinderScan(c.q))
		if !ok || matches == 0 || len(slots) > matches+c.maxExtra {
			t.Errorf("%q: %d candidates (listed %v) for %d matches", c.q, len(slots), ok, matches)
		}
	}
	if _, ok := sp.grams.candidates("design document"); ok {
		t.Error("words in every text: listed, want left to the pass")
	}
	if n := sp.grams.bytes(); n > 4_000_000 {
		t.Errorf("trigram index of 20,000 entities: %d bytes", n)
	}
}
