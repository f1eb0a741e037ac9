package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

var testParams = params{objective: "lambdarank", trees: 20, rate: 0.3, lambda: 1, minHess: 0.01, lmeWeight: 1, extraWeight: 1, depth: 50, treeDepth: 2}

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

// TestDepthBoundsTheFitAndTheOrder: a model fitted to depth 2 never sees
// the evidence at fused rank 3 and leaves it there; one fitted to depth 10
// lifts it first and records its depth.
func TestDepthBoundsTheFitAndTheOrder(t *testing.T) {
	qs, err := read(fixture(t, "c1", "c2", "c3"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	others := func(q *question) bool { return q.Conv != "c1" }
	for _, c := range []struct {
		depth int
		first int // the hit index the model puts first
	}{{2, 0}, {10, 2}} {
		p := testParams
		p.depth = c.depth
		m := fit(qs, others, p)
		if m.Depth != c.depth {
			t.Fatalf("model depth %d, want %d", m.Depth, c.depth)
		}
		got := order(qs[0], &m)
		if got[0] != c.first || (c.depth == 2 && got[2] != 2) {
			t.Fatalf("depth %d: order %v, want hit %d first", c.depth, got, c.first)
		}
	}
	// A model that prefers the evidence re-orders only its depth.
	inf := float32(math.Inf(1))
	pref := retrieve.RankModel{Depth: 2, Trees: []retrieve.RankTree{{F: [7]uint8{14}, T: [7]float32{0.5, inf, inf, inf, inf, inf, inf},
		Leaf: [8]float32{0, 0, 0, 0, 1, 1, 1, 1}}}}
	if got := order(qs[0], &pref); got[2] != 2 {
		t.Fatalf("a depth-2 model moved the hit at rank 3: %v", got)
	}
	pref.Depth = 10
	if got := order(qs[0], &pref); got[0] != 2 {
		t.Fatalf("a depth-10 model did not lift the hit at rank 3: %v", got)
	}
}

// TestTreeDepth: trees of depth one split at the root only; trees of
// depth three may split at every level, and score as they were fitted.
func TestTreeDepth(t *testing.T) {
	qs, err := read(fixture(t, "c1", "c2", "c3"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := func(*question) bool { return true }
	p := testParams
	p.treeDepth = 1
	for _, tr := range fit(qs, all, p).Trees {
		for n := 1; n < len(tr.T); n++ {
			if !math.IsInf(float64(tr.T[n]), 1) {
				t.Fatalf("a tree of depth one splits at node %d: %+v", n, tr)
			}
		}
	}
	p.treeDepth = 3
	m := fit(qs, all, p)
	if got := order(qs[0], &m); got[0] != 2 {
		t.Fatalf("depth-three trees: order %v, want the evidence (hit 2) first", got)
	}
}

// TestDropZeroesFeatures: -drop zeroes the named features as read, and
// an unknown name is refused.
func TestDropZeroesFeatures(t *testing.T) {
	drop, err := featureIndexes("opening, log_rank")
	if err != nil || len(drop) != 2 {
		t.Fatalf("featureIndexes = %v, %v", drop, err)
	}
	qs, err := read(fixture(t, "c1"), true, drop)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range qs[0].x {
		if x[14] != 0 || x[0] != 0 {
			t.Fatalf("dropped features read as %v, %v", x[14], x[0])
		}
	}
	if _, err := featureIndexes("no_such_feature"); err == nil {
		t.Fatal("an unknown feature name was accepted")
	}
}

// TestExtraTwinsShareAFold: an -extra question takes the fold of its
// development twin (same question id), so a held-out question's twin is
// never trained on; one without a twin still gets a fold, and every one
// is marked extra.
func TestExtraTwinsShareAFold(t *testing.T) {
	dev, err := read(fixture(t, "q1", "q2", "q3", "q4", "q5", "q6", "q7"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	// In the extra file the twins come in another order than in the
	// development file, so their order of appearance alone would put
	// them in other folds.
	ext, err := read(fixture(t, "q7", "x1", "q3", "q1", "x2", "q6"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	devFold := map[string]int{}
	for _, q := range dev {
		devFold[q.Conv] = q.fold
	}
	moved := 0
	for _, q := range ext {
		if f, ok := devFold[q.Conv]; ok && f != q.fold {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("the fixture's twins already share folds by order; the test proves nothing")
	}
	for _, q := range twinFolds(dev, ext) {
		if !q.extra || q.fold < 0 || q.fold >= folds {
			t.Fatalf("extra question %s: extra %v fold %d", q.Conv, q.extra, q.fold)
		}
		if f, ok := devFold[q.Conv]; ok && f != q.fold {
			t.Fatalf("question %s is in fold %d, its twin in fold %d", q.Conv, f, q.fold)
		}
	}
}

// TestExtraIsNeverScored: the extra questions are trained on but count
// in neither the development files' held-out rows nor the in-sample
// ones; they are reported apart.
func TestExtraIsNeverScored(t *testing.T) {
	dev, err := read(fixture(t, "q1", "q2", "q3", "q4", "q5"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := read(fixture(t, "q1", "x1", "x2", "x3"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	qs := append(dev, twinFolds(dev, ext)...)
	all := fit(qs, func(*question) bool { return true }, testParams)
	out := crossValidate(qs, testParams, func(string) {}) + inSample(qs, &all)
	var lme, extra, in int
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || (f[0] != "all" && f[0] != "in") {
			continue
		}
		n := 0
		if _, err := fmt.Sscan(f[2], &n); err != nil {
			t.Fatal(err)
		}
		switch {
		case f[0] == "in":
			in += n
		case f[1] == "longmemeval":
			lme = n
		case f[1] == "extra":
			extra = n
		}
	}
	if lme != len(dev) || extra != len(ext) || in != len(dev) {
		t.Fatalf("held out: longmemeval %d questions (want %d), extra %d (want %d); in sample %d (want %d):\n%s",
			lme, len(dev), extra, len(ext), in, len(dev), out)
	}
	// The extra questions do train: a fit on them alone lifts the
	// evidence of a development question first.
	m := fit(qs, func(q *question) bool { return q.extra }, testParams)
	if got := order(dev[1], &m); got[0] != 2 {
		t.Fatalf("a fit on the extra questions alone: order %v, want the evidence (hit 2) first", got)
	}
	p := testParams
	p.extraWeight = 0
	if m := fit(qs, func(q *question) bool { return q.extra }, p); order(dev[1], &m)[0] == 2 {
		t.Fatal("extra questions of weight 0 still trained the model")
	}
}

// TestSubsampleIsSeeded: trees fitted on a share of the questions are
// the same for the same seed and differ for another; a share of one is
// the plain fit.
func TestSubsampleIsSeeded(t *testing.T) {
	qs, err := read(fixture(t, "c1", "c2", "c3", "c4", "c5", "c6"), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Vary the evidence's fused rank so the questions' gradients differ.
	for i, q := range qs {
		q.y = make([]float64, len(q.x))
		q.y[i%len(q.x)] = 1
	}
	all := func(*question) bool { return true }
	sum := func(p params) string { m := fit(qs, all, p); return m.Sum() }
	p := testParams
	plain := sum(p)
	p.subsample = 1
	if got := sum(p); got != plain {
		t.Fatal("-subsample 1 changed the fit")
	}
	p.subsample, p.seed = 0.5, 7
	a, b := sum(p), sum(p)
	p.seed = 8
	c := sum(p)
	if a != b || a == c || a == plain {
		t.Fatalf("subsampled fits: same seed equal %v, other seed differs %v, differs from the plain fit %v", a == b, a != c, a != plain)
	}
}

// TestFoldSeedShufflesByConversation: -fold-seed deals the conversations
// to the folds in another order, the same for the same seed, a
// conversation's questions together; the default keeps the order of
// appearance.
func TestFoldSeedShufflesByConversation(t *testing.T) {
	convs := []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c3", "c7"}
	load := func() []*question {
		qs, err := read(fixture(t, convs...), false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return qs
	}
	foldsOf := func(qs []*question) []int {
		var out []int
		for _, q := range qs {
			out = append(out, q.fold)
		}
		return out
	}
	plain := foldsOf(load())
	a, b := load(), load()
	shuffleFolds(a, 1)
	shuffleFolds(b, 1)
	if !slices.Equal(foldsOf(a), foldsOf(b)) || slices.Equal(foldsOf(a), plain) {
		t.Fatalf("seed 1: %v and %v, order of appearance %v: want equal to each other, unlike the latter", foldsOf(a), foldsOf(b), plain)
	}
	fold := map[string]int{}
	for _, q := range a {
		if f, ok := fold[q.Conv]; ok && f != q.fold {
			t.Fatalf("conversation %s in folds %d and %d", q.Conv, f, q.fold)
		}
		fold[q.Conv] = q.fold
	}
}

// TestProgressReportsEachFit: every fit is reported with the count, the
// elapsed time and an estimate of what is left (clock injected).
func TestProgressReportsEachFit(t *testing.T) {
	var b strings.Builder
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	p := &progress{w: &b, total: 6, start: t0, now: func() time.Time { return now }}
	now = t0.Add(8 * time.Second)
	p.step("fold 0 held out")
	now = t0.Add(16 * time.Second)
	p.step("fold 1 held out")
	want := "rankgen: fit 1/6 (fold 0 held out) after 8.0s, 8.0s a fit, about 40s left\n" +
		"rankgen: fit 2/6 (fold 1 held out) after 16.0s, 8.0s a fit, about 32s left\n"
	if b.String() != want {
		t.Fatalf("progress:\n%s\nwant:\n%s", b.String(), want)
	}
}
