package retrieve

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"regexp"
	"slices"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

// The learned ranker (issue 18, item 5). Fusion multiplies the speaker,
// session and time boosts into one score and forgets them; the ranker
// sees them separately, beside features the fusion has no place for (the
// best fused score of another turn of the same session, the turn's
// position in its session, whether the user said it, how many of the
// question's category keys and names it holds, its length, how close it
// lies to the fused first hits: ranker_cluster.go), and re-orders the
// fused top RankModel.Depth (at most RankDepth) with a small ensemble of
// regression trees fitted offline by internal/retrieve/rankgen on the development
// files (cross-validated by conversation; docs/retrieval-rounds.md). The
// features are reported per hit (Evidence.Features, under explain), so
// the generator trains on exactly what the engine computes.

// RankDepth is how many fused candidates the engine computes features
// for, and so the most a model may re-order (RankModel.Depth).
const RankDepth = 100

// shareDepth is the head of the fused order session_share counts in.
const shareDepth = 50

// RankFeatureNames name the ranker's features, in order.
var RankFeatureNames = []string{
	"log_rank",      // log(1 + 0-based fused rank)
	"score",         // fused score over the best fused score
	"lexical",       // the lexical list's reciprocal-rank share 60/(60+rank), 0 when absent
	"dense",         // the dense list's share
	"keys",          // the category-keys list's share
	"facts",         // the share of the question the best fact citing the turn holds, squared
	"coverage",      // Evidence.Coverage
	"cosine",        // Evidence.Dense, 0 without a vector
	"has_vector",    // 1 when the cosine is known
	"speaker",       // 1 when the speaker boost applied
	"session",       // the turn's session score over the best session's (0 outside a session)
	"time",          // 1 when the time boost applied
	"neighbour",     // the best fused score of another candidate of the same session, over the best
	"position",      // the turn's place in its session, 0 first … 1 last
	"opening",       // 1 for a session's first turn
	"user_turn",     // 1 when the turn's speaker is the user
	"key_match",     // how many of the question's focus category keys and names the turn holds
	"length",        // log(1 + the turn's indexed length)
	"session_share", // the share of the fused top RankDepth in the turn's session
	"q_aggregate",   // 1 when the question asks for a count or a list ("how many", "all the")
	"cosine_rel",    // the cosine over the best cosine among the candidates
	"coverage_rel",  // the coverage over the best coverage among the candidates
	"opening_boost", // 1 when the opening boost applied (opening.go)
	// The cluster around the fused first hits (ranker_cluster.go).
	"clu_cos_first", // cosine of the turn's vector to the fused first hit's (0 for it, or without vectors)
	"clu_cos_max3",  // the best cosine to the fused top 3 (itself excluded)
	"clu_cos_mean3", // the mean cosine to the fused top 3 (itself excluded)
	"clu_overlap3",  // the most of one fused top-3 hit's words (idf-weighted) the turn holds (itself excluded)
	"same_speaker",  // 1 when the fused first hit has the turn's speaker
	"same_session",  // 1 when the fused first hit is in the turn's session
	"clu_turn_dist", // 1/(1+d), d the turns to the nearest fused top-3 hit of its session (0: none)
}

// Feature indexes used by the engine.
const (
	fLogRank = iota
	fScore
	fLexical
	fDense
	fKeys
	fFacts
	fCoverage
	fCosine
	fHasVector
	fSpeaker
	fSession
	fTime
	fNeighbour
	fPosition
	fOpening
	fUserTurn
	fKeyMatch
	fLength
	fSessionShare
	fAggregate
	fCosineRel
	fCoverageRel
	fOpeningBoost
	fCluCosFirst
	fCluCosMax3
	fCluCosMean3
	fCluOverlap3
	fSameSpeaker
	fSameSession
	fCluTurnDist
	numRankFeatures
)

// aggregateRe finds questions that ask for every instance of something.
var aggregateRe = regexp.MustCompile(`(?i)\b(how many|how much|in total|all the|list|count|times)\b`)

// RankTree is a regression tree of depth three, its nodes in heap order:
// node i splits on x[F[i]] < T[i], its left child is node 2i+1, its right
// 2i+2; nodes 7 to 14 are the leaves, Leaf[0..7] their values, left to
// right. A shallower tree has nodes with an infinite threshold, which
// send every sample left.
type RankTree struct {
	F    [rankNodes]uint8
	T    [rankNodes]float32
	Leaf [rankNodes + 1]float32
}

// rankNodes is the number of inner nodes of a RankTree (depth three).
const rankNodes = 7

// Score is the tree's value for features x.
func (t *RankTree) Score(x []float64) float64 {
	n := 0
	for n < rankNodes {
		if x[t.F[n]] < float64(t.T[n]) {
			n = 2*n + 1
		} else {
			n = 2*n + 2
		}
	}
	return float64(t.Leaf[n-rankNodes])
}

