package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/memgate/memgate/internal/retrieve"
)

// The fit: gradient-boosted regression trees of depth two or three
// (retrieve.RankTree), each fitted by Newton steps to the gradients of a
// ranking objective over the hits of one question:
//
//   - lambdarank: RankNet's pairwise logistic loss over every (evidence,
//     other) pair of a question, each pair weighted by how much swapping
//     the two would change the question's NDCG (LambdaRank), so the fit
//     spends itself on pairs near the top;
//   - pairwise: the same pairs, unweighted (RankNet);
//   - pointwise: the logistic loss of "the hit covers an evidence turn"
//     (round three's objective, with trees instead of a linear model).
//
// Each tree may be fitted on a share of the training questions only
// (-subsample, drawn from a PCG seeded with -seed, so the fit stays
// deterministic): a question's hits go in or out together, since the
// pairwise gradients are within a question.
//
// Splits are chosen among at most maxBins thresholds per feature, taken
// from the training features' quantiles and rounded to float32, so the
// shipped trees compute exactly what was fitted.

const maxBins = 32

// params are the fit's settings.
type params struct {
	objective   string
	trees       int
	rate        float64
	lambda      float64 // L2 penalty of a leaf's value
	minHess     float64 // a leaf needs at least this much hessian
	lmeWeight   float64 // a LongMemEval question's weight against a LoCoMo one
	extraWeight float64 // an -extra question's weight against a LongMemEval one
	subsample   float64 // the share of the training questions each tree is fitted on
	seed        uint64  // of the subsample's draws
	keepFirst   bool    // the model orders all but the fused first hit
	depth       int     // the model re-orders the fused top depth
	treeDepth   int     // levels of splits of a tree (2 or 3)
}

// sample is one hit of a training question.
type sample struct {
	x   []float64
	bin []uint8
	y   float64
}

// fit returns the model fitted on the questions use admits.
func fit(qs []*question, use func(*question) bool, p params) retrieve.RankModel {
	var train []*question
	for _, q := range qs {
		if use(q) && len(q.x) > 0 {
			train = append(train, q)
		}
	}
	if len(train) == 0 {
		return retrieve.RankModel{KeepFirst: p.keepFirst, Depth: p.depth}
	}
	d := len(train[0].x[0])
	thr := thresholds(train, d, p.depth)
	var samples []sample
	start := make([]int, len(train)+1)
	qw := make([]float64, len(train))
	for i, q := range train {
		start[i] = len(samples)
		qw[i] = 1
		if !q.locomo {
			qw[i] = p.lmeWeight
		}
		if q.extra {
			qw[i] = p.lmeWeight * p.extraWeight
		}
		for j, x := range q.x[:min(len(q.x), p.depth)] {
			s := sample{x: x, y: q.y[j], bin: make([]uint8, d)}
			for f := range d {
				s.bin[f] = uint8(sort.Search(len(thr[f]), func(b int) bool { return x[f] < float64(thr[f][b]) }))
			}
			samples = append(samples, s)
		}
	}
	start[len(train)] = len(samples)
	score := make([]float64, len(samples))
	grad := make([]float64, len(samples))
	hess := make([]float64, len(samples))
	m := retrieve.RankModel{KeepFirst: p.keepFirst, Depth: p.depth}
	rng := rand.New(rand.NewPCG(p.seed, 0))
	pick := make([]int, len(train))
	for i := range pick {
		pick[i] = i
	}
	var rows []int
	for range p.trees {
		if p.subsample > 0 && p.subsample < 1 {
			rng.Shuffle(len(pick), func(a, b int) { pick[a], pick[b] = pick[b], pick[a] })
		}
		qn := len(pick)
		if p.subsample > 0 && p.subsample < 1 {
			qn = max(1, int(math.Round(p.subsample*float64(len(pick)))))
		}
		clear(grad)
		clear(hess)
		rows = rows[:0]
		for _, i := range pick[:qn] {
			lo, hi := start[i], start[i+1]
			gradients(p.objective, samples[lo:hi], score[lo:hi], grad[lo:hi], hess[lo:hi], qw[i])
			for r := lo; r < hi; r++ {
				rows = append(rows, r)
			}
		}
		t := growTree(samples, rows, grad, hess, thr, d, p)
		for i := range samples {
			score[i] += t.Score(samples[i].x)
		}
		m.Trees = append(m.Trees, t)
	}
	return m
}

// thresholds are each feature's split candidates: up to maxBins distinct
// quantiles of its training values (the first depth of each question),
// as float32.
func thresholds(train []*question, d, depth int) [][]float32 {
	out := make([][]float32, d)
	for f := range d {
		var v []float64
		for _, q := range train {
			for _, x := range q.x[:min(len(q.x), depth)] {
				v = append(v, x[f])
			}
		}
		slices.Sort(v)
		var t []float32
		for b := 1; b < maxBins; b++ {
			c := float32(v[b*len(v)/maxBins])
			if float64(c) > v[0] && (len(t) == 0 || c > t[len(t)-1]) {
				t = append(t, c)
			}
		}
		if len(t) == 0 && v[len(v)-1] > v[0] {
			t = append(t, float32(v[len(v)-1]))
		}
		out[f] = t
	}
	return out
}

