package retrieve

import (
	"cmp"
	"context"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.opentelemetry.io/otel/attribute"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/tracing"
)

// Routes (SPEC §5 step 1).
const (
	RouteSkip        = "skip"
	RouteSimple      = "simple"
	RouteMultiHop    = "multi_hop"
	RouteExploratory = "exploratory"
)

// Signals.
const (
	SignalLexical = "lexical"
	SignalDense   = "dense"
	SignalGraph   = "graph"
	// SignalKeys ranks conversation turns by the derived category keys
	// the query names (see derive.go).
	SignalKeys = "keys"
	// SignalFeedback is the expanded lexical query; it is reported under
	// explain but is part of the lexical signal for requests.
	SignalFeedback = "lexical_feedback"
)

// Filter is what a query may see. The service builds it from the
// principal and the request; the engine applies it before ranking.
type Filter struct {
	Workspace string
	Types     []memory.Type
	Statuses  []memory.Status // empty: active
	Scope     memory.Scope
	Category  string
	Entity    string
	// Access levels visible, plus "agent" records of OwnAgent and, with
	// OwnUser, its "user" records too (a gateway user's own flagged turns).
	Access   []memory.Access
	OwnAgent string
	OwnUser  bool
	// AsOf keeps records valid in the world at that time.
	AsOf               *time.Time
	IncludeInvalidated bool
	MinConfidence      float64
}

// Query is one search.
type Query struct {
	Text   string
	K      int    // results wanted; default 10
	Route  string // "" routes automatically
	Filter Filter
	// Signals to use; nil means all available.
	Signals []string
	// RRFK is the reciprocal-rank constant (default 60).
	RRFK float64
	// Weights per signal for weighted RRF (default 1 each).
	Weights map[string]float64
	// MMR, when > 0, re-ranks the fused list for diversity with this
	// lambda (relevance weight, e.g. 0.7).
	MMR float64
	// RecencyHalfLife, when > 0, boosts recent records: the fused score is
	// multiplied by 1 + RecencyWeight·2^(−age/half-life).
	RecencyHalfLife time.Duration
	RecencyWeight   float64
	// Pool is the candidate count per signal (default by route).
	Pool int
	// Feedback, when > 0, adds a pseudo-relevance-feedback lexical list
	// with this fusion weight: the query expanded by FeedbackTerms terms
	// drawn from its FeedbackDocs best lexical matches.
	Feedback      float64
	FeedbackDocs  int
	FeedbackTerms int
	// Context, when > 0, spreads this fraction of an episode's fused score
	// to the turns just before and after it in its session: the answer to
	// a question often sits in the reply to the turn that matched it.
	Context float64
	// Speaker, when > 0, multiplies by 1+Speaker the fused score of the
	// conversation turns spoken by a speaker the query points at (by
	// name, or "user"/"assistant" for questions in the first or second
	// person; see querySpeakers).
	Speaker float64
	// Session, when > 0, multiplies by 1+Session·s the fused score of a
	// conversation turn whose session scores s (relative to the best
	// session) as one BM25 document for the query (see sessionScores).
	Session float64
	// Time, when > 0, multiplies by 1+Time the fused score of the records
	// whose event time falls in a span the query's time expressions name
	// (TimeSpans, resolved against Now).
	Time float64
	// Now is the query's reference time: recency ages and relative time
	// expressions count from it.
	Now time.Time
	// Opening, when > 0, multiplies by 1+Opening the fused score of the
	// user's opening turn of each session for a question asking for
	// every instance of something (opening.go).
	Opening float64
	// Ranker, when set, re-orders the fused top RankDepth by the model
	// (ranker.go) in a search for conversation turns only; not with MMR.
	Ranker *RankModel
	// RankFeatures reports each hit's ranker features in
	// Evidence.Features (for explain and the generator).
	RankFeatures bool
}

// SignalScore is one signal's view of a result.
type SignalScore struct {
	Rank  int     `json:"rank"`
	Score float64 `json:"score"`
}

