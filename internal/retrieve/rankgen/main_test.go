package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/retrieve"
)

// fixture writes a features file of convs conversations, one question
// each: ten hits, the evidence the fused rank-3 hit, which alone has the
// "opening" feature set, so a fit on the other conversations lifts it to
// the top.
func fixture(t *testing.T, convs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, c := range convs {
		l := bench.FeatureLine{Conv: c, Group: "multi_hop", Headline: true, Evidence: []string{"D1:3"}, EvidenceSessions: []string{"D1"}}
		for r := range 10 {
			x := make([]float64, len(retrieve.RankFeatureNames))
			x[0] = float64(r)
			x[1] = 1 - float64(r)/10
			if r == 2 {
				x[14] = 1
			}
			l.Hits = append(l.Hits, bench.FeatureHit{Turns: []string{"D1:" + string(rune('1'+r))}, Score: x[1],
				Evidence: retrieve.Evidence{Features: x}})
		}
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "f.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var testParams = params{objective: "lambdarank", trees: 20, rate: 0.3, lambda: 1, minHess: 0.01, lmeWeight: 1, depth: 50, treeDepth: 2}

func TestFoldsAreByConversation(t *testing.T) {
	qs, err := read(fixture(t, "c1", "c2", "c3", "c1"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	fold := map[string]int{}
	for _, q := range qs {
		if f, ok := fold[q.Conv]; ok && f != q.fold {
			t.Fatalf("conversation %s in folds %d and %d", q.Conv, f, q.fold)
		}
		fold[q.Conv] = q.fold
	}
	if fold["c1"] == fold["c2"] || fold["c2"] == fold["c3"] {
		t.Fatalf("distinct conversations share a fold: %v", fold)
	}
	// Trained on c2 and c3 only, every objective ranks c1's evidence first.
	for _, obj := range []string{"lambdarank", "pairwise", "pointwise"} {
		p := testParams
		p.objective = obj
		m := fit(qs, func(q *question) bool { return q.Conv != "c1" }, p)
		var a, b acc
		a.add(qs[0], order(qs[0], nil))
		b.add(qs[0], order(qs[0], &m))
		if a.mrr >= 0.34 || b.mrr != 1 || b.sess1 != 1 || b.mhN != 1 {
			t.Fatalf("%s: fused MRR %v, ranker MRR %v session@1 %v; want 1/3, 1, 1", obj, a.mrr, b.mrr, b.sess1)
		}
	}
}

// TestFitIsDeterministic: the same features give the same model, and the
// generated source states its checksum and the command.
func TestFitIsDeterministic(t *testing.T) {
	qs, err := read(fixture(t, "c1", "c2", "c3"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := func(*question) bool { return true }
	m1, m2 := fit(qs, all, testParams), fit(qs, all, testParams)
	if m1.Sum() != m2.Sum() || len(m1.Trees) != testParams.trees {
		t.Fatalf("two fits differ or have %d trees", len(m1.Trees))
	}
	src := source(m1, []string{"-locomo", "x.jsonl"})
	if !strings.Contains(src, m1.Sum()) || !strings.Contains(src, "go run ./internal/retrieve/rankgen -locomo x.jsonl") {
		t.Fatalf("source lacks the checksum or the command:\n%s", src)
	}
}

// TestReadRefusesOldFeatures: a features file without the ranker's
// features (an older memgate) is refused, not fitted on zeros.
func TestReadRefusesOldFeatures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.jsonl")
	old := `{"conv":"c1","group":"g","headline":true,"evidence":["D1:2"],"hits":[{"turns":["D1:1"],"score":1,"evidence":{"coverage":0.1},"signals":{}}]}` + "\n"
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := read(path, true, nil); err == nil || !strings.Contains(err.Error(), "features") {
		t.Fatalf("read = %v, want a features error", err)
	}
}