// gradients fills the ascent direction (grad) and curvature (hess) of the
// objective for one question's samples at the current scores; w weights
// the question.
func gradients(obj string, s []sample, score, grad, hess []float64, w float64) {
	if obj == "pointwise" {
		for i := range s {
			pr := 1 / (1 + math.Exp(-score[i]))
			grad[i] += w * (s[i].y - pr)
			hess[i] += w * max(pr*(1-pr), 1e-6)
		}
		return
	}
	// The current rank of each sample, and the ideal DCG.
	idx := make([]int, len(s))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return score[idx[a]] > score[idx[b]] })
	rank := make([]int, len(s))
	for r, i := range idx {
		rank[i] = r
	}
	nrel := 0
	for i := range s {
		if s[i].y > 0 {
			nrel++
		}
	}
	if nrel == 0 || nrel == len(s) {
		return
	}
	idcg := 0.0
	for r := range nrel {
		idcg += 1 / math.Log2(float64(r)+2)
	}
	for i := range s {
		if s[i].y == 0 {
			continue
		}
		for j := range s {
			if s[j].y > 0 {
				continue
			}
			rho := 1 / (1 + math.Exp(score[i]-score[j]))
			dw := 1.0
			if obj == "lambdarank" {
				dw = math.Abs(1/math.Log2(float64(rank[i])+2)-1/math.Log2(float64(rank[j])+2)) / idcg
			}
			g := w * dw * rho
			h := w * dw * max(rho*(1-rho), 1e-6)
			grad[i] += g
			grad[j] -= g
			hess[i] += h
			hess[j] += h
		}
	}
}

// split is a candidate split of a node: feature, bin (the threshold
// index) and the gain.
type split struct {
	f, b int
	gain float64
}

// growTree fits one tree of depth p.treeDepth (at most three) to the
// gradients of the samples rows.
func growTree(samples []sample, rows []int, grad, hess []float64, thr [][]float32, d int, p params) retrieve.RankTree {
	all := slices.Clone(rows)
	var t retrieve.RankTree
	grow(&t, 0, 0, all, samples, grad, hess, thr, d, p)
	return t
}

// grow fits node n, at level lvl, to the samples idx reaching it: the
// best split while the tree may grow and one helps, else one value for
// every leaf below (its nodes send every sample left).
func grow(t *retrieve.RankTree, n, lvl int, idx []int, samples []sample, grad, hess []float64, thr [][]float32, d int, p params) {
	const inner = len(t.F)
	if n >= inner {
		t.Leaf[n-inner] = leaf(idx, grad, hess, p)
		return
	}
	sp, ok := split{}, false
	if lvl < p.treeDepth {
		sp, ok = bestSplit(samples, idx, grad, hess, thr, d, p)
	}
	if !ok {
		v := leaf(idx, grad, hess, p)
		fill(t, n, v)
		return
	}
	t.F[n], t.T[n] = uint8(sp.f), thr[sp.f][sp.b]
	var l, r []int
	for _, i := range idx {
		if samples[i].x[sp.f] < float64(t.T[n]) {
			l = append(l, i)
		} else {
			r = append(r, i)
		}
	}
	grow(t, 2*n+1, lvl+1, l, samples, grad, hess, thr, d, p)
	grow(t, 2*n+2, lvl+1, r, samples, grad, hess, thr, d, p)
}

// fill makes the subtree under node n a constant v.
func fill(t *retrieve.RankTree, n int, v float32) {
	const inner = len(t.F)
	if n >= inner {
		t.Leaf[n-inner] = v
		return
	}
	t.F[n], t.T[n] = 0, float32(math.Inf(1))
	fill(t, 2*n+1, v)
	fill(t, 2*n+2, v)
}

// leaf is the Newton step of a leaf's samples, shrunk by the rate.
func leaf(idx []int, grad, hess []float64, p params) float32 {
	var g, h float64
	for _, i := range idx {
		g += grad[i]
		h += hess[i]
	}
	return float32(p.rate * g / (h + p.lambda))
}

// bestSplit finds the split of the node's samples with the best gain.
func bestSplit(samples []sample, idx []int, grad, hess []float64, thr [][]float32, d int, p params) (split, bool) {
	var G, H float64
	for _, i := range idx {
		G += grad[i]
		H += hess[i]
	}
	parent := G * G / (H + p.lambda)
	best := split{gain: 1e-9}
	found := false
	gh := make([]float64, 2*(maxBins+1))
	for f := range d {
		nb := len(thr[f])
		if nb == 0 {
			continue
		}
		clear(gh)
		for _, i := range idx {
			b := samples[i].bin[f]
			gh[2*int(b)] += grad[i]
			gh[2*int(b)+1] += hess[i]
		}
		// Split at threshold b: bins 0..b go left (x < thr[b]).
		var gl, hl float64
		for b := range nb {
			gl += gh[2*b]
			hl += gh[2*b+1]
			gr, hr := G-gl, H-hl
			if hl < p.minHess || hr < p.minHess {
				continue
			}
			gain := gl*gl/(hl+p.lambda) + gr*gr/(hr+p.lambda) - parent
			if gain > best.gain {
				best, found = split{f: f, b: b, gain: gain}, true
			}
		}
	}
	return best, found
}
