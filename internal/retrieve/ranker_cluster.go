package retrieve

import (
	"math"
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
// places[i] its place in its session) in xs[i]; e.mu is held.
func (e *Engine) clusterFeatures(in *rankInputs, keys []uint32, vecs [][]float32, places []place, xs [][]float64) {
	if len(keys) < 2 {
		return
	}
	head := keys[:min(clusterHead, len(keys))]

	hv := vecs[:len(head)]
	// The share of each head hit's words (idf-weighted, as coverage
	// weighs the question's) every key holds.
	n := float64(max(in.docs, 1))
	idf := func(df int) float64 {
		d := min(float64(df), n)
		return math.Log(1 + (n-d+0.5)/(d+0.5))
	}
	hcov, totals := e.lex.WordOverlaps(head, keys, idf)
	for j, t := range totals {
		if t > 0 {
			for i := range hcov[j] {
				hcov[j][i] /= t
			}
		}
	}
	// The keys holding one of the first hit's speaker terms.
	firstSpeakers := e.lex.FieldTerms(head[0], speakerField)
	spoke := e.termMasks(keys, firstSpeakers)

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
			x[fSameSpeaker] = b2f(spoke[i] != 0)
			for _, s := range firstSpeakers[min(len(firstSpeakers), 64):] { // past a mask
				if x[fSameSpeaker] == 0 && e.lex.HasTerm(k, s) {
					x[fSameSpeaker] = 1
				}
			}
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
