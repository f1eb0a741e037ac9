package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A features file of two conversations: in each question the evidence
// is the hit with the higher coverage but the lower fused rank, so a fit
// on coverage reverses the fused order.
const featuresFixture = `{"conv":"c1","group":"g","headline":true,"evidence":["D1:2"],"evidence_sessions":["D1"],"hits":[{"turns":["D1:1"],"score":1,"evidence":{"coverage":0.1},"signals":{"lexical":{"rank":1,"score":3}}},{"turns":["D1:2"],"score":0.9,"evidence":{"coverage":0.9},"signals":{"lexical":{"rank":2,"score":2}}}]}
{"conv":"c2","group":"g","headline":true,"evidence":["D2:2"],"evidence_sessions":["D2"],"hits":[{"turns":["D2:1"],"score":1,"evidence":{"coverage":0.2},"signals":{"lexical":{"rank":1,"score":3}}},{"turns":["D2:2"],"score":0.9,"evidence":{"coverage":0.8},"signals":{"lexical":{"rank":2,"score":2}}}]}
`

func TestFoldsAreByConversation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.jsonl")
	if err := os.WriteFile(path, []byte(featuresFixture+strings.Replace(featuresFixture, `"c1"`, `"c3"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	qs, err := read(path, true)
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
	// Trained on c2 and c3 only, the model ranks c1's evidence first.
	m := fit(qs, func(q *question) bool { return q.Conv != "c1" }, 0.01)
	var a, b acc
	a.add(qs[0], order(qs[0], nil))
	b.add(qs[0], order(qs[0], &m))
	if a.mrr != 0.5 || b.mrr != 1 || b.sess1 != 1 {
		t.Fatalf("fused MRR %v, ranker MRR %v session@1 %v; want 0.5, 1, 1", a.mrr, b.mrr, b.sess1)
	}
}
