package retrieve

import (
	"math"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

// clusterEngine: session a (Ann) and session b (Bob), with hand-set
// vectors (turn 5 has none).
func clusterEngine(t *testing.T) *Engine {
	t.Helper()
	e := New(Options{Embedder: hashEmbedder{"m", 4}, Vectors: VectorExact})
	for _, c := range []struct {
		id           int
		text, s, who string
		vec          []float32
	}{
		{1, "Ann: I read Dune", "a", "ann", []float32{1, 0, 0, 0}},
		{2, "Ann: then Emma", "a", "ann", []float32{0.6, 0.8, 0, 0}},
		{3, "Bob: chess tonight", "b", "bob", []float32{0, 0, 1, 0}},
		{4, "Ann: also Dune again later", "a", "ann", []float32{1, 0, 0, 0}},
		{5, "Bob: read Dune", "b", "bob", nil},
	} {
		r := rec(c.id, c.text, session(c.s), spoken(c.who))
		e.Upsert("w", r)
		if c.vec != nil {
			e.SetVector("w", r.ID, r.ContentSHA256, c.vec)
		}
	}
	return e
}

// TestClusterFeatures: each cluster feature of a candidate is computed
// against the fused top 3 (here turns 1, 3, 2), never against itself.
func TestClusterFeatures(t *testing.T) {
	e := clusterEngine(t)
	key := func(id int) uint32 {
		k, ok := e.lookup("w", rec(id, "").ID)
		if !ok {
			t.Fatalf("turn %d not indexed", id)
		}
		return k
	}
	order := []uint32{key(1), key(3), key(2), key(4), key(5)}
	fused := map[uint32]float64{}
	for r, k := range order {
		fused[k] = 1 / float64(r+1)
	}
	e.mu.RLock()
	f := e.rankFeatures(&rankInputs{order: order, fused: fused, docs: 5})
	e.mu.RUnlock()
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	f1, f3, f4, f5 := f[key(1)], f[key(3)], f[key(4)], f[key(5)]

	// Turn 4: Ann's, in the first hit's session, its vector the first hit's.
	if !near(f4[fCluCosFirst], 1) || !near(f4[fCluCosMax3], 1) || !near(f4[fCluCosMean3], (1+0+0.6)/3) {
		t.Errorf("turn 4 cosines: first %v max %v mean %v, want 1, 1, 0.533", f4[fCluCosFirst], f4[fCluCosMax3], f4[fCluCosMean3])
	}
	if f4[fSameSpeaker] != 1 || f4[fSameSession] != 1 || f4[fCluTurnDist] != 0.5 {
		t.Errorf("turn 4: same speaker %v, same session %v, turn distance %v; want 1, 1, 0.5 (one turn after turn 2)",
			f4[fSameSpeaker], f4[fSameSession], f4[fCluTurnDist])
	}
	// Turn 5: Bob's, no vector, right after turn 3 (a head hit) in session b.
	if f5[fCluCosFirst] != 0 || f5[fCluCosMax3] != 0 || f5[fSameSpeaker] != 0 || f5[fSameSession] != 0 || f5[fCluTurnDist] != 0.5 {
		t.Errorf("turn 5: %v", f5[fCluCosFirst:])
	}
	if !(f5[fCluOverlap3] > 0 && f5[fCluOverlap3] < 1) || !(f4[fCluOverlap3] > 0) {
		t.Errorf("word overlaps: turn 5 %v (shares read and Dune with turn 1), turn 4 %v", f5[fCluOverlap3], f4[fCluOverlap3])
	}
	// The head hits are measured against the others only.
	if f1[fCluCosFirst] != 0 || !near(f1[fCluCosMax3], 0.6) || f1[fSameSpeaker] != 0 || f1[fSameSession] != 0 || f1[fCluTurnDist] != 0.5 {
		t.Errorf("turn 1 (the first hit): %v", f1[fCluCosFirst:])
	}
	if f3[fCluCosMax3] != 0 || f3[fCluOverlap3] != 0 || f3[fCluTurnDist] != 0 {
		t.Errorf("turn 3 (nothing in common with turns 1 and 2): %v", f3[fCluCosFirst:])
	}
}

// TestClusterRespectsTheFilter: a turn the searcher may not read lends no
// candidate a cluster feature, though unfiltered it would be the first
// hit, in turn 2's session, with turn 2's speaker and vector.
func TestClusterRespectsTheFilter(t *testing.T) {
	e := New(Options{Embedder: hashEmbedder{"m", 4}, Vectors: VectorExact})
	for _, c := range []struct {
		id           int
		text, s, who string
		vec          []float32
		hidden       bool
	}{
		{1, "Eve: Dune Dune novel novel review", "s", "eve", []float32{1, 0, 0, 0}, true},
		{2, "Eve: a novel", "s", "eve", []float32{1, 0, 0, 0}, false},
		{3, "Ann: Dune novel review", "t", "ann", []float32{0, 1, 0, 0}, false},
		{4, "Ann: Dune novel", "t", "ann", []float32{0, 1, 0, 0}, false},
		{5, "Ann: the Dune review", "t", "ann", []float32{0, 1, 0, 0}, false},
		{6, "Ann: Dune again", "t", "ann", []float32{0, 1, 0, 0}, false},
	} {
		r := rec(c.id, c.text, session(c.s), spoken(c.who))
		if c.hidden {
			r.Access = memory.Sensitive
		}
		e.Upsert("w", r)
		e.SetVector("w", r.ID, r.ContentSHA256, c.vec)
	}
	run := func(access []memory.Access) map[string][]float64 {
		res, err := e.Search(t.Context(), Query{Text: "Dune novel review", RankFeatures: true,
			Filter: Filter{Workspace: "w", Access: access, Types: []memory.Type{memory.Episode}}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]float64{}
		for _, h := range res.Hits {
			out[h.ID] = h.Evidence.Features
		}
		return out
	}
	// Unfiltered, the hidden turn leads and lends turn 2 its cluster.
	all := run(everyone)
	if f := all[rec(2, "").ID]; f == nil || f[fSameSession] != 1 || f[fCluCosFirst] != 1 {
		t.Fatalf("fixture: with every turn readable turn 2 should sit in the first hit's cluster: %v", f)
	}
	public := run([]memory.Access{memory.Public})
	if _, ok := public[rec(1, "").ID]; ok {
		t.Fatal("the sensitive turn was returned to a searcher of public turns")
	}
	f := public[rec(2, "").ID]
	if f == nil {
		t.Fatalf("turn 2 should be a hit: %v", public)
	}
	if f[fSameSession] != 0 || f[fSameSpeaker] != 0 || f[fCluTurnDist] != 0 || f[fCluCosFirst] != 0 || f[fCluCosMax3] != 0 {
		t.Fatalf("turn 2's cluster features come from the hidden turn: %v", f[fCluCosFirst:])
	}
}