// Hit is one fused result.
type Hit struct {
	Workspace string                 `json:"-"`
	ID        string                 `json:"id"`
	Score     float64                `json:"score"`
	Signals   map[string]SignalScore `json:"signals"`
	// Relevance is DefaultRelevance of Evidence: comparable across
	// queries, unlike Score.
	Relevance float64  `json:"relevance"`
	Evidence  Evidence `json:"evidence"`
}

// Result is the engine's answer.
type Result struct {
	Route    string   `json:"route"`
	Hits     []Hit    `json:"hits"`
	Signals  []string `json:"signals"`
	Degraded []string `json:"degraded,omitempty"`
}

var (
	skipRe        = regexp.MustCompile(`(?i)^\s*(hi|hello|hey|yo|thanks|thank you|thx|ok|okay|k|cool|great|nice|sure|yes|no|yep|nope|bye|goodbye|good (morning|night|evening)|lol|haha)[\s!.?]*$`)
	exploratoryRe = regexp.MustCompile(`(?i)\b(everything|all (about|you know)|summari[sz]e|overview|what do you know|tell me about|list all|history of)\b`)
)

// Route classifies a query (SPEC §5 step 1).
func Route(text string) string {
	t := strings.TrimSpace(text)
	if t == "" || skipRe.MatchString(t) {
		return RouteSkip
	}
	if exploratoryRe.MatchString(t) {
		return RouteExploratory
	}
	// Entity-rich: two or more capitalised words not at the start, or
	// an explicit relation between named things.
	caps := 0
	for i, w := range strings.Fields(t) {
		r := []rune(strings.Trim(w, `"'()[],.?!:;`))
		if len(r) > 1 && unicode.IsUpper(r[0]) && i > 0 {
			caps++
		}
	}
	if caps >= 2 {
		return RouteMultiHop
	}
	return RouteSimple
}

// allow compiles f into a predicate over document keys (see filter.go).
// Callers hold e.mu.
func (e *Engine) allow(f Filter) func(key uint32) bool {
	return e.compile(&f).ok
}

// embedQuery embeds the query text within 5 seconds; false when the
// embedder fails.
func (e *Engine) embedQuery(ctx context.Context, text string) ([]float32, bool) {
	emb := e.opts.Embedder
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ctx, span := tracing.Start(ctx, "retrieve.embed_query", attribute.String("memgate.embed.model", emb.Model()))
	defer span.End()
	vs, err := emb.Embed(ctx, []string{text})
	if err != nil || len(vs) != 1 {
		return nil, false
	}
	return vs[0], true
}

// byScoreThenID sorts a signal's list by score. Indexes break score ties
// by key, which depends on load order; ties must fall by record id so
// every backend ranks alike.
func (e *Engine) byScoreThenID(keys []uint32, sc []float64) ([]uint32, []float64) {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if sc[idx[a]] != sc[idx[b]] {
			return sc[idx[a]] > sc[idx[b]]
		}
		return e.idLess(keys[idx[a]], keys[idx[b]])
	})
	k2, s2 := make([]uint32, len(keys)), make([]float64, len(keys))
	for i, j := range idx {
		k2[i], s2[i] = keys[j], sc[j]
	}
	return k2, s2
}

// lexicalSignal is the BM25 list of the query's terms and, with
// q.Feedback, the pseudo-relevance feedback list (the query plus the
// terms that characterise its best matches, searched again; nil without
// one); e.mu is held.
func (e *Engine) lexicalSignal(terms []string, q *Query, pool int, allow func(uint32) bool, in lexical.Bits, docs int) (keys []uint32, sc []float64, fk []uint32, fs []float64) {
	hits := e.lexSearch(terms, pool, allow, in, docs)
	keys, sc = make([]uint32, len(hits)), make([]float64, len(hits))
	for i, h := range hits {
		keys[i], sc[i] = h.Key, float64(h.Score)
	}
	if q.Feedback <= 0 || len(hits) == 0 {
		return keys, sc, nil, nil
	}
	top := min(len(hits), q.FeedbackDocs)
	w := make([]float64, top)
	for i := range w {
		w[i] = sc[i] / sc[0]
	}
	exp := e.lex.Expand(keys[:top], w, terms, q.FeedbackTerms, lexical.Allow(allow), docs)
	if len(exp) == 0 {
		return keys, sc, nil, nil
	}
	hits2 := e.lexSearch(append(slices.Clone(terms), exp...), pool, allow, in, docs)
	fk, fs = make([]uint32, len(hits2)), make([]float64, len(hits2))
	for i, h := range hits2 {
		fk[i], fs[i] = h.Key, float64(h.Score)
	}
	return keys, sc, fk, fs
}

