package bench

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/embed"
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
	var dense, lex []sample
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
			lex = append(lex, sample{x: []float64{h.Evidence.Coverage}, y: y})
			if h.Evidence.Dense != nil {
				dense = append(dense, sample{x: []float64{*h.Evidence.Dense, h.Evidence.Coverage}, y: y})
			}
		}
	}
	var mean [2][3]float64
	for _, e := range dense {
		y := int(e.y)
		mean[y][0]++
		mean[y][1] += e.x[0]
		mean[y][2] += e.x[1]
	}
	for y := range 2 {
		t.Logf("label %d: %v samples, mean cosine %.3f, mean coverage %.3f", y, mean[y][0], mean[y][1]/mean[y][0], mean[y][2]/mean[y][0])
	}
	wd, wl := fitLogistic(dense), fitLogistic(lex)
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

type sample struct {
	x []float64
	y float64
}

// fitLogistic returns [bias, w...] minimising the log loss, by Newton's
// method (a few features, so the Hessian is tiny).
func fitLogistic(s []sample) []float64 {
	if len(s) == 0 {
		return nil
	}
	d := len(s[0].x) + 1
	w := make([]float64, d)
	feat := func(x []float64) []float64 { return append([]float64{1}, x...) }
	for range 50 {
		g := make([]float64, d)
		h := make([][]float64, d)
		for i := range h {
			h[i] = make([]float64, d)
			h[i][i] = 1e-6 // keeps the system solvable
		}
		for _, e := range s {
			f := feat(e.x)
			p := sigmoid(dot(w, f))
			for i := range d {
				g[i] += (p - e.y) * f[i]
				for j := range d {
					h[i][j] += p * (1 - p) * f[i] * f[j]
				}
			}
		}
		step := solve(h, g)
		for i := range w {
			w[i] -= step[i]
		}
	}
	return w
}

func logLoss(s []sample, w []float64) float64 {
	var l float64
	for _, e := range s {
		p := sigmoid(dot(w, append([]float64{1}, e.x...)))
		p = min(max(p, 1e-12), 1-1e-12)
		l -= e.y*math.Log(p) + (1-e.y)*math.Log(1-p)
	}
	return l / float64(len(s))
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// solve solves a·x = b by Gaussian elimination with partial pivoting.
func solve(a [][]float64, b []float64) []float64 {
	n := len(b)
	m := make([][]float64, n)
	for i := range m {
		m[i] = append(slices.Clone(a[i]), b[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		for r := c + 1; r < n; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k <= n; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := m[r][n]
		for k := r + 1; k < n; k++ {
			s -= m[r][k] * x[k]
		}
		x[r] = s / m[r][r]
	}
	return x
}
