// Command rankgen fits the retrieval ranker (rankModel) on
// features files written by `memgate bench --features` for the LoCoMo and
// LongMemEval development files, and reports it cross-validated by
// conversation: the conversations are split into five folds, each fold
// is scored by a model fitted on the other four, so no conversation is
// both trained and scored. It prints, per fold, the fused order's and
// the ranker's figures; with -out it writes the model fitted on every
// conversation as Go source (for the engine, once a model wins: none has,
// see docs/retrieval.md).
//
//	go run ./internal/retrieve/rankgen -locomo loc-feat.jsonl -longmemeval lme-feat.jsonl [-out internal/retrieve/ranker_weights.go]
//
// It runs offline, never at run time.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/logit"
)

const folds = 5

type question struct {
	bench.FeatureLine
	locomo bool
	fold   int
	x      [][]float64
	y      []float64
}

func main() {
	loc := flag.String("locomo", "", "LoCoMo features file")
	lme := flag.String("longmemeval", "", "LongMemEval features file")
	out := flag.String("out", "", "write the model fitted on every conversation to this Go file")
	l2 := flag.Float64("l2", 1, "L2 penalty of the logistic fit")
	flag.Parse()
	var qs []*question
	for _, f := range []struct {
		path   string
		locomo bool
	}{{*loc, true}, {*lme, false}} {
		if f.path == "" {
			continue
		}
		got, err := read(f.path, f.locomo)
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
	fmt.Println("fold  set          n   base r@10 rank r@10  base mrr  rank mrr  base all@10 rank all@10  base s@1 rank s@1")
	var tot [2][2]acc
	for f := range folds {
		m := fit(qs, func(q *question) bool { return q.fold != f }, *l2)
		var a [2][2]acc // [locomo?][base,ranker]
		for _, q := range qs {
			if q.fold != f || !q.Headline {
				continue
			}
			i := 0
			if q.locomo {
				i = 1
			}
			a[i][0].add(q, order(q, nil))
			a[i][1].add(q, order(q, &m))
			tot[i][0].add(q, order(q, nil))
			tot[i][1].add(q, order(q, &m))
		}
		for i, name := range []string{"longmemeval", "locomo"} {
			if a[i][0].n > 0 {
				fmt.Printf("%-5d %-11s %s\n", f, name, row(a[i]))
			}
		}
	}
	for i, name := range []string{"longmemeval", "locomo"} {
		if tot[i][0].n > 0 {
			fmt.Printf("%-5s %-11s %s\n", "all", name, row(tot[i]))
		}
	}
	m := fit(qs, func(*question) bool { return true }, *l2)
	fmt.Printf("model on every conversation: bias %.4f weights %.4f\n", m.Bias, m.W)
	if *out != "" {
		if err := write(*out, m); err != nil {
			fmt.Fprintln(os.Stderr, "rankgen:", err)
			os.Exit(1)
		}
	}
}

func read(path string, locomo bool) ([]*question, error) {
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
		top := 0.0
		if len(q.Hits) > 0 {
			top = q.Hits[0].Score
		}
		sess := map[string]float64{}
		depth := min(len(q.Hits), rankDepth)
		for _, h := range q.Hits[:depth] {
			if len(h.Turns) > 0 {
				sess[bench.TurnSession(h.Turns[0])] += 1 / float64(depth)
			}
		}
		for r, h := range q.Hits {
			if r >= rankDepth {
				break
			}
			share := 0.0
			if len(h.Turns) > 0 {
				share = sess[bench.TurnSession(h.Turns[0])]
			}
			rel := 0.0
			if top > 0 {
				rel = h.Score / top
			}
			q.x = append(q.x, rankFeatures(r, rel, share, h.Signals, h.Evidence))
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

// order returns the hit indexes in the fused order (m nil) or by the
// model's score, ties by fused rank.
func order(q *question, m *rankModel) []int {
	idx := make([]int, len(q.x))
	for i := range idx {
		idx[i] = i
	}
	if m != nil {
		s := make([]float64, len(q.x))
		for i, x := range q.x {
			s[i] = m.Score(x)
		}
		sort.SliceStable(idx, func(a, b int) bool { return s[idx[a]] > s[idx[b]] })
	}
	return idx
}

// acc accumulates a ranking's figures: LoCoMo recall@10 (mean fraction of
// evidence turns), MRR of the first evidence hit, recall_all@10, and
// session recall@1 (the first hit in an evidence session).
type acc struct {
	n                      int
	r10, mrr, all10, sess1 float64
}

func (a *acc) add(q *question, idx []int) {
	a.n++
	found := map[string]bool{}
	first := 0
	for r, i := range idx {
		for _, t := range q.Hits[i].Turns {
			if slices.Contains(q.Evidence, t) {
				if r < 10 {
					found[t] = true
				}
				if first == 0 {
					first = r + 1
				}
			}
		}
	}
	a.r10 += float64(len(found)) / float64(len(q.Evidence))
	if len(found) == len(q.Evidence) {
		a.all10++
	}
	if first > 0 {
		a.mrr += 1 / float64(first)
	}
	if len(idx) > 0 {
		for _, t := range q.Hits[idx[0]].Turns {
			if slices.Contains(q.EvidenceSessions, bench.TurnSession(t)) {
				a.sess1++
				break
			}
		}
	}
}

func row(a [2]acc) string {
	f := func(x acc, v float64) float64 { return v / float64(x.n) }
	return fmt.Sprintf("%4d %9.3f %9.3f %9.3f %9.3f %11.3f %11.3f %8.3f %8.3f", a[0].n,
		f(a[0], a[0].r10), f(a[1], a[1].r10), f(a[0], a[0].mrr), f(a[1], a[1].mrr),
		f(a[0], a[0].all10), f(a[1], a[1].all10), f(a[0], a[0].sess1), f(a[1], a[1].sess1))
}

// fit is an L2-penalised logistic regression of "the hit covers an
// evidence turn" on the features of the questions use admits, by Newton's
// method; each dataset's samples are weighted so both count alike.
func fit(qs []*question, use func(*question) bool, l2 float64) rankModel {
	var d int
	var nLoc, nLme float64
	for _, q := range qs {
		if use(q) && len(q.x) > 0 {
			d = len(q.x[0]) + 1
			if q.locomo {
				nLoc += float64(len(q.x))
			} else {
				nLme += float64(len(q.x))
			}
		}
	}
	if d == 0 {
		return rankModel{}
	}
	wLoc, wLme := 1.0, 1.0
	if nLoc > 0 && nLme > 0 {
		wLme = nLoc / nLme
	}
	var samples []logit.Sample
	for _, q := range qs {
		if !use(q) {
			continue
		}
		sw := wLoc
		if !q.locomo {
			sw = wLme
		}
		for j, x := range q.x {
			samples = append(samples, logit.Sample{X: x, Y: q.y[j], Weight: sw})
		}
	}
	w := logit.Fit(samples, logit.Options{Iters: 30, L2: l2})
	return rankModel{Bias: w[0], W: w[1:]}
}

func write(path string, m rankModel) error {
	var b strings.Builder
	b.WriteString("// Code generated by internal/retrieve/rankgen; DO NOT EDIT.\n\npackage retrieve\n\n")
	b.WriteString("// DefaultRanker is fitted on the LoCoMo and LongMemEval development\n// files (docs/retrieval.md).\n")
	fmt.Fprintf(&b, "var DefaultRanker = RankModel{Bias: %v, W: []float64{", m.Bias)
	for i, w := range m.W {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%v", w)
	}
	b.WriteString("}}\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