// fuse merges the signals' lists by reciprocal-rank fusion and applies
// the recency weight and the session, speaker, time and opening boosts,
// recording what they did in tr when given (the ranker's features); e.mu
// is held.
func (e *Engine) fuse(q *Query, lists map[string][]uint32, scores map[string]map[uint32]float64, lexStrength float64, factStrength map[uint32]float64, allow func(uint32) bool, tr *boostTrace) map[uint32]float64 {
	// Reciprocal-rank fusion (SPEC §5 step 3), each entry's share scaled
	// by how strongly its signal holds it (see strength).
	fused := map[uint32]float64{}
	for sig, keys := range lists {
		w := 1.0
		if q.Weights != nil {
			if v, ok := q.Weights[sig]; ok {
				w = v
			}
		}
		if sig == SignalFeedback {
			w = q.Feedback
		}
		strength := signalStrength(sig, keys, scores[sig], lexStrength)
		if sig == SignalFacts {
			// The facts are derived keys of the turns they cite.
			kw := 1.0
			if v, ok := q.Weights[SignalKeys]; ok {
				kw = v
			}
			w = factsShare * kw
			strength = func(k uint32) float64 { return factStrength[k] }
		}
		for i, k := range keys {
			fused[k] += w * strength(k) / (q.RRFK + float64(i+1))
		}
	}
	if q.RecencyHalfLife > 0 && q.RecencyWeight > 0 {
		now := q.Now
		if now.IsZero() {
			now = time.Now()
		}
		for k, s := range fused {
			age := now.Sub(time.UnixMicro(e.docs[k].eventTime))
			if age < 0 {
				age = 0
			}
			fused[k] = s * (1 + q.RecencyWeight*math.Exp2(-float64(age)/float64(q.RecencyHalfLife)))
		}
	}
	if q.Session > 0 {
		e.sessionPrior(q.Text, fused, q.Session, allow, e.scopeDocs(q.Filter), tr)
	}
	if q.Speaker > 0 {
		e.speakerBoost(q.Text, fused, q.Speaker, tr)
	}
	if q.Time > 0 {
		if spans := TimeSpans(q.Text, q.Now); len(spans) > 0 {
			e.timeBoost(spans, fused, q.Time, tr)
		}
	}
	if q.Opening > 0 && aggregateRe.MatchString(q.Text) {
		e.openingBoost(fused, q.Opening, tr)
	}
	return fused
}

// rank orders the fused candidates (ties by id, the same on every
// backend) and diversifies them with MMR when asked; e.mu is held.
func (e *Engine) rank(q *Query, fused map[uint32]float64) []uint32 {
	order := make([]uint32, 0, len(fused))
	for k := range fused {
		order = append(order, k)
	}
	sort.Slice(order, func(i, j int) bool {
		a, b := order[i], order[j]
		if fused[a] != fused[b] {
			return fused[a] > fused[b]
		}
		return e.idLess(a, b) // deterministic on every backend
	})
	if q.MMR > 0 && len(order) > q.K {
		order = e.mmr(order, fused, q.K, q.MMR)
	}
	return order
}

