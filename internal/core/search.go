package core

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/tracing"
)

// SearchRequest is a hybrid search (SPEC §5).
type SearchRequest struct {
	Query         string          `json:"query"`
	K             int             `json:"k,omitempty"`
	Types         []memory.Type   `json:"types,omitempty"`
	Statuses      []memory.Status `json:"statuses,omitempty"`
	Scope         memory.Scope    `json:"scope"`
	Category      string          `json:"category,omitempty"`
	Entity        string          `json:"entity,omitempty"`
	AsOf          *time.Time      `json:"as_of,omitempty"`
	KnownAt       *time.Time      `json:"known_at,omitempty"`
	MinConfidence float64         `json:"min_confidence,omitempty"`
	// MinRelevance drops hits whose relevance is below it, so a question
	// nothing in memory answers gets no results (docs/retrieval.md).
	MinRelevance       float64 `json:"min_relevance,omitempty"`
	IncludeSensitive   bool    `json:"include_sensitive,omitempty"`
	IncludeInvalidated bool    `json:"include_invalidated,omitempty"`
	Explain            bool    `json:"explain,omitempty"`
	// Route forces a route: skip, simple, multi_hop or exploratory.
	Route string `json:"route,omitempty"`
	// Signals restricts the candidate generators: lexical, dense, graph,
	// keys (the derived category keys of conversation turns).
	Signals []string `json:"signals,omitempty"`
	// MMR is the diversity lambda (0 disables; exploratory defaults to 0.7).
	MMR *float64 `json:"mmr,omitempty"`
	// RecencyHalfLife, e.g. "720h", enables recency weighting.
	RecencyHalfLife string  `json:"recency_half_life,omitempty"`
	RecencyWeight   float64 `json:"recency_weight,omitempty"`
	// Weights are per-signal weights in the fusion (defaults: lexical 1,
	// dense DenseWeight(model), graph 1).
	Weights map[string]float64 `json:"weights,omitempty"`
	// Context spreads this fraction of a conversation turn's score to its
	// neighbouring turns (default DefaultContext; 0 disables).
	Context *float64 `json:"context,omitempty"`
	// Feedback is the fusion weight of the pseudo-relevance-feedback
	// lexical list (default DefaultFeedback; 0 disables).
	Feedback *float64 `json:"feedback,omitempty"`
	// Speaker boosts the turns of the speaker a query names, or of the
	// user (first person) or the assistant ("what did you say"): their
	// fused score is multiplied by 1+speaker (default DefaultSpeaker; 0
	// disables).
	Speaker *float64 `json:"speaker,omitempty"`
	// Session boosts the turns of conversation sessions that match the
	// query as a whole: fused score × (1 + session·relative session
	// score) (default DefaultSession; 0 disables).
	Session *float64 `json:"session,omitempty"`
	// ReferenceTime is when the question is asked: relative time
	// expressions ("two weeks ago") and recency count from it (default
	// now).
	ReferenceTime *time.Time `json:"reference_time,omitempty"`
	// Time boosts the records whose event time falls in a span the
	// query's time expressions name: fused score × (1 + time) (default
	// DefaultTime; 0 disables).
	Time *float64 `json:"time,omitempty"`
	// Opening boosts, for a question asking for every instance of
	// something ("how many ..."), the user's opening turn of each
	// session: fused score × (1 + opening) (default DefaultOpening; 0
	// disables).
	Opening *float64 `json:"opening,omitempty"`
	// Ranker re-orders the fused top results of a search for
	// conversation turns only by the learned ranker
	// (retrieve.DefaultRanker; default DefaultRanker).
	Ranker *bool `json:"ranker,omitempty"`
}

// Fusion defaults, chosen on the LoCoMo and LongMemEval dev sets (README).
var (
	DefaultDenseWeight = 0.25
	DefaultContext     = 0.5
	DefaultFeedback    = 0.0
	DefaultSpeaker     = 0.4
	DefaultSession     = 0.5
	DefaultTime        = 0.5
	DefaultOpening     = 0.5
	// DefaultKeysWeight is the fusion weight of the derived category keys
	// of conversation turns (retrieve.SignalKeys).
	DefaultKeysWeight = 0.5
	// DefaultPhrasesWeight is the fusion weight of the keyphrase list of
	// conversation turns (retrieve.SignalPhrases; docs/retrieval-rounds.md,
	// round five: 0.1 gains on both development files, 0.25 and more
	// cost LoCoMo multi-hop recall).
	DefaultPhrasesWeight = 0.1
	// DefaultRanker says whether searches re-rank with the learned
	// ranker (docs/retrieval-rounds.md, round five).
	DefaultRanker = true
)

