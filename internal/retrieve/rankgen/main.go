// Command rankgen fits the learned ranker (retrieve.RankModel) on the
// features files `memgate bench locomo|longmemeval --features FILE
// --ranker off` writes for the LoCoMo and LongMemEval development files,
// and reports it cross-validated by conversation: the conversations are
// split into five folds, each fold is re-ranked by a model fitted on the
// other four (of both files), so no conversation is both trained and
// scored. It prints, per fold and for all folds, the fused order's and
// the ranker's figures; with -out it writes the model fitted on every
// conversation as Go source (internal/retrieve/ranker_weights.go).
//
// With -extra, the questions of another LongMemEval features file (the
// oracle file's) are added to the training only: a question and its
// twin there (same question id) fall in the same fold, so a held-out
// question's twin is never trained on, and the extra questions are never
// in the figures of the development files (their own held-out figures
// are printed apart, as the set "extra"). -fold-seed deals the
// conversations to the folds in a seeded order instead, to check a
// choice of settings on partitions it was not made on.
//
//	go run ./internal/retrieve/rankgen -locomo loc.jsonl -longmemeval lme.jsonl [-extra orc.jsonl -extra-weight 0.5] [-out internal/retrieve/ranker_weights.go]
//
// It runs offline, never at run time; the fit is deterministic.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/retrieve"
)

const folds = 5

type question struct {
	bench.FeatureLine
	locomo bool
	extra  bool // trained on, never in the development files' figures
	fold   int
	x      [][]float64
	y      []float64
}

func main() {
	loc := flag.String("locomo", "", "LoCoMo features file")
	lme := flag.String("longmemeval", "", "LongMemEval features file")
	extra := flag.String("extra", "", "LongMemEval-format features file added to the training only (the oracle file's)")
	out := flag.String("out", "", "write the model fitted on every conversation to this Go file")
	var p params
	flag.StringVar(&p.objective, "objective", "lambdarank", "lambdarank, pairwise or pointwise")
	flag.IntVar(&p.trees, "trees", 60, "trees")
	flag.IntVar(&p.treeDepth, "tree-depth", 2, "levels of splits of a tree, 1 to 3")
	flag.Float64Var(&p.rate, "rate", 0.1, "learning rate (shrinkage of each tree)")
	flag.Float64Var(&p.lambda, "lambda", 1, "L2 penalty of a leaf value")
	flag.Float64Var(&p.minHess, "min-hess", 1, "least hessian mass of a leaf")
	flag.Float64Var(&p.lmeWeight, "lme-weight", 4, "weight of a LongMemEval question against a LoCoMo one")
	flag.Float64Var(&p.extraWeight, "extra-weight", 1, "weight of an -extra question against a LongMemEval one")
	flag.Float64Var(&p.subsample, "subsample", 1, "fraction of the training questions each tree is fitted on (drawn with -seed)")
	flag.Uint64Var(&p.seed, "seed", 1, "seed of -subsample's draws")
	flag.BoolVar(&p.keepFirst, "keep-first", false, "keep the fused first hit first; the model orders the rest")
	flag.IntVar(&p.depth, "depth", 50, "the model re-orders the fused top depth (at most retrieve.RankDepth; the features files need that many hits: bench --k-max)")
	foldSeed := flag.Uint64("fold-seed", 0, "0: a conversation's fold is its order of first appearance modulo 5; else each file's conversations are dealt to the folds in an order shuffled with this seed (to check a choice on other partitions)")
	drop := flag.String("drop", "", "comma-separated features to leave out of the fit (zeroed), to measure what they add")
	flag.Parse()
	if p.treeDepth < 1 || p.treeDepth > 3 {
		fmt.Fprintln(os.Stderr, "rankgen: -tree-depth must be 1 to 3")
		os.Exit(2)
	}
	if p.depth < 1 || p.depth > retrieve.RankDepth {
		fmt.Fprintf(os.Stderr, "rankgen: -depth must be 1 to %d\n", retrieve.RankDepth)
		os.Exit(2)
	}
	dropped, err := featureIndexes(*drop)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rankgen:", err)
		os.Exit(2)
	}
	if p.subsample <= 0 || p.subsample > 1 || p.extraWeight < 0 {
		fmt.Fprintln(os.Stderr, "rankgen: -subsample must be in (0, 1], -extra-weight at least 0")
		os.Exit(2)
	}
	if !slices.Contains([]string{"lambdarank", "pairwise", "pointwise"}, p.objective) {
		fmt.Fprintln(os.Stderr, "rankgen: -objective must be lambdarank, pairwise or pointwise")
		os.Exit(2)
	}
	var qs []*question
	for _, f := range []struct {
		path   string
		locomo bool
	}{{*loc, true}, {*lme, false}} {
		if f.path == "" {
			continue
		}
		got, err := read(f.path, f.locomo, dropped)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rankgen:", err)
			os.Exit(1)
		}
		qs = append(qs, got...)
	}
	if len(qs) == 0 {
		fmt.Fprintln(os.Stderr, "rankgen: no questions (give -locomo and/or -longmemeval)")
		os.Exit(2)
	}
	if *foldSeed != 0 {
		shuffleFolds(qs, *foldSeed)
	}
	if *extra != "" {
		got, err := read(*extra, false, dropped)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rankgen:", err)
			os.Exit(1)
		}
		qs = append(qs, twinFolds(qs, got)...)
	}
	pr := &progress{w: os.Stderr, total: folds + 1, start: time.Now()}
	fmt.Print(crossValidate(qs, p, pr.step))
	m := fit(qs, func(*question) bool { return true }, p)
	pr.step("the shipped model, on every fold")
	// In sample (not a validation): what the engine gives with the
	// shipped model on these files, to check the wiring end to end.
	fmt.Print(inSample(qs, &m))
	if *out != "" {
		if err := os.WriteFile(*out, []byte(source(m, os.Args[1:])), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "rankgen:", err)
			os.Exit(1)
		}
	}
}