// hits describes the ranked keys: ids, fused score, the evidence of their
// relevance and each signal's rank and score (the coverage and cosine
// taken from feats where the ranker computed them); e.mu is held.
func (e *Engine) hits(order []uint32, fused map[uint32]float64, lists map[string][]uint32, scores map[string]map[uint32]float64, qt queryTerms, qvec []float32, feats map[uint32][]float64) []Hit {
	out := make([]Hit, len(order))
	for i, k := range order {
		h := Hit{Workspace: e.wsOf(k), ID: e.idOf(k), Score: fused[k], Signals: map[string]SignalScore{}}
		if x, ok := feats[k]; ok {
			// The ranker computed both already, the same way.
			h.Evidence = Evidence{Coverage: x[fCoverage]}
			if x[fHasVector] == 1 {
				dot := x[fCosine]
				h.Evidence.Dense = &dot
			}
		} else {
			h.Evidence = Evidence{Coverage: qt.coverage(e.lex, k)}
			if qvec != nil && e.vecs != nil {
				if v, ok := e.vecs.Vector(k); ok && len(v) == len(qvec) {
					dot := dot32(v, qvec)
					h.Evidence.Dense = &dot
				}
			}
		}
		h.Relevance = DefaultRelevance.Relevance(h.Evidence)
		for sig, keys := range lists {
			if r := slices.Index(keys, k); r >= 0 {
				h.Signals[sig] = SignalScore{Rank: r + 1, Score: scores[sig][k]}
			}
		}
		out[i] = h
	}
	return out
}