// ModelDenseWeights are dense fusion weights measured for particular
// embedding models; other models get DefaultDenseWeight. A sentence
// encoder earns more weight than averaged word vectors: USE-Lite is best
// at 0.6 on both dev sets, GloVe SIF loses recall above 0.25 (README);
// the built-in (float16) USE-Lite is the same model.
var ModelDenseWeights = map[string]float64{embed.USELiteModel: 0.6, embed.BuiltinUSELiteModel: 0.6}

// DenseWeight is the default fusion weight of the dense signal when the
// vectors come from model.
func DenseWeight(model string) float64 {
	if w, ok := ModelDenseWeights[model]; ok {
		return w
	}
	return DefaultDenseWeight
}

// SearchHit is one result: the record, its fused score (which orders the
// results of one query), its relevance (the estimated probability that
// the record answers the query, comparable across queries), its citation
// and, on request, each signal's rank and score and the evidence the
// relevance is computed from.
type SearchHit struct {
	Record    memory.Record                   `json:"record"`
	Score     float64                         `json:"score"`
	Relevance float64                         `json:"relevance"`
	Citation  string                          `json:"citation"`
	Explain   map[string]retrieve.SignalScore `json:"explain,omitempty"`
	Evidence  *retrieve.Evidence              `json:"evidence,omitempty"`
	// Procedure is a skill's typed fields (trigger, steps, success rate,
	// use count), when it has them.
	Procedure *memory.Procedure `json:"procedure,omitempty"`
}

// SearchResponse is the answer to a search.
type SearchResponse struct {
	Route    string      `json:"route"`
	Signals  []string    `json:"signals"`
	Results  []SearchHit `json:"results"`
	Degraded []string    `json:"degraded,omitempty"`
}

// MaxK bounds k.
const MaxK = 100

// Search runs a hybrid search as p. Filters are applied before ranking;
// records p may not read are never candidates.
func (s *Service) Search(ctx context.Context, p memory.Principal, req SearchRequest) (SearchResponse, error) {
	defer s.fgBegin()() // background embedding yields (yield.go)
	if s.index == nil {
		return SearchResponse{}, fault.New(fault.Unavailable, "search index is not available")
	}
	halfLife, err := validateSearch(req)
	if err != nil {
		return SearchResponse{}, err
	}
	if len(req.Signals) == 0 && !DefaultGraphSignal {
		req.Signals = []string{retrieve.SignalLexical, retrieve.SignalDense, retrieve.SignalKeys}
	}
	q := s.searchQuery(p, req, halfLife)
	if req.KnownAt != nil {
		return s.searchKnownAt(ctx, p, req, q)
	}
	start := time.Now()
	sctx, span := tracing.Start(ctx, "retrieve.search", attribute.Int("memgate.search.k", q.K))
	res, err := s.index.Search(sctx, q)
	if err != nil {
		span.End()
		return SearchResponse{}, storeErr(err, "search")
	}
	span.SetAttributes(attribute.String("memgate.search.route", res.Route), attribute.StringSlice("memgate.search.signals", res.Signals),
		attribute.Int("memgate.search.hits", len(res.Hits)))
	span.End()
	s.metrics.ObserveSearch(res.Route, res.Signals, time.Since(start))
	return s.hydrateHits(ctx, p, req, res)
}