// inSample is the table of the development files' figures under m (the
// extra questions left out).
func inSample(qs []*question, m *retrieve.RankModel) string {
	var b []byte
	var in [2][2]acc
	for _, q := range qs {
		if q.Headline && !q.extra {
			i := 0
			if q.locomo {
				i = 1
			}
			in[i][0].add(q, order(q, nil))
			in[i][1].add(q, order(q, m))
		}
	}
	for i, name := range []string{"longmemeval", "locomo"} {
		if in[i][0].n > 0 {
			b = fmt.Appendf(b, "%-4s %-11s %s\n", "in", name, in[i][0].row(in[i][1]))
		}
	}
	return string(b)
}

// crossValidate fits a model per fold on the other folds and returns the
// table of the held-out figures, fused order → ranker.
func crossValidate(qs []*question, p params, fitted func(what string)) string {
	var b []byte
	b = fmt.Appendf(b, "%-4s %-11s %4s %s\n", "fold", "set", "n", header())
	names := []string{"longmemeval", "locomo", "extra"}
	var tot [3][2]acc
	for f := range folds {
		m := fit(qs, func(q *question) bool { return q.fold != f }, p)
		fitted(fmt.Sprintf("fold %d held out", f))
		var a [3][2]acc // [longmemeval, locomo, extra][fused, ranker]
		for _, q := range qs {
			if q.fold != f || !q.Headline {
				continue
			}
			i := 0
			switch {
			case q.extra:
				i = 2
			case q.locomo:
				i = 1
			}
			base, ranked := order(q, nil), order(q, &m)
			a[i][0].add(q, base)
			a[i][1].add(q, ranked)
			tot[i][0].add(q, base)
			tot[i][1].add(q, ranked)
		}
		for i, name := range names {
			if a[i][0].n > 0 {
				b = fmt.Appendf(b, "%-4d %-11s %s\n", f, name, a[i][0].row(a[i][1]))
			}
		}
	}
	for i, name := range names {
		if tot[i][0].n > 0 {
			b = fmt.Appendf(b, "%-4s %-11s %s\n", "all", name, tot[i][0].row(tot[i][1]))
		}
	}
	return string(b)
}

