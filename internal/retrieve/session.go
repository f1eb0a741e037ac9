package retrieve

import (
	"math"
	"slices"

	"github.com/memgate/memgate/internal/lexical"
)

// Session relevance. A conversation turn rarely repeats the words of a
// question about it, but the session it belongs to often does, spread over
// several turns ("I'm looking for camping gear" ... "the trip to
// Yosemite"). sessionScores scores each session holding a query term by
// BM25 with the whole session as one document; sessionPrior turns that
// into a boost of the session's turns.

// sessionScores returns the BM25 score (k1 1.2, b 0.75) of every session
// of allowed episodes holding a query term, keyed by the session's first
// turn key. Session statistics are estimated from the sessions the query
// touches: their mean length and turn count, and scopeDocs (the turns in
// scope) for the number of sessions.
func (e *Engine) sessionScores(terms []string, allow func(uint32) bool, scopeDocs int) map[uint32]float64 {
	if len(e.sessions) == 0 {
		return nil
	}
	q := slices.Clone(terms)
	slices.Sort(q)
	q = slices.Compact(q)
	type sess struct {
		tf   []int
		len  int
		size int
	}
	byHead := map[uint32]*sess{}
	head := map[uint32]uint32{} // turn key → first turn of its session (0 when none)
	headOf := func(k uint32) (uint32, bool) {
		if h, ok := head[k]; ok {
			return h, h != math.MaxUint32
		}
		sk, ok := e.sessionKey(k)
		if !ok {
			head[k] = math.MaxUint32
			return 0, false
		}
		list := e.sessions[sk]
		h := list[0]
		for _, t := range list {
			head[t] = h
		}
		if byHead[h] == nil {
			s := &sess{tf: make([]int, len(q)), size: len(list)}
			for _, t := range list {
				s.len += e.lex.DocLen(t)
			}
			byHead[h] = s
		}
		return h, true
	}
	for i, t := range q {
		if t == "" {
			continue
		}
		// Collected first: headOf reads the index, which Postings holds.
		// Only session turns count: the postings of other documents are
		// skipped by the set of session turns, without a call each.
		var keys []uint32
		var tfs []int
		e.lex.PostingsIn(t, e.sessBits, func(k uint32, tf int) {
			if int(k) < len(e.docs) && allow(k) {
				keys, tfs = append(keys, k), append(tfs, tf)
			}
		})
		for j, k := range keys {
			if h, ok := headOf(k); ok {
				byHead[h].tf[i] += tfs[j]
			}
		}
	}
	if len(byHead) == 0 {
		return nil
	}
	var lenSum, sizeSum float64
	df := make([]int, len(q))
	for _, s := range byHead {
		lenSum += float64(s.len)
		sizeSum += float64(s.size)
		for i, tf := range s.tf {
			if tf > 0 {
				df[i]++
			}
		}
	}
	touched := float64(len(byHead))
	avgLen := max(1, lenSum/touched)
	n := max(touched, float64(scopeDocs)/(sizeSum/touched))
	const k1, b = 1.2, 0.75
	idf := make([]float64, len(q))
	for i := range q {
		idf[i] = math.Log(1 + (n-float64(df[i])+0.5)/(float64(df[i])+0.5))
	}
	out := make(map[uint32]float64, len(byHead))
	for h, s := range byHead {
		sc := 0.0
		norm := k1 * (1 - b + b*float64(s.len)/avgLen)
		for i, tf := range s.tf {
			if tf > 0 {
				sc += idf[i] * float64(tf) * (k1 + 1) / (float64(tf) + norm)
			}
		}
		out[h] = sc
	}
	return out
}

// sessionPrior multiplies the fused score of every candidate turn by
// 1 + w·s/max, s being its session's score and max the best session's,
// and records s/max in tr when given (the ranker's feature).
func (e *Engine) sessionPrior(text string, fused map[uint32]float64, w float64, allow func(uint32) bool, scopeDocs int, tr *boostTrace) {
	scores := e.sessionScores(lexical.Analyze(text, true), allow, scopeDocs)
	best := 0.0
	for _, s := range scores {
		best = max(best, s)
	}
	if best <= 0 {
		return
	}
	for k := range fused {
		sk, ok := e.sessionKey(k)
		if !ok {
			continue
		}
		if s, ok := scores[e.sessions[sk][0]]; ok {
			fused[k] *= 1 + w*s/best
			if tr != nil {
				tr.session[k] = s / best
			}
		}
	}
}