// RankModel is a fitted ranker: the sum of its trees' values. With
// KeepFirst the fused first hit stays first and the model orders the
// rest.
type RankModel struct {
	Trees     []RankTree
	KeepFirst bool
	// Depth is how many fused candidates it re-orders; 0 is 50, the
	// depth of the models before it was recorded.
	Depth int
}

// depth is the number of fused candidates m re-orders.
func (m *RankModel) depth() int {
	if m.Depth <= 0 {
		return 50
	}
	return min(m.Depth, RankDepth)
}

// Score is the model's score of one candidate's features.
func (m *RankModel) Score(x []float64) float64 {
	s := 0.0
	for i := range m.Trees {
		s += m.Trees[i].Score(x)
	}
	return s
}

// Sum is a checksum of the model: the sha256 of its trees' fields, little
// endian. The generated weights file states the sum of what the generator
// fitted, so a test tells a hand edit of the weights.
func (m *RankModel) Sum() string {
	h := sha256.New()
	if m.KeepFirst {
		h.Write([]byte("keep-first"))
	}
	if m.Depth > 0 {
		_ = binary.Write(h, binary.LittleEndian, int64(m.Depth))
	}
	for _, t := range m.Trees {
		_ = binary.Write(h, binary.LittleEndian, t)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// inf32 is the threshold of a node that sends every sample left.
var inf32 = float32(math.Inf(1))

// boostTrace records, per candidate, what the fusion's boosts did: the
// speaker and time boosts applied (1) or not, and the relative session
// score. Filled only when a search ranks or reports features.
type boostTrace struct {
	speaker, time, opening map[uint32]bool
	session                map[uint32]float64
}

func newBoostTrace() *boostTrace {
	return &boostTrace{speaker: map[uint32]bool{}, time: map[uint32]bool{}, opening: map[uint32]bool{}, session: map[uint32]float64{}}
}

// rankInputs is what the features of one search's candidates are computed
// from; e.mu is held while it is used.
type rankInputs struct {
	order        []uint32 // the fused order, best first
	fused        map[uint32]float64
	lists        map[string][]uint32
	factStrength map[uint32]float64
	trace        *boostTrace
	qt           queryTerms
	qvec         []float32
	docs         int      // the documents in scope, for idf
	matchTerms   []string // the question's focus keys and entity keys some document holds
	aggregate    bool
}

// queryMatchTerms lists the category-key and entity field terms of the
// question that some document holds.
func (e *Engine) queryMatchTerms(text string) []string {
	var out []string
	for _, t := range keyTerms(text) {
		if e.lex.DocFreq(t) > 0 {
			out = append(out, t)
		}
	}
	for _, x := range textEntities(text, maxTurnEntities) {
		f := lexical.FieldTerm(entField, x)
		if e.lex.DocFreq(f) > 0 && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// rankFeatures computes the features of the first RankDepth candidates
// of in.order; e.mu is held.
func (e *Engine) rankFeatures(in *rankInputs) map[uint32][]float64 {
	n := min(len(in.order), RankDepth)
	out := make(map[uint32][]float64, n)
	if n == 0 {
		return out
	}
	keys := in.order[:n]
	top := in.fused[in.order[0]]
	sess := e.sessionBests(in, min(n, shareDepth))
	// Each candidate's stored vector, fetched once for the cosine and
	// the cluster (nil where none), and its place in its session.
	vecs := make([][]float32, n)
	if e.vecs != nil {
		for r, k := range keys {
			vecs[r], _ = e.vecs.Vector(k)
		}
	}
	places := e.places(keys)
	ct := e.candidateTerms(in, keys)
	// One backing array for all the feature vectors.
	buf := make([]float64, n*numRankFeatures)
	xs := make([][]float64, n)
	for r, k := range keys {
		x := buf[r*numRankFeatures : (r+1)*numRankFeatures : (r+1)*numRankFeatures]
		xs[r] = x
		x[fLogRank] = math.Log1p(float64(r))
		if top > 0 {
			x[fScore] = in.fused[k] / top
		}
		x[fLexical] = listShare(in.lists[SignalLexical], k)
		x[fDense] = listShare(in.lists[SignalDense], k)
		x[fKeys] = listShare(in.lists[SignalKeys], k)
		x[fFacts] = in.factStrength[k]
		x[fCoverage] = ct.cov[r]
		if v := vecs[r]; in.qvec != nil && v != nil && len(v) == len(in.qvec) {
			x[fCosine], x[fHasVector] = dot32(v, in.qvec), 1
		}
		if in.trace != nil {
			x[fSpeaker] = b2f(in.trace.speaker[k])
			x[fSession] = in.trace.session[k]
			x[fTime] = b2f(in.trace.time[k])
			x[fOpeningBoost] = b2f(in.trace.opening[k])
		}
		if p := places[r]; p.inSession {
			b := sess[p.sk]
			nb := b.best
			if b.bestKey == k {
				nb = b.second
			}
			if top > 0 {
				x[fNeighbour] = nb / top
			}
			if p.found {
				if p.size > 1 {
					x[fPosition] = float64(p.pos) / float64(p.size-1)
				}
				x[fOpening] = b2f(p.pos == 0)
			}
			x[fSessionShare] = float64(b.inTop) / float64(min(n, shareDepth))
		}
		x[fUserTurn] = b2f(ct.user[r])
		x[fKeyMatch] = ct.keyMatch[r]
		x[fLength] = math.Log1p(float64(e.lex.DocLen(k)))
		x[fAggregate] = b2f(in.aggregate)
		out[k] = x
	}
	relativeScales(xs)
	e.clusterFeatures(keys, vecs, places, ct, xs)
	return out
}

// place is a candidate's session and its place in it.
type place struct {
	sk        sessKey
	inSession bool // sk is the turn's session
	found     bool // the session's list holds the turn, at pos of size
	pos, size int
}

// places looks up each key's session and place in it once, for the
// features that use them; e.mu is held.
func (e *Engine) places(keys []uint32) []place {
	out := make([]place, len(keys))
	for r, k := range keys {
		sk, ok := e.sessionKey(k)
		if !ok {
			continue
		}
		list := e.sessions[sk]
		i, found := slices.BinarySearchFunc(list, k, e.turnCompare)
		out[r] = place{sk: sk, inSession: true, found: found, pos: i, size: len(list)}
	}
	return out
}

// sessBest is a session's best and second-best fused score among a
// search's candidates (bestKey holds the best) and its count in the
// ranker's top n.
type sessBest struct {
	best, second float64
	bestKey      uint32
	inTop        int
}

// sessionBests computes sessBest for every session with a candidate in
// in.fused, counting the first n of in.order; e.mu is held.
func (e *Engine) sessionBests(in *rankInputs, n int) map[sessKey]*sessBest {
	sess := map[sessKey]*sessBest{}
	for k, s := range in.fused {
		sk, ok := e.sessionKey(k)
		if !ok {
			continue
		}
		b := sess[sk]
		if b == nil {
			b = &sessBest{bestKey: k}
			sess[sk] = b
			b.best = s
			continue
		}
		switch {
		case s > b.best:
			b.second, b.best, b.bestKey = b.best, s, k
		case s > b.second:
			b.second = s
		}
	}
	for _, k := range in.order[:n] {
		if sk, ok := e.sessionKey(k); ok {
			sess[sk].inTop++
		}
	}
	return sess
}

// relativeScales sets each candidate's cosine and coverage relative to
// the best candidate's: the raw values are on each query's own scale,
// the relative ones compare across queries.
func relativeScales(xs [][]float64) {
	var bestCos, bestCov float64
	for _, x := range xs {
		bestCos, bestCov = max(bestCos, x[fCosine]), max(bestCov, x[fCoverage])
	}
	for _, x := range xs {
		if bestCos > 0 {
			x[fCosineRel] = x[fCosine] / bestCos
		}
		if bestCov > 0 {
			x[fCoverageRel] = x[fCoverage] / bestCov
		}
	}
}

// turnsOnly reports whether a filter admits conversation turns
// (episodes) only. The ranker was fitted on rankings of turns, whose
// features (session, position, speaker) other records lack, so it
// re-ranks only such searches (the gateway's recall of a conversation,
// the benches); a search mixing in facts or documents keeps the fused
// order.
func turnsOnly(f *Filter) bool {
	if len(f.Types) == 0 {
		return false
	}
	for _, t := range f.Types {
		if t != memory.Episode {
			return false
		}
	}
	return true
}

// Rerank re-orders the first m.Depth keys of order by the model's score
// of their features (ties keep the fused order); the rest follow. The
// engine and the generator (rankgen, scoring its folds) both order by
// it, so the generator's figures are the engine's.
func Rerank(order []uint32, feats map[uint32][]float64, m *RankModel) []uint32 {
	n := min(len(order), m.depth())
	from := 0
	if m.KeepFirst {
		from = min(1, n)
	}
	head := make([]scoredKey, 0, n-from)
	for _, k := range order[from:n] {
		head = append(head, scoredKey{k, m.Score(feats[k])})
	}
	// Best first; a tree sum is never NaN, so cmp.Compare is >, <.
	slices.SortStableFunc(head, func(a, b scoredKey) int { return cmp.Compare(b.s, a.s) })
	out := make([]uint32, 0, len(order))
	out = append(out, order[:from]...)
	for _, h := range head {
		out = append(out, h.k)
	}
	return append(out, order[n:]...)
}

// listShare is a list's reciprocal-rank share of key (60/(60+rank)), 0
// when the list does not hold it.
func listShare(keys []uint32, key uint32) float64 {
	if i := slices.Index(keys, key); i >= 0 {
		return 60 / (60 + float64(i+1))
	}
	return 0
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
