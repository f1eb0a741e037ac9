package retrieve

import (
	"math/bits"

	"github.com/memgate/memgate/internal/lexical"
)

// The cluster around the first hits (issue 18, round six). A question
// asking for several things ("What books has John read?") has evidence
// turns that resemble each other more than they resemble the question;
// the fused first hits are most often among them. These features place a
// candidate relative to the fused top clusterHead: how close its vector
// and its words are to theirs, whether it shares the first hit's speaker
// and session, how many turns it lies from one of them. They are computed
// from the search's own candidates only (in.order holds what the filter
// admits), so a turn the filter hides lends no candidate a feature.

// clusterHead is how many fused first hits the cluster is drawn around.
const clusterHead = 3

// clusterFeatures sets the cluster features of each key of keys (the
// fused order's head; vecs[i] the stored vector of keys[i] or nil,
// places[i] its place in its session, ct the terms it shares) in
// xs[i]; e.mu is held.
func (e *Engine) clusterFeatures(keys []uint32, vecs [][]float32, places []place, ct *candidateTerms, xs [][]float64) {
	if len(keys) < 2 {
		return
	}
	head := keys[:min(clusterHead, len(keys))]

	hv := vecs[:len(head)]
	hcov := ct.hcov
	for i, k := range keys {
		x := xs[i]
		v := vecs[i]
		p := places[i]
		var cosN int
		var cosSum float64
		dist := -1
		for j, h := range head {
			if h == k {
				continue
			}
			if v != nil && hv[j] != nil && len(v) == len(hv[j]) {
				c := dot32(v, hv[j])
				if j == 0 {
					x[fCluCosFirst] = c
				}
				if cosN == 0 || c > x[fCluCosMax3] {
					x[fCluCosMax3] = c
				}
				cosSum += c
				cosN++
			}
			x[fCluOverlap3] = max(x[fCluOverlap3], hcov[j][i])
			if hp := places[j]; p.found && hp.found && p.sk == hp.sk {
				d := p.pos - hp.pos
				if d < 0 {
					d = -d
				}
				if dist < 0 || d < dist {
					dist = d
				}
			}
		}
		if cosN > 0 {
			x[fCluCosMean3] = cosSum / float64(cosN)
		}
		if dist >= 0 {
			x[fCluTurnDist] = 1 / (1 + float64(dist))
		}
		if k != head[0] {
			x[fSameSession] = b2f(p.found && places[0].found && p.sk == places[0].sk)
			x[fSameSpeaker] = b2f(ct.sameSpeaker[i])
		}
	}
}

// dot32 is the dot product of two vectors of one length.
func dot32(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// candidateTerms is what the features need of the candidates' terms:
// the share of each cluster head's words (idf-weighted, as coverage
// weighs the question's) every candidate holds, its coverage, whether
// the user said it, how many of the question's match terms it holds
// and whether it holds a speaker term of the fused first hit.
type candidateTerms struct {
	hcov        [][]float64 // hcov[j][i]: of head j's words, keys[i]'s share
	cov         []float64
	user        []bool
	keyMatch    []float64
	sameSpeaker []bool
}

// candidateTerms finds them in one walk of each candidate's term list
// (lexical.WordOverlapsAndMasks) when the terms asked about fit a mask,
// else term by term; the values are the same either way. e.mu is held.
func (e *Engine) candidateTerms(in *rankInputs, keys []uint32) *candidateTerms {
	n := len(keys)
	ct := &candidateTerms{cov: make([]float64, n), user: make([]bool, n), keyMatch: make([]float64, n), sameSpeaker: make([]bool, n)}
	head := keys[:min(clusterHead, n)]
	docs := float64(max(in.docs, 1))
	idf := func(df int) float64 { return logIDF(docs, min(float64(df), docs)) }
	user := lexical.FieldTerm(speakerField, speakerUser)
	firstSpeakers := e.lex.FieldTerms(head[0], speakerField)
	qt := in.qt
	if qt.sum == 0 {
		qt.terms = nil // no coverage to compute
	}
	// The probes: the question's terms, the user's speaker term, the
	// match terms, the first hit's speaker terms.
	probes := make([]string, 0, len(qt.terms)+1+len(in.matchTerms)+len(firstSpeakers))
	probes = append(append(append(append(probes, qt.terms...), user), in.matchTerms...), firstSpeakers...)
	if len(probes) > 64 {
		ct.normalise(e.lex.WordOverlaps(head, keys, idf))
		for i, k := range keys {
			ct.cov[i] = in.qt.coverage(e.lex, k)
			ct.user[i] = e.lex.HasTerm(k, user)
			for _, t := range in.matchTerms {
				if e.lex.HasTerm(k, t) {
					ct.keyMatch[i]++
				}
			}
			for _, s := range firstSpeakers {
				if e.lex.HasTerm(k, s) {
					ct.sameSpeaker[i] = true
					break
				}
			}
		}
		return ct
	}
	masks := make([]uint64, n)
	ct.normalise(e.lex.WordOverlapsAndMasks(head, keys, idf, probes, masks))
	nq, nm := len(qt.terms), len(in.matchTerms)
	for i, m := range masks {
		if m == 0 {
			continue
		}
		// The coverage sums the held terms' idf in the question's
		// order, as queryTerms.coverage does.
		if cm := m & (1<<nq - 1); cm != 0 {
			var c float64
			for j := range nq {
				if cm&(1<<j) != 0 {
					c += qt.idf[j]
				}
			}
			ct.cov[i] = c / qt.sum
		}
		ct.user[i] = m&(1<<nq) != 0
		ct.keyMatch[i] = float64(bits.OnesCount64(m >> (nq + 1) & (1<<nm - 1)))
		ct.sameSpeaker[i] = m>>(nq+1+nm) != 0
	}
	return ct
}

// normalise sets hcov to the shares: each head's overlaps over its total.
func (ct *candidateTerms) normalise(hcov [][]float64, totals []float64) {
	for j, t := range totals {
		if t > 0 {
			for i := range hcov[j] {
				hcov[j][i] /= t
			}
		}
	}
	ct.hcov = hcov
}
