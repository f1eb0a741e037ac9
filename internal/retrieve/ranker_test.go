package retrieve

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

func TestRankTreeScore(t *testing.T) {
	// Root x0 < 0.5; its children x1 < 2 and x2 < 3; below them x3 < 1
	// (node 3), x3 < 2 (4), x4 < 1 (5) and x4 < 2 (6).
	tr := RankTree{F: [7]uint8{0, 1, 2, 3, 3, 4, 4}, T: [7]float32{0.5, 2, 3, 1, 2, 1, 2}, Leaf: [8]float32{1, 2, 3, 4, 5, 6, 7, 8}}
	for _, c := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{0, 1, 9, 0, 0}, 1},   // left, x1 < 2, x3 < 1
		{[]float64{0, 1, 9, 1, 0}, 2},   // left, x1 < 2, x3 ≥ 1
		{[]float64{0.4, 2, 9, 1, 0}, 3}, // left, x1 ≥ 2, x3 < 2
		{[]float64{0.4, 2, 9, 2, 0}, 4}, // left, x1 ≥ 2, x3 ≥ 2
		{[]float64{0.5, 9, 2, 9, 0}, 5}, // right (x0 ≥ 0.5), x2 < 3, x4 < 1
		{[]float64{0.5, 9, 2, 9, 1}, 6}, // right, x2 < 3, x4 ≥ 1
		{[]float64{7, 0, 3, 0, 1}, 7},   // right, x2 ≥ 3, x4 < 2
		{[]float64{7, 0, 3, 0, 2}, 8},   // right, x2 ≥ 3, x4 ≥ 2
	} {
		if got := tr.Score(c.x); got != c.want {
			t.Errorf("Score(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	// A node with an infinite threshold sends everything left.
	all := RankTree{T: [7]float32{inf32, inf32, inf32, inf32, inf32, inf32, inf32}, Leaf: [8]float32{5, 6, 7, 8, 9, 10, 11, 12}}
	if got := all.Score([]float64{1e30, 0, 0}); got != 5 {
		t.Errorf("infinite threshold: %v, want 5", got)
	}
	m := RankModel{Trees: []RankTree{tr, all}}
	if got := m.Score([]float64{7, 0, 3, 0, 2}); got != 13 {
		t.Errorf("model = %v, want the sum of its trees 13", got)
	}
}

// TestDefaultRankerIsTheGenerated: the shipped trees are those the
// generator wrote (its checksum), not edited by hand.
func TestDefaultRankerIsTheGenerated(t *testing.T) {
	if got := DefaultRanker.Sum(); got != DefaultRankerSum {
		t.Fatalf("DefaultRanker sums to %s, the generated file says %s: regenerate it (docs/retrieval.md)", got, DefaultRankerSum)
	}
	for i, tr := range DefaultRanker.Trees {
		for _, f := range tr.F {
			if int(f) >= len(RankFeatureNames) {
				t.Fatalf("tree %d splits on feature %d of %d", i, f, len(RankFeatureNames))
			}
		}
	}
}

// rankerFixture: two sessions; the user's opening turn of session a
// holds the question's words only in part, the assistant's reply more.
func rankerFixture() *Engine {
	e := New(Options{})
	e.Upsert("w", rec(1, "I bought a new camping stove for Yosemite", session("a"), spoken("user")))
	e.Upsert("w", rec(2, "A camping stove is great; which camping stove brand for camping?", session("a"), spoken("assistant")))
	e.Upsert("w", rec(3, "thanks, it works", session("a"), spoken("user")))
	e.Upsert("w", rec(4, "my stove at home is electric", session("b"), spoken("user")))
	e.Upsert("w", rec(5, "unrelated chatter about taxes", session("b"), spoken("assistant")))
	return e
}

// TestRankFeaturesReported: a search asking for features reports, per
// hit, the boosts the fusion applied and the features it lacks, computed
// from the index.
func TestRankFeaturesReported(t *testing.T) {
	e := rankerFixture()
	res, err := e.Search(context.Background(), Query{Text: "which camping stove did I buy for Yosemite?",
		Filter: Filter{Workspace: "w", Access: everyone}, Speaker: 0.4, Session: 0.5, RankFeatures: true})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string][]float64{}
	for r, h := range res.Hits {
		if len(h.Evidence.Features) != len(RankFeatureNames) {
			t.Fatalf("hit %d has %d features, want %d", r, len(h.Evidence.Features), len(RankFeatureNames))
		}
		if got := h.Evidence.Features[fLogRank]; math.Abs(got-math.Log1p(float64(r))) > 1e-12 {
			t.Errorf("hit %d log_rank %v", r, got)
		}
		if got := h.Evidence.Features[fCoverage]; got != h.Evidence.Coverage {
			t.Errorf("hit %d coverage feature %v, evidence coverage %v", r, got, h.Evidence.Coverage)
		}
		byID[h.ID] = h.Evidence.Features
	}
	f1, f2, f4 := byID[rec(1, "").ID], byID[rec(2, "").ID], byID[rec(4, "").ID]
	if f1 == nil || f2 == nil || f4 == nil {
		t.Fatalf("turns 1, 2 and 4 should be hits: %v", ids(res))
	}
	if f1[fOpening] != 1 || f1[fPosition] != 0 || f1[fUserTurn] != 1 || f1[fSpeaker] != 1 {
		t.Errorf("turn 1 (the user's opening turn): opening %v position %v user %v speaker %v", f1[fOpening], f1[fPosition], f1[fUserTurn], f1[fSpeaker])
	}
	if f2[fOpening] != 0 || f2[fPosition] != 0.5 || f2[fUserTurn] != 0 || f2[fSpeaker] != 0 {
		t.Errorf("turn 2 (the assistant's reply): opening %v position %v user %v speaker %v", f2[fOpening], f2[fPosition], f2[fUserTurn], f2[fSpeaker])
	}
	if f1[fSession] != 1 || !(f4[fSession] < 1) {
		t.Errorf("session scores: turn 1's %v (best session: 1), turn 4's %v (< 1)", f1[fSession], f4[fSession])
	}
	if f1[fKeyMatch] != 1 || f4[fKeyMatch] != 0 {
		t.Errorf("key matches: turn 1 names Yosemite (%v), turn 4 does not (%v)", f1[fKeyMatch], f4[fKeyMatch])
	}
	// Turn 1's best same-session neighbour is turn 2, and the reverse.
	score := map[string]float64{}
	for _, h := range res.Hits {
		score[h.ID] = h.Score
	}
	top := res.Hits[0].Score
	if want := score[rec(2, "").ID] / top; math.Abs(f1[fNeighbour]-want) > 1e-12 {
		t.Errorf("turn 1's neighbour %v, want turn 2's score over the best %v", f1[fNeighbour], want)
	}
	if f1[fSessionShare] != 0.5 && len(res.Hits) == 4 {
		t.Errorf("session share %v", f1[fSessionShare])
	}
	// Without the request, no features (and no work for them).
	res, _ = e.Search(context.Background(), Query{Text: "camping stove", Filter: Filter{Workspace: "w", Access: everyone}})
	for _, h := range res.Hits {
		if h.Evidence.Features != nil {
			t.Fatal("features reported unasked")
		}
	}
}

// TestRankerReorders: a model preferring a session's opening turn moves
// it above the fused order; without the model the fused order stands,
// and k cuts after the re-ranking.
func TestRankerReorders(t *testing.T) {
	e := rankerFixture()
	q := Query{Text: "camping stove brand", Filter: Filter{Workspace: "w", Access: everyone, Types: []memory.Type{memory.Episode}}}
	fused, err := e.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	opening := &RankModel{Trees: []RankTree{{F: [7]uint8{fOpening}, T: [7]float32{0.5, inf32, inf32, inf32, inf32, inf32, inf32}, Leaf: [8]float32{0, 0, 0, 0, 10, 10, 10, 10}}}}
	q.Ranker, q.K = opening, 2
	ranked, err := e.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	first := func(r Result) string { return r.Hits[0].ID }
	if first(fused) != rec(2, "").ID {
		t.Fatalf("fused order %v: the assistant's reply (most words) should lead", ids(fused))
	}
	if len(ranked.Hits) != 2 || first(ranked) != rec(1, "").ID && first(ranked) != rec(4, "").ID {
		t.Fatalf("ranked %v: an opening turn should lead, k=2", ids(ranked))
	}
	// A search that admits other records than turns keeps the fused
	// order: the model was fitted on rankings of turns.
	q.Filter.Types = nil
	mixed, err := e.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if first(mixed) != rec(2, "").ID {
		t.Fatalf("a search of every type re-ranked: %v", ids(mixed))
	}
}

// TestRerankDepth: a model re-orders only the fused top Depth (0: 50,
// the models before depth was recorded); the rest keep the fused order.
func TestRerankDepth(t *testing.T) {
	order := []uint32{1, 2, 3, 4, 5}
	feats := map[uint32][]float64{}
	for _, k := range order {
		x := make([]float64, numRankFeatures)
		x[fOpening] = b2f(k == 5 || k == 2)
		feats[k] = x
	}
	m := RankModel{Depth: 3, Trees: []RankTree{{F: [7]uint8{fOpening}, T: [7]float32{0.5, inf32, inf32, inf32, inf32, inf32, inf32},
		Leaf: [8]float32{0, 0, 0, 0, 1, 1, 1, 1}}}}
	if got := Rerank(order, feats, &m); !slices.Equal(got, []uint32{2, 1, 3, 4, 5}) {
		t.Fatalf("depth 3: %v, want [2 1 3 4 5]", got)
	}
	m.Depth = 0
	if got := Rerank(order, feats, &m); !slices.Equal(got, []uint32{2, 5, 1, 3, 4}) {
		t.Fatalf("depth 0 (50): %v, want [2 5 1 3 4]", got)
	}
}