// read loads a features file; a question's fold is its conversation's
// order of first appearance, modulo folds.
func read(path string, locomo bool, drop []int) ([]*question, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	convs := map[string]int{}
	var out []*question
	for sc.Scan() {
		q := &question{locomo: locomo}
		if err := json.Unmarshal(sc.Bytes(), &q.FeatureLine); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if _, ok := convs[q.Conv]; !ok {
			convs[q.Conv] = len(convs)
		}
		q.fold = convs[q.Conv] % folds
		for r, h := range q.Hits {
			if r >= retrieve.RankDepth {
				break
			}
			if len(h.Evidence.Features) != len(retrieve.RankFeatureNames) {
				return nil, fmt.Errorf("%s: a hit has %d features, want %d (written by `memgate bench --features` of this version?)",
					path, len(h.Evidence.Features), len(retrieve.RankFeatureNames))
			}
			x := h.Evidence.Features
			for _, f := range drop {
				x[f] = 0
			}
			q.x = append(q.x, x)
			y := 0.0
			for _, t := range h.Turns {
				if slices.Contains(q.Evidence, t) {
					y = 1
				}
			}
			q.y = append(q.y, y)
		}
		out = append(out, q)
	}
	return out, sc.Err()
}

// shuffleFolds deals each file's conversations to the folds in an order
// shuffled with seed (a PCG; deterministic), instead of their order of
// appearance; a conversation's questions stay together.
func shuffleFolds(qs []*question, seed uint64) {
	for i, locomo := range []bool{false, true} {
		var convs []string
		seen := map[string]bool{}
		for _, q := range qs {
			if q.locomo == locomo && !seen[q.Conv] {
				seen[q.Conv] = true
				convs = append(convs, q.Conv)
			}
		}
		rand.New(rand.NewPCG(seed, uint64(i))).Shuffle(len(convs), func(a, b int) { convs[a], convs[b] = convs[b], convs[a] })
		fold := map[string]int{}
		for j, c := range convs {
			fold[c] = j % folds
		}
		for _, q := range qs {
			if q.locomo == locomo {
				q.fold = fold[q.Conv]
			}
		}
	}
}

// twinFolds marks the extra questions as such and gives each the fold of
// its twin (the development question of the same id, its conversation),
// so no held-out question's twin is trained on; a question without a
// twin takes its order of first appearance among those, modulo folds.
func twinFolds(dev, extra []*question) []*question {
	fold := map[string]int{}
	for _, q := range dev {
		fold[q.Conv] = q.fold
	}
	own := map[string]int{}
	for _, q := range extra {
		q.extra = true
		if f, ok := fold[q.Conv]; ok {
			q.fold = f
			continue
		}
		if _, ok := own[q.Conv]; !ok {
			own[q.Conv] = len(own)
		}
		q.fold = own[q.Conv] % folds
	}
	return extra
}

// order returns the hit indexes in the fused order (m nil) or as the
// engine re-orders them (retrieve.Rerank, the hit index as the key).
func order(q *question, m *retrieve.RankModel) []int {
	keys := make([]uint32, len(q.x))
	feats := make(map[uint32][]float64, len(q.x))
	for i, x := range q.x {
		keys[i] = uint32(i)
		feats[uint32(i)] = x
	}
	if m != nil {
		keys = retrieve.Rerank(keys, feats, m)
	}
	idx := make([]int, len(keys))
	for i, k := range keys {
		idx[i] = int(k)
	}
	return idx
}

// featureIndexes are the indexes of the named features (comma-separated).
func featureIndexes(names string) ([]int, error) {
	var out []int
	for n := range strings.SplitSeq(names, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		i := slices.Index(retrieve.RankFeatureNames, n)
		if i < 0 {
			return nil, fmt.Errorf("-drop: no feature %q", n)
		}
		out = append(out, i)
	}
	return out, nil
}

// progress reports each finished fit on w (the fits take most of a run:
// about 8 s each on the development files), with the time a fit took on
// average and an estimate of what is left.
type progress struct {
	w           io.Writer
	total, done int
	start       time.Time
	now         func() time.Time // time.Now when nil
}

func (p *progress) step(what string) {
	now := time.Now
	if p.now != nil {
		now = p.now
	}
	p.done++
	el := now().Sub(p.start)
	per := el / time.Duration(p.done)
	left := per * time.Duration(p.total-p.done)
	fmt.Fprintf(p.w, "rankgen: fit %d/%d (%s) after %.1fs, %.1fs a fit, about %.0fs left\n",
		p.done, p.total, what, el.Seconds(), per.Seconds(), left.Seconds())
}