// validateSearch checks req's fields, naming the first bad one, and
// returns the parsed recency half-life (0 when none).
func validateSearch(req SearchRequest) (time.Duration, error) {
	if len(req.Query) > 4096 {
		return 0, fault.Field("query", "at most 4096 bytes")
	}
	if req.K < 0 || req.K > MaxK {
		return 0, fault.Field("k", "must be between 1 and 100")
	}
	for _, t := range req.Types {
		if !slices.Contains(memory.Types, t) {
			return 0, fault.Field("types", "must be record types")
		}
	}
	for _, st := range req.Statuses {
		if !slices.Contains([]memory.Status{memory.Active, memory.Provisional, memory.Superseded, memory.Archived, memory.Quarantined}, st) {
			return 0, fault.Field("statuses", "must be among active, provisional, superseded, archived, quarantined")
		}
	}
	switch req.Route {
	case "", retrieve.RouteSkip, retrieve.RouteSimple, retrieve.RouteMultiHop, retrieve.RouteExploratory:
	default:
		return 0, fault.Field("route", "must be skip, simple, multi_hop or exploratory")
	}
	for _, sig := range req.Signals {
		if sig != retrieve.SignalLexical && sig != retrieve.SignalDense && sig != retrieve.SignalGraph && sig != retrieve.SignalKeys {
			return 0, fault.Field("signals", "must be among lexical, dense, graph, keys")
		}
	}
	if req.MinConfidence < 0 || req.MinConfidence > 1 {
		return 0, fault.Field("min_confidence", "must be between 0 and 1")
	}
	if !(req.MinRelevance >= 0 && req.MinRelevance <= 1) {
		return 0, fault.Field("min_relevance", "must be between 0 and 1")
	}
	var halfLife time.Duration
	if req.RecencyHalfLife != "" {
		d, err := time.ParseDuration(req.RecencyHalfLife)
		if err != nil || d <= 0 {
			return 0, fault.Field("recency_half_life", "must be a positive duration like 720h")
		}
		halfLife = d
	}
	if req.RecencyWeight < 0 || req.RecencyWeight > 10 {
		return 0, fault.Field("recency_weight", "must be between 0 and 10")
	}
	for sig, w := range req.Weights {
		if !slices.Contains(weightNames, sig) {
			return 0, fault.Field("weights", "keys must be among "+strings.Join(weightNames, ", "))
		}
		if w < 0 || w > 10 || w != w {
			return 0, fault.Field("weights", "must be between 0 and 10")
		}
	}
	if req.Feedback != nil && (*req.Feedback < 0 || *req.Feedback > 10) {
		return 0, fault.Field("feedback", "must be between 0 and 10")
	}
	if req.Speaker != nil && (*req.Speaker < 0 || *req.Speaker > 10) {
		return 0, fault.Field("speaker", "must be between 0 and 10")
	}
	if req.Session != nil && (*req.Session < 0 || *req.Session > 10) {
		return 0, fault.Field("session", "must be between 0 and 10")
	}
	if req.Opening != nil && (*req.Opening < 0 || *req.Opening > 10) {
		return 0, fault.Field("opening", "must be between 0 and 10")
	}
	if req.Time != nil && (*req.Time < 0 || *req.Time > 10) {
		return 0, fault.Field("time", "must be between 0 and 10")
	}
	if req.Context != nil && (*req.Context < 0 || *req.Context > 1) {
		return 0, fault.Field("context", "must be between 0 and 1")
	}
	if req.MMR != nil && (*req.MMR < 0 || *req.MMR > 1) {
		return 0, fault.Field("mmr", "must be between 0 and 1")
	}
	return halfLife, nil
}

// weightNames are the keys of a search request's weights: the signals,
// and the keyphrase list of conversation turns (retrieve/keyphrase.go).
var weightNames = []string{retrieve.SignalLexical, retrieve.SignalDense, retrieve.SignalGraph, retrieve.SignalKeys, retrieve.SignalPhrases}

