package main

import (
	"math"

	"github.com/memgate/memgate/internal/retrieve"
)

// The ranker's features and model. They live here, not in the engine:
// the fitted ranker did not beat the fused order on the held-out folds
// (docs/retrieval.md), so nothing is shipped. A model that wins moves
// RankFeatures into internal/retrieve, so the engine and the generator
// compute the same features.

// rankDepth is how many fused candidates the ranker re-orders.
const rankDepth = 50

// rrfShare is a signal rank's reciprocal-rank share, 0 when the signal
// did not return the candidate.
func rrfShare(s retrieve.SignalScore, ok bool) float64 {
	if !ok || s.Rank <= 0 {
		return 0
	}
	return 60 / (60 + float64(s.Rank))
}

// rankFeatures are the ranker's inputs for the candidate at 0-based fused
// rank, with fused score over the best fused score, its signals and its
// relevance evidence. The generator and the engine call this one
// function, so the shipped weights see the features they were fitted on.
//
// sessShare is the share of the fused top rankDepth in the candidate's
// conversation session (0 for a record outside a session).
func rankFeatures(rank int, relScore, sessShare float64, sig map[string]retrieve.SignalScore, ev retrieve.Evidence) []float64 {
	cos, has := 0.0, 0.0
	if ev.Dense != nil {
		cos, has = *ev.Dense, 1
	}
	lex, lok := sig[retrieve.SignalLexical]
	den, dok := sig[retrieve.SignalDense]
	key, kok := sig[retrieve.SignalKeys]
	return []float64{
		math.Log1p(float64(rank)),
		relScore,
		rrfShare(lex, lok),
		rrfShare(den, dok),
		rrfShare(key, kok),
		ev.Coverage,
		cos,
		has,
		cos * ev.Coverage,
		sessShare,
	}
}

// rankModel is a fitted ranker: score = Bias + Σ W[i]·feature i.
type rankModel struct {
	Bias float64
	W    []float64
}

// Score is the model's score of one candidate's features.
func (m rankModel) Score(f []float64) float64 {
	s := m.Bias
	for i, w := range m.W {
		if i < len(f) {
			s += w * f[i]
		}
	}
	return s
}
