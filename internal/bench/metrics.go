package bench

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Stats are recall figures over a set of questions.
type Stats struct {
	N int `json:"questions"`
	// Recall is the mean fraction of evidence turns in the top k.
	Recall map[int]float64 `json:"-"`
	// Any is the fraction of questions with at least one evidence turn
	// in the top k; All with every evidence turn.
	Any map[int]float64 `json:"-"`
	All map[int]float64 `json:"-"`
	// MRR is the mean reciprocal rank of the first result covering an
	// evidence turn (0 when none is within KMax).
	MRR float64 `json:"-"`
	// Session-level figures, the protocol of published LongMemEval
	// retrieval reports: SessHit[k] is the fraction of questions with a
	// top-k result inside an evidence session, SessRecall[k] the mean
	// fraction of evidence sessions holding a top-k result, SessMRR the
	// mean reciprocal rank of the first result inside an evidence session.
	SessHit    map[int]float64 `json:"-"`
	SessRecall map[int]float64 `json:"-"`
	SessMRR    float64         `json:"-"`
	// SessAllDistinct[k] is the LongMemEval paper's session-level
	// recall_all@k for a turn retriever: the fraction of questions whose
	// every evidence session is among the first k distinct sessions of
	// the ranked turns.
	SessAllDistinct map[int]float64 `json:"-"`
}

func newStats() *Stats {
	return &Stats{Recall: map[int]float64{}, Any: map[int]float64{}, All: map[int]float64{},
		SessHit: map[int]float64{}, SessRecall: map[int]float64{}, SessAllDistinct: map[int]float64{}}
}

func (s *Stats) add(q *QuestionResult, ks []int) {
	s.N++
	n := len(q.Question.Evidence)
	for _, k := range ks {
		c := q.Covered(k)
		s.Recall[k] += float64(c) / float64(n)
		if c > 0 {
			s.Any[k]++
		}
		if c == n {
			s.All[k]++
		}
	}
	if r := q.FirstEvidenceRank(); r > 0 {
		s.MRR += 1 / float64(r)
	}
	sr := q.SessionRanks()
	first := 0
	for _, r := range sr {
		if r > 0 && (first == 0 || r < first) {
			first = r
		}
	}
	if first > 0 {
		s.SessMRR += 1 / float64(first)
	}
	for _, k := range ks {
		c := 0
		for _, r := range sr {
			if r > 0 && r <= k {
				c++
			}
		}
		if first > 0 && first <= k {
			s.SessHit[k]++
		}
		if len(sr) > 0 {
			s.SessRecall[k] += float64(c) / float64(len(sr))
		}
	}
	distinct := q.DistinctSessions()
	for _, k := range ks {
		top := distinct[:min(k, len(distinct))]
		all := len(sr) > 0
		for sess := range sr {
			all = all && slices.Contains(top, sess)
		}
		if all {
			s.SessAllDistinct[k]++
		}
	}
}

func (s *Stats) finish() {
	if s.N == 0 {
		return
	}
	for _, m := range []map[int]float64{s.Recall, s.Any, s.All, s.SessHit, s.SessRecall, s.SessAllDistinct} {
		for k := range m {
			m[k] /= float64(s.N)
		}
	}
	s.MRR /= float64(s.N)
	s.SessMRR /= float64(s.N)
}

// GroupStats are the figures of one question group.
type GroupStats struct {
	Name     string
	Headline bool
	Stats    *Stats
	Skipped  int
}

// Summary is a run's metrics.
type Summary struct {
	Bench string
	Ks    []int
	// Overall covers the headline questions (LoCoMo categories 1-4,
	// LongMemEval non-abstention).
	Overall *Stats
	// Groups in display order; groups without questions are left out.
	Groups  []GroupStats
	Skipped int
	// Latency percentiles of the searches.
	P50, P95, Mean time.Duration
	QPS            float64
	// AbstentionAUC is abstentionAUC over AbstentionN abstention
	// questions (LongMemEval; 0 questions: no figure).
	AbstentionAUC float64
	AbstentionN   int
	// AbstentionAsked counts the abstention questions without evidence
	// that were asked for the figure only (not scored).
	AbstentionAsked int
}

// KsUpTo returns the standard cut-offs not above kmax.
func KsUpTo(kmax int) []int {
	var out []int
	for _, k := range Ks {
		if k <= kmax {
			out = append(out, k)
		}
	}
	if len(out) == 0 || out[len(out)-1] != kmax {
		out = append(out, kmax)
	}
	return out
}

// Summarize computes the metrics of a run.
func Summarize(ds *Dataset, res *Result) *Summary {
	ks := KsUpTo(res.KMax)
	sum := &Summary{Bench: res.Bench, Ks: ks, Overall: newStats()}
	by := map[string]*GroupStats{}
	get := func(name string) *GroupStats {
		g, ok := by[name]
		if !ok {
			g = &GroupStats{Name: name, Stats: newStats()}
			by[name] = g
		}
		return g
	}
	for i := range res.Questions {
		q := &res.Questions[i]
		if len(q.Question.Evidence) == 0 {
			sum.AbstentionAsked++ // asked for AbstentionAUC only
			continue
		}
		g := get(q.Question.Group)
		g.Headline = q.Question.Headline
		g.Stats.add(q, ks)
		if q.Question.Headline {
			sum.Overall.add(q, ks)
		}
	}
	for name, n := range res.Skipped {
		get(name).Skipped += n
		sum.Skipped += n
	}
	sum.Overall.finish()
	sum.AbstentionAUC, sum.AbstentionN = abstentionAUC(res)
	order := slices.Clone(ds.Groups)
	var extra []string
	for name := range by {
		if !slices.Contains(order, name) {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range append(order, extra...) {
		if g, ok := by[name]; ok {
			g.Stats.finish()
			sum.Groups = append(sum.Groups, *g)
		}
	}
	lat := make([]time.Duration, 0, len(res.Questions))
	var total time.Duration
	for _, q := range res.Questions {
		lat = append(lat, q.Latency)
		total += q.Latency
	}
	slices.Sort(lat)
	sum.P50, sum.P95 = percentile(lat, 0.50), percentile(lat, 0.95)
	if len(lat) > 0 {
		sum.Mean = total / time.Duration(len(lat))
	}
	if res.Query > 0 {
		sum.QPS = float64(len(res.Questions)) / res.Query.Seconds()
	}
	return sum
}

// percentile returns the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// abstentionAUC is the probability that an answerable (headline)
// question's best hit has a higher relevance than an abstention
// question's (ties count half; no hit counts as relevance 0): how well
// relevance tells "memory holds the answer" from "it does not". n is the
// number of abstention questions; 0 means there is no figure.
func abstentionAUC(res *Result) (auc float64, n int) {
	var pos, neg []float64
	for _, q := range res.Questions {
		top := 0.0
		if len(q.Hits) > 0 {
			top = q.Hits[0].Relevance
		}
		switch {
		case q.Question.Group == Abstention:
			neg = append(neg, top)
		case q.Question.Headline:
			pos = append(pos, top)
		}
	}
	if len(pos) == 0 || len(neg) == 0 {
		return 0, 0
	}
	var wins float64
	for _, p := range pos {
		for _, x := range neg {
			switch {
			case p > x:
				wins++
			case p == x:
				wins += 0.5
			}
		}
	}
	return round4(wins / float64(len(pos)*len(neg))), len(neg)
}