// searchQuery is the retrieval query for req as p: the access filter,
// the fusion weights and boosts with their defaults, the route's MMR.
func (s *Service) searchQuery(p memory.Principal, req SearchRequest, halfLife time.Duration) retrieve.Query {
	af := accessFilter(p, req.IncludeSensitive)
	f := retrieve.Filter{
		Workspace: p.Workspace, Types: req.Types, Statuses: req.Statuses, Scope: req.Scope, Category: req.Category,
		Entity: req.Entity, Access: af.Levels, OwnAgent: af.OwnAgent, OwnUser: af.OwnUser, AsOf: memory.CanonPtr(req.AsOf),
		IncludeInvalidated: req.IncludeInvalidated, MinConfidence: req.MinConfidence,
	}
	if len(f.Statuses) == 0 && req.AsOf != nil {
		f.Statuses = []memory.Status{memory.Active, memory.Superseded}
	}
	q := retrieve.Query{Text: req.Query, K: req.K, Route: req.Route, Filter: f, Signals: req.Signals,
		RecencyHalfLife: halfLife, RecencyWeight: req.RecencyWeight, Now: s.now(), Time: DefaultTime}
	if req.ReferenceTime != nil {
		q.Now = req.ReferenceTime.UTC()
	}
	if req.Time != nil {
		q.Time = *req.Time
	}

	if q.K == 0 {
		q.K = 10
	}
	dense := DefaultDenseWeight
	if emb := s.index.Embedder(); emb != nil {
		dense = DenseWeight(emb.Model())
	}
	q.Weights = map[string]float64{retrieve.SignalLexical: 1, retrieve.SignalDense: dense, retrieve.SignalGraph: 1, retrieve.SignalKeys: DefaultKeysWeight,
		retrieve.SignalPhrases: DefaultPhrasesWeight}
	for sig, w := range req.Weights {
		q.Weights[sig] = w
	}
	q.Feedback, q.FeedbackDocs, q.FeedbackTerms = DefaultFeedback, 5, 8
	if req.Feedback != nil {
		q.Feedback = *req.Feedback
	}
	q.Context = DefaultContext
	q.Speaker = DefaultSpeaker
	if req.Speaker != nil {
		q.Speaker = *req.Speaker
	}
	if req.Context != nil {
		q.Context = *req.Context
	}
	q.Session = DefaultSession
	if req.Session != nil {
		q.Session = *req.Session
	}
	q.Opening = DefaultOpening
	if req.Opening != nil {
		q.Opening = *req.Opening
	}
	if ranker := DefaultRanker; req.Ranker == nil && ranker || req.Ranker != nil && *req.Ranker {
		q.Ranker = &retrieve.DefaultRanker
	}
	q.RankFeatures = req.Explain
	route := q.Route
	if route == "" {
		route = retrieve.Route(req.Query)
	}
	switch {
	case req.MMR != nil:
		q.MMR = *req.MMR
	case route == retrieve.RouteExploratory:
		q.MMR = 0.7
	}
	return q
}

// hydrateHits reads the hits' current heads in one read and keeps those
// p may still read (a record may change between index and read) whose
// relevance reaches req.MinRelevance.
func (s *Service) hydrateHits(ctx context.Context, p memory.Principal, req SearchRequest, res retrieve.Result) (SearchResponse, error) {
	ctx, hydrate := tracing.Start(ctx, "store.hydrate", attribute.Int("memgate.records", len(res.Hits)))
	defer hydrate.End()
	out := SearchResponse{Route: res.Route, Signals: res.Signals, Degraded: res.Degraded, Results: make([]SearchHit, 0, len(res.Hits))}
	ids := make([]string, 0, len(res.Hits))
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}
	// One read for every hit, not one a hit.
	heads, err := s.store.GetRecords(ctx, p.Workspace, ids)
	if err != nil {
		return SearchResponse{}, storeErr(err, "record")
	}
	ids = ids[:0]
	for _, h := range res.Hits {
		r, ok := heads[h.ID]
		if !ok {
			continue // purged between index and read
		}
		if !canRead(p, r, req.IncludeSensitive) || r.Status == memory.Forgotten {
			continue // changed between index and read
		}
		if h.Relevance < req.MinRelevance {
			continue
		}
		hit := SearchHit{Record: r, Score: h.Score, Relevance: h.Relevance, Citation: r.Citation()}
		if req.Explain {
			hit.Explain = h.Signals
			ev := h.Evidence
			hit.Evidence = &ev
		}
		out.Results = append(out.Results, hit)
		ids = append(ids, r.ID)
	}
	rankProcedures(out.Results)
	s.noteRetrieved(p.Workspace, ids)
	return out, nil
}