// graphCandidates keeps the graph signal's candidates that are indexed in
// ws and admitted, best first (ties by id), at most limit; e.mu is held.
func (e *Engine) graphCandidates(ws string, cands []Scored, allow func(uint32) bool, limit int) ([]uint32, []float64) {
	slices.SortFunc(cands, func(a, b Scored) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	var keys []uint32
	var sc []float64
	for _, c := range cands {
		if len(keys) == limit {
			break
		}
		if k, ok := e.lookup(ws, c.ID); ok && allow(k) {
			keys, sc = append(keys, k), append(sc, c.Score)
		}
	}
	return keys, sc
}

// Search runs a query against the indexes.
func (e *Engine) Search(ctx context.Context, q Query) (Result, error) {
	res, pool := prepareSearch(&q)
	if res.Route == RouteSkip {
		res.Hits = []Hit{}
		return res, nil
	}
	want := func(s string) bool { return len(q.Signals) == 0 || slices.Contains(q.Signals, s) }
	g := e.startGraph(ctx, &q, res.Route, want)

	// The query embedding is computed before taking the read lock: a slow
	// embedder must not hold up writers.
	var qvec []float32
	if want(SignalDense) && e.opts.Embedder != nil {
		var ok bool
		if qvec, ok = e.embedQuery(ctx, q.Text); !ok {
			res.Degraded = append(res.Degraded, "dense: embedder unavailable, lexical and graph only")
		}
	}

	if g != nil {
		<-g.done
	}
	e.mu.RLock()
	cf := e.compile(&q.Filter)
	allow := cf.ok
	var in lexical.Bits // the admitted keys, when known as a set
	if adm := cf.materialise(); adm != nil {
		in = adm.bits
		defer adm.release() // after the read lock is released: it is per search
	} else {
		in = e.cachedBits(cf)
	}
	if in != nil {
		allow = in.Has
	}
	terms := lexical.Analyze(q.Text, true)
	qt := newQueryTerms(e.lex, terms, cf.total)
	sigs := e.runSignals(ctx, &q, &res, signalRun{
		pool: pool, want: want, terms: terms, qvec: qvec,
		cf: cf, allow: allow, in: in, graph: g,
	})
	_, fuse := tracing.Start(ctx, "retrieve.fuse")
	defer fuse.End()
	lists, scores := sigs.lists, sigs.scores

	// The lexical list's strength: how much of the query its best match
	// holds, taken before smoothing lends turns their neighbours' scores.
	lexStrength := 1.0
	if lk := lists[SignalLexical]; len(lk) > 0 {
		lexStrength = lexicalStrength(qt.coverage(e.lex, lk[0]))
	}
	if q.Context > 0 {
		for sig, keys := range lists {
			if sig == SignalGraph {
				continue
			}
			lists[sig], scores[sig] = e.smooth(keys, scores[sig], q.Context, allow)
		}
	}

	// A fact lends its turn by the square of the share of the query it
	// holds (see factsShare).
	var factStrength map[uint32]float64
	if len(lists[SignalFacts]) > 0 {
		factStrength = make(map[uint32]float64, len(lists[SignalFacts]))
		for _, k := range lists[SignalFacts] {
			c := qt.coverage(e.lex, sigs.factOf[k])
			factStrength[k] = c * c
		}
	}
	if !turnsOnly(&q.Filter) {
		q.Ranker = nil // fitted on rankings of turns (ranker.go)
	}
	var tr *boostTrace
	if q.Ranker != nil || q.RankFeatures {
		tr = newBoostTrace()
	}
	fused := e.fuse(&q, lists, scores, lexStrength, factStrength, allow, tr)
	order := e.rank(&q, fused)
	var feats map[uint32][]float64
	if tr != nil {
		feats = e.rankFeatures(&rankInputs{order: order, fused: fused, lists: lists, factStrength: factStrength,
			trace: tr, qt: qt, qvec: qvec, docs: cf.total, matchTerms: e.queryMatchTerms(q.Text), aggregate: aggregateRe.MatchString(q.Text)})
		if q.Ranker != nil && q.MMR <= 0 {
			order = Rerank(order, feats, q.Ranker)
		}
	}
	if len(order) > q.K {
		order = order[:q.K]
	}
	res.Hits = e.hits(order, fused, lists, scores, qt, qvec, feats)
	if q.RankFeatures {
		for i, k := range order {
			res.Hits[i].Evidence.Features = feats[k]
		}
	}
	e.mu.RUnlock()
	return res, nil
}

// prepareSearch fills q's defaults and returns the result to fill, with
// its route, and the candidate pool size each signal draws.
func prepareSearch(q *Query) (Result, int) {
	if q.K <= 0 {
		q.K = 10
	}
	if q.RRFK <= 0 {
		q.RRFK = 60
	}
	res := Result{Route: q.Route}
	if res.Route == "" {
		res.Route = Route(q.Text)
	}
	pool := q.Pool
	if pool <= 0 {
		pool = max(50, 5*q.K)
		if res.Route == RouteExploratory {
			pool = max(200, 10*q.K)
		}
	}
	return res, pool
}

// graphRun is the graph signal running beside the query embedding.
type graphRun struct {
	done  chan struct{}
	cands []Scored
	err   error
}

// startGraph starts the graph signal when it is wanted and wired, or
// returns nil. It runs outside the read lock: it reads the graph index and
// the store through the service, which may write to this engine
// meanwhile; its candidates are filtered and ranked under the lock later.
func (e *Engine) startGraph(ctx context.Context, q *Query, route string, want func(string) bool) *graphRun {
	e.mu.RLock()
	graph := e.graph
	e.mu.RUnlock()
	if !want(SignalGraph) || graph == nil || route == RouteSimple {
		return nil
	}
	g := &graphRun{done: make(chan struct{})}
	go func() {
		defer close(g.done)
		gctx, span := tracing.Start(ctx, "retrieve.graph")
		defer span.End()
		g.cands, g.err = graph(gctx, q.Filter, q.Text)
	}()
	return g
}

// signalRun is what the signals of one search share.
type signalRun struct {
	pool  int
	want  func(string) bool
	terms []string
	qvec  []float32
	cf    *filter
	allow func(uint32) bool
	in    lexical.Bits
	graph *graphRun
}

// signalLists collects each signal's ranked keys and their scores.
type signalLists struct {
	mu     sync.Mutex
	lists  map[string][]uint32
	scores map[string]map[uint32]float64
	factOf map[uint32]uint32 // a turn ranked by a fact citing it → the fact (factlinks.go)
}

// runSignals runs the wanted signals, lexical and dense concurrently, and
// collects their lists; e.mu is held for reading.
func (e *Engine) runSignals(ctx context.Context, q *Query, res *Result, r signalRun) *signalLists {
	out := &signalLists{lists: map[string][]uint32{}, scores: map[string]map[uint32]float64{}}
	var factKeys []uint32
	var factScores []float64
	add := func(sig string, keys []uint32, sc []float64) {
		keys, sc = e.byScoreThenID(keys, sc)
		m := make(map[uint32]float64, len(keys))
		for i, k := range keys {
			m[k] = sc[i]
		}
		out.mu.Lock()
		out.lists[sig], out.scores[sig] = keys, m
		out.mu.Unlock()
	}
	var wg sync.WaitGroup
	if r.want(SignalLexical) {
		res.Signals = append(res.Signals, SignalLexical)
		wg.Go(func() {
			_, span := tracing.Start(ctx, "retrieve.lexical")
			defer span.End()
			keys, sc, fk, fs := e.lexicalSignal(r.terms, q, r.pool, r.allow, r.in, r.cf.total)
			if fk != nil {
				add(SignalFeedback, fk, fs)
			}
			add(SignalLexical, keys, sc)
		})
	}
	if r.qvec != nil && e.vecs != nil {
		res.Signals = append(res.Signals, SignalDense)
		wg.Go(func() {
			_, span := tracing.Start(ctx, "retrieve.dense")
			defer span.End()
			hits := e.denseSearch(r.qvec, r.pool, r.cf, r.allow)
			keys, sc := make([]uint32, len(hits)), make([]float64, len(hits))
			for i, h := range hits {
				keys[i], sc[i] = h.Key, float64(h.Score)
			}
			add(SignalDense, keys, sc)
		})
	}
	if w, ok := q.Weights[SignalKeys]; r.want(SignalKeys) && (!ok || w > 0) {
		if keys, sc := e.keySearch(q.Text, r.pool, r.allow); len(keys) > 0 {
			res.Signals = append(res.Signals, SignalKeys)
			add(SignalKeys, keys, sc)
		}
	}
	if r.want(SignalLexical) && q.Weights[SignalPhrases] > 0 { // keyphrase.go
		if keys, sc := e.phraseSearch(q.Text, r.pool, r.allow); len(keys) > 0 {
			add(SignalPhrases, keys, sc)
		}
	}
	if r.want(SignalLexical) && wantsFacts(&q.Filter) {
		factKeys, factScores, out.factOf = e.factLinked(r.terms, q.Filter, r.pool, r.allow)
	}
	// The graph signal's list: the memory graph's candidates (core) and
	// the walk over the entities of conversation turns (entitywalk.go).
	var gk []uint32
	var gs []float64
	ran := false
	if g := r.graph; g != nil {
		res.Signals = append(res.Signals, SignalGraph)
		if g.err != nil {
			res.Degraded = append(res.Degraded, "graph: unavailable")
		} else {
			gk, gs = e.graphCandidates(q.Filter.Workspace, g.cands, r.allow, r.pool)
			ran = true
		}
	}
	if r.want(SignalGraph) && res.Route != RouteSimple {
		if wk, ws := e.entityWalk(q.Text, r.pool, r.allow); len(wk) > 0 {
			if r.graph == nil {
				res.Signals = append(res.Signals, SignalGraph)
			}
			gk, gs = appendWalk(gk, gs, wk, ws, r.pool)
			ran = true
		}
	}
	if ran {
		add(SignalGraph, gk, gs)
	}
	if len(factKeys) > 0 {
		add(SignalFacts, factKeys, factScores)
	}
	wg.Wait()
	return out
}

// mmr re-ranks by maximal marginal relevance: each pick maximises
// λ·relevance − (1−λ)·max similarity to those already picked. Similarity
// is vector cosine when both have vectors, else entity overlap.
func (e *Engine) mmr(order []uint32, rel map[uint32]float64, k int, lambda float64) []uint32 {
	n := min(len(order), 4*k)
	cand := slices.Clone(order[:n])
	top := rel[cand[0]]
	picked := make([]uint32, 0, k)
	for len(picked) < k && len(cand) > 0 {
		best, bestScore := 0, math.Inf(-1)
		for i, c := range cand {
			maxSim := 0.0
			for _, p := range picked {
				maxSim = max(maxSim, e.similarity(c, p))
			}
			s := lambda*rel[c]/top - (1-lambda)*maxSim
			if s > bestScore {
				best, bestScore = i, s
			}
		}
		picked = append(picked, cand[best])
		cand = slices.Delete(cand, best, best+1)
	}
	return append(picked, order[n:]...)
}

func (e *Engine) similarity(a, b uint32) float64 {
	if e.vecs != nil {
		va, ok1 := e.vecs.Vector(a)
		vb, ok2 := e.vecs.Vector(b)
		if ok1 && ok2 {
			var dot float32
			for i := range va {
				dot += va[i] * vb[i]
			}
			return float64(dot)
		}
	}
	ea, eb := e.ents.get(e.docs[a].ents), e.ents.get(e.docs[b].ents)
	if len(ea) == 0 || len(eb) == 0 {
		return 0
	}
	shared := 0
	for _, x := range ea {
		if slices.Contains(eb, x) {
			shared++
		}
	}
	return float64(shared) / float64(len(ea)+len(eb)-shared)
}

// smooth adds to each conversation turn's raw signal score ctx times the
// better of its neighbours' scores and re-ranks. The answer to a question
// often sits in the reply to the turn that matched it; raw scores (not
// ranks) keep the lift proportional to how well the neighbour matched.
func (e *Engine) smooth(keys []uint32, sc map[uint32]float64, ctx float64, allow func(uint32) bool) ([]uint32, map[uint32]float64) {
	out := make(map[uint32]float64, 2*len(keys))
	for _, k := range keys {
		out[k] = max(out[k], sc[k])
		p, n, hp, hn := e.neighbours(k)
		if hp && allow(p) {
			out[p] = max(out[p], sc[p])
		}
		if hn && allow(n) {
			out[n] = max(out[n], sc[n])
		}
	}
	sm := make(map[uint32]float64, len(out))
	for k, v := range out {
		best := 0.0
		p, n, hp, hn := e.neighbours(k)
		if hp {
			best = max(best, sc[p])
		}
		if hn {
			best = max(best, sc[n])
		}
		sm[k] = v + ctx*best
	}
	ranked := make([]uint32, 0, len(sm))
	for k := range sm {
		ranked = append(ranked, k)
	}
	sort.Slice(ranked, func(i, j int) bool {
		a, b := ranked[i], ranked[j]
		if sm[a] != sm[b] {
			return sm[a] > sm[b]
		}
		return e.idLess(a, b)
	})
	if len(ranked) > len(keys) {
		ranked = ranked[:len(keys)]
	}
	return ranked, sm
}

// signalStrength returns the factor in [0, 1] that scales the fusion share
// of each entry of a signal's list. Plain RRF credits rank alone, so a
// record sharing one common word with a question got the full rank-1
// lexical share and outranked a clear dense match the lexical list
// missed ("which relative works in dental care?" ranked "I work as a
// nurse" above "My cousin Ines is a dentist"). The lexical list is scaled
// by lex (see lexicalStrength); a dense entry earns its cosine over the
// list's best, so a clearly weaker meaning match earns less than the next
// rank down would.
func signalStrength(sig string, keys []uint32, sc map[uint32]float64, lex float64) func(uint32) float64 {
	switch sig {
	case SignalLexical:
		return func(uint32) float64 { return lex }
	case SignalDense:
		if len(keys) == 0 || sc[keys[0]] <= 0 {
			break
		}
		top := sc[keys[0]]
		return func(k uint32) float64 { return min(1, max(0, sc[k]/top)) }
	}
	return func(uint32) float64 { return 1 }
}

// lexicalStrength is the weight of a lexical list whose best match holds
// the share cov of the query (idf-weighted): full from strongCoverage up,
// falling quadratically below it (a third of that share: a ninth of the
// weight). When the best keyword match holds one
// word of a longer question the keywords have little to say; a per-entry
// cut instead (any one-word match) cost LoCoMo single-hop recall, since
// evidence often shares one word with its question.
func lexicalStrength(cov float64) float64 {
	r := min(1, cov/strongCoverage)
	return r * r
}

// strongCoverage: see lexicalStrength.
// 0.35 keeps LoCoMo dev recall@10 (0.767 vs 0.768 without the scaling);
// 0.5 cost 0.012 (docs/retrieval.md).
const strongCoverage = 0.35
