package retrieve

import (
	"math"
	"slices"

	"github.com/memgate/memgate/internal/lexical"
)

// Evidence is what a hit's relevance is computed from: the cosine of the
// query and record vectors (absent when either has no vector) and the
// query-term coverage, the idf-weighted share of the query's terms the
// record contains. Both mean the same in every query, unlike ranks and
// fused scores.
type Evidence struct {
	Dense    *float64 `json:"dense,omitempty"`
	Coverage float64  `json:"coverage"`
	// Features are the ranker's inputs (RankFeatureNames, in order), for
	// the fused top RankDepth of a search that asks for them.
	Features []float64 `json:"features,omitempty"`
}

// RelevanceModel is a logistic model of P(record is evidence for the
// question) over a hit's Evidence: σ(Bias + Dense·cos + Coverage·cov)
// when the hit has a cosine, σ(LexBias + LexCoverage·cov) when it has not
// (no embedder, or no vector yet).
type RelevanceModel struct {
	Bias, Dense, Coverage float64
	LexBias, LexCoverage  float64
}

// DefaultRelevance was fitted offline on the LoCoMo dev conversations
// (categories 1–4; the top 50 hits of every question; label: the hit
// covers an evidence turn; 38,000 hits, 885 evidence) with the built-in
// encoder, by TestFitRelevance in internal/bench (docs/retrieval.md has
// the command), then moved to even prior odds: the fitted intercepts
// (-6.28, -4.99) plus ln(37115/885). Relevance is thus the probability
// that a hit is evidence were evidence and non-evidence equally common;
// 0.5 means its evidence is as typical of answering records as of the
// rest. Other embedders' cosines are on other scales: their relevance is
// a rougher estimate.
var DefaultRelevance = RelevanceModel{
	Bias: -2.54, Dense: 3.30, Coverage: 4.06,
	LexBias: -1.25, LexCoverage: 4.42,
}

// Relevance maps ev to [0, 1].
func (m RelevanceModel) Relevance(ev Evidence) float64 {
	var z float64
	if ev.Dense != nil {
		z = m.Bias + m.Dense**ev.Dense + m.Coverage*ev.Coverage
	} else {
		z = m.LexBias + m.LexCoverage*ev.Coverage
	}
	return 1 / (1 + math.Exp(-z))
}

// queryTerms is the query's distinct analysed terms with their idf over
// docs documents; a term no document holds gets the largest idf, so a
// query word the memory never mentions still counts against coverage.
type queryTerms struct {
	terms []string
	idf   []float64
	sum   float64
}

func newQueryTerms(lex *lexical.Index, terms []string, docs int) queryTerms {
	var q queryTerms
	n := float64(max(docs, 1))
	for _, t := range terms {
		if slices.Contains(q.terms, t) {
			continue
		}
		df := min(float64(lex.DocFreq(t)), n)
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		q.terms, q.idf = append(q.terms, t), append(q.idf, idf)
		q.sum += idf
	}
	return q
}

// coverage is the idf-weighted share of the query terms document key
// holds.
func (q queryTerms) coverage(lex *lexical.Index, key uint32) float64 {
	if q.sum == 0 {
		return 0
	}
	var c float64
	for i, t := range q.terms {
		if lex.HasTerm(key, t) {
			c += q.idf[i]
		}
	}
	return c / q.sum
}

// Coverage is the idf-weighted share of the analysed query terms that
// document key of lex holds (for indexes built outside the engine).
func Coverage(lex *lexical.Index, terms []string, key uint32) float64 {
	docs, _ := lex.Stats()
	return newQueryTerms(lex, terms, docs).coverage(lex, key)
}