// searchKnownAt answers a transaction-time query. The in-memory indexes
// hold only current heads, so the versions current at known_at are read
// from the store (bounded) and ranked lexically on the fly.
func (s *Service) searchKnownAt(ctx context.Context, p memory.Principal, req SearchRequest, q retrieve.Query) (SearchResponse, error) {
	lr := store.RecordQuery{Types: req.Types, Statuses: q.Filter.Statuses, Category: req.Category, Scope: req.Scope, Entity: req.Entity,
		Access: accessFilter(p, req.IncludeSensitive), AsOf: q.Filter.AsOf, KnownAt: memory.CanonPtr(req.KnownAt),
		IncludeInvalidated: req.IncludeInvalidated, MinConfidence: req.MinConfidence, Limit: store.MaxLimit}
	var versions []memory.Record
	for len(versions) < 4*store.MaxLimit {
		page, err := s.store.ListRecords(ctx, p.Workspace, lr)
		if err != nil {
			return SearchResponse{}, storeErr(err, "records")
		}
		versions = append(versions, page...)
		if len(page) < store.MaxLimit {
			break
		}
		lr.Before = page[len(page)-1].ID
	}
	ix := lexical.New(lexical.DefaultOptions())
	for i, r := range versions {
		ix.Add(uint32(i), r.Content)
	}
	out := SearchResponse{Route: retrieve.RouteSimple, Signals: []string{retrieve.SignalLexical}, Results: []SearchHit{},
		Degraded: []string{"known_at: ranked lexically over the versions current at that time"}}
	terms := lexical.Analyze(req.Query, true)
	for rank, h := range ix.Search(req.Query, q.K, nil) {
		r := versions[h.Key]
		ev := retrieve.Evidence{Coverage: retrieve.Coverage(ix, terms, h.Key)}
		rel := retrieve.DefaultRelevance.Relevance(ev)
		if rel < req.MinRelevance {
			continue
		}
		hit := SearchHit{Record: r, Score: 1 / (60 + float64(rank+1)), Relevance: rel, Citation: r.Citation()}
		if req.Explain {
			hit.Explain = map[string]retrieve.SignalScore{retrieve.SignalLexical: {Rank: rank + 1, Score: float64(h.Score)}}
			hit.Evidence = &ev
		}
		out.Results = append(out.Results, hit)
	}
	return out, nil
}

// noteRetrieved queues usage bookkeeping; it never blocks a read. When
// the queue is full the touch is dropped: counters are advisory.
func (s *Service) noteRetrieved(ws string, ids []string) {
	if len(ids) == 0 || s.touches == nil {
		return
	}
	select {
	case s.touches <- touch{ws: ws, ids: ids}:
	default:
	}
}

type touch struct {
	ws  string
	ids []string
}

// RunUsage applies queued usage updates in batches until ctx ends, then
// drains what is queued.
func (s *Service) RunUsage(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	pending := map[string]map[string]bool{}
	flush := func(ctx context.Context) {
		for ws, set := range pending {
			ids := make([]string, 0, len(set))
			for id := range set {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			err := s.store.Tx(ctx, func(tx store.Tx) error { return tx.TouchRecords(ctx, ws, ids, s.clock()) })
			if err != nil {
				s.log.Warn("usage counters not updated", "err", err, "records", len(ids))
			}
		}
		clear(pending)
	}
	for {
		select {
		case tc := <-s.touches:
			if pending[tc.ws] == nil {
				pending[tc.ws] = map[string]bool{}
			}
			for _, id := range tc.ids {
				pending[tc.ws][id] = true
			}
		case <-t.C:
			flush(ctx)
		case <-ctx.Done():
			for {
				select {
				case tc := <-s.touches:
					for _, id := range tc.ids {
						if pending[tc.ws] == nil {
							pending[tc.ws] = map[string]bool{}
						}
						pending[tc.ws][id] = true
					}
				default:
					flush(context.Background())
					return
				}
			}
		}
	}
}

// IndexStats reports the search indexes and embedding progress.
type IndexStats struct {
	retrieve.Stats
	Embedded int `json:"embedded"`
	Total    int `json:"total"`
}

// IndexStatus reports index sizes and how many records have a current
// vector of the configured model.
func (s *Service) IndexStatus(ctx context.Context) (IndexStats, error) {
	if s.index == nil {
		return IndexStats{}, fault.New(fault.Unavailable, "search index is not available")
	}
	st := IndexStats{Stats: s.index.Stats()}
	if emb := s.index.Embedder(); emb != nil {
		have, total, err := s.store.CountVectors(ctx, emb.Model())
		if err != nil {
			return st, storeErr(err, "vectors")
		}
		st.Embedded, st.Total = have, total
	}
	return st, nil
}
