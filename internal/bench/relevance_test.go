package bench

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/logit"
	"github.com/memgate/memgate/internal/retrieve"
)

// TestAbstentionAUC: the abstention figure ranks answerable questions'
// top relevance against abstention questions', ties half, no hit as 0.
func TestAbstentionAUC(t *testing.T) {
	q := func(group string, headline bool, rel ...float64) QuestionResult {
		qr := QuestionResult{Question: Question{Group: group, Headline: headline}}
		for _, r := range rel {
			qr.Hits = append(qr.Hits, Hit{Relevance: r})
		}
		return qr
	}
	res := &Result{Questions: []QuestionResult{
		q("single-session-user", true, 0.9, 0.1), q("multi-session", true, 0.4),
		q(Abstention, false, 0.4), q(Abstention, false),
	}}
	// Pairs: 0.9>0.4, 0.9>0, 0.4=0.4 (half), 0.4>0 → 3.5/4.
	if auc, n := abstentionAUC(res); n != 2 || auc != 0.875 {
		t.Fatalf("auc %v over %d", auc, n)
	}
	if _, n := abstentionAUC(&Result{Questions: res.Questions[:2]}); n != 0 {
		t.Fatalf("no abstention questions gave n=%d", n)
	}
}

// TestLongMemEvalAbstentionAsked: abstention questions without evidence
// turns are asked (for the relevance figure) but stay out of recall.
func TestLongMemEvalAbstentionAsked(t *testing.T) {
	ds, err := LoadLongMemEval(strings.NewReader(lmeFixture))
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, ds, newService(t, nil), Options{KMax: 20})
	sum := Summarize(ds, res)
	if sum.AbstentionN != 2 || sum.AbstentionAsked != 1 || sum.Skipped != 1 || sum.Overall.N != 3 {
		t.Fatalf("abstention questions %d, skipped %d, scored %d", sum.AbstentionN, sum.Skipped, sum.Overall.N)
	}
	if g := group(t, sum, Abstention); g.Stats.N != 1 {
		t.Fatalf("abstention recall over %d questions, want the one with evidence", g.Stats.N)
	}
	for _, q := range res.Questions {
		for _, h := range q.Hits {
			if !(h.Relevance >= 0 && h.Relevance <= 1) {
				t.Fatalf("relevance %v", h.Relevance)
			}
		}
	}
	if j := BuildJSON(sum, res, RenderOptions{}); j.AbstentionAUC == nil {
		t.Fatal("json lacks abstention_relevance_auc")
	}
}

// TestFitRelevance fits retrieve.DefaultRelevance: a logistic regression
// of "this hit covers an evidence turn" on the hit's evidence, over the
// top 50 hits (MEMGATE_FIT_K) of every LoCoMo category 1–4 question, with
// the built-in encoder (dense model; the lexical model is fitted on the
// coverage alone), then moved to even prior odds. It runs only when
// MEMGATE_FIT_LOCOMO names the dev file (about 3 minutes):
//
//	MEMGATE_FIT_LOCOMO=/work/shared/bench/locomo-dev.json go test ./internal/bench -run TestFitRelevance -v -timeout 30m
//
// and prints the coefficients to paste into retrieve.DefaultRelevance.
func TestFitRelevance(t *testing.T) {
	path := os.Getenv("MEMGATE_FIT_LOCOMO")
	if path == "" {
		t.Skip("MEMGATE_FIT_LOCOMO not set")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := LoadLoCoMo(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embed.BuiltinUSELite()
	if err != nil {
		t.Fatal(err)
	}
	k := 50
	if v, err := strconv.Atoi(os.Getenv("MEMGATE_FIT_K")); err == nil && v > 0 {
		k = v
	}
	res := run(t, ds, newService(t, emb), Options{KMax: k, Embed: true, Evidence: true})
	var dense, lex []logit.Sample
	for _, q := range res.Questions {
		if !q.Question.Headline {
			continue
		}
		for _, h := range q.Hits {
			if h.Evidence == nil {
				t.Fatal("hit without evidence")
			}
			y := 0.0
			for _, turn := range h.Turns {
				if slices.Contains(q.Question.Evidence, turn) {
					y = 1
				}
			}
			lex = append(lex, logit.Sample{X: []float64{h.Evidence.Coverage}, Y: y})
			if h.Evidence.Dense != nil {
				dense = append(dense, logit.Sample{X: []float64{*h.Evidence.Dense, h.Evidence.Coverage}, Y: y})
			}
		}
	}
	var mean [2][3]float64
	for _, e := range dense {
		y := int(e.Y)
		mean[y][0]++
		mean[y][1] += e.X[0]
		mean[y][2] += e.X[1]
	}
	for y := range 2 {
		t.Logf("label %d: %v samples, mean cosine %.3f, mean coverage %.3f", y, mean[y][0], mean[y][1]/mean[y][0], mean[y][2]/mean[y][0])
	}
	// Newton's method, a few features: the Hessian is tiny; the ridge
	// keeps it solvable.
	fit := func(s []logit.Sample) []float64 { return logit.Fit(s, logit.Options{Iters: 50, Ridge: 1e-6}) }
	wd, wl := fit(dense), fit(lex)
	t.Logf("%d dense samples, %d lexical samples", len(dense), len(lex))
	// Even prior odds: the intercepts lose the log odds of the base rate,
	// which depends on how many hits were sampled per question.
	prior := math.Log(mean[0][0] / mean[1][0])
	t.Logf("fitted at the sample's base rate: Bias %.2f, LexBias %.2f", wd[0], wl[0])
	t.Logf("DefaultRelevance = retrieve.RelevanceModel{Bias: %.2f, Dense: %.2f, Coverage: %.2f, LexBias: %.2f, LexCoverage: %.2f}",
		wd[0]+prior, wd[1], wd[2], wl[0]+prior, wl[1])
	m := retrieve.DefaultRelevance
	t.Logf("log loss at the sample's base rate: current model %.4f (dense) %.4f (lexical); fitted %.4f %.4f",
		logLoss(dense, []float64{m.Bias - prior, m.Dense, m.Coverage}), logLoss(lex, []float64{m.LexBias - prior, m.LexCoverage}),
		logLoss(dense, wd), logLoss(lex, wl))
}

// logLoss is the mean log loss of the model w ([bias, w...]) on s.
func logLoss(s []logit.Sample, w []float64) float64 {
	var l float64
	for _, e := range s {
		p := logit.Sigmoid(logit.Dot(w, append([]float64{1}, e.X...)))
		p = min(max(p, 1e-12), 1-1e-12)
		l -= e.Y*math.Log(p) + (1-e.Y)*math.Log(1-p)
	}
	return l / float64(len(s))
}
