package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
)

// Service is what a benchmark needs of memgate; *core.Service satisfies
// it.
type Service interface {
	Write(ctx context.Context, p memory.Principal, req core.WriteRequest) (core.WriteResult, error)
	Search(ctx context.Context, p memory.Principal, req core.SearchRequest) (core.SearchResponse, error)
	EmbedPending(ctx context.Context, limit int) (int, error)
}

// AppID is the scope app_id every benchmark record is written under.
const AppID = "bench"

// maxTurnBytes bounds a turn's text as the default policy bounds content.
const maxTurnBytes = 32<<10 - 512

// Ks are the cut-offs recall is reported at (those not above KMax).
var Ks = []int{1, 5, 10, 20, 50}

// Options configure a run.
type Options struct {
	// Principal writes and searches; the CLI uses the local operator.
	Principal memory.Principal
	// KMax is the number of results asked per question (default 50).
	KMax int
	// Signals restricts the search signals; nil means all available.
	Signals []string
	// Weights and Context override the search's fusion defaults.
	Weights  map[string]float64
	Context  *float64
	Feedback *float64
	Speaker  *float64
	Session  *float64
	Time     *float64
	Opening  *float64
	// Ranker turns the learned ranker on or off (nil: the search default).
	Ranker *bool
	// Limit keeps only the first Limit conversations (0: all).
	Limit int
	// Workers run questions concurrently (default GOMAXPROCS).
	Workers int
	// IngestWorkers ingest conversations concurrently (default 1).
	IngestWorkers int
	// Embed runs the embedding job to completion before querying.
	Embed bool
	// Gateway is the server conversations are ingested through.
	Gateway *Gateway
	// Progress, when set, receives occasional progress lines.
	Progress io.Writer
	// Evidence keeps each hit's relevance evidence (to fit the relevance
	// model).
	Evidence bool
	// StateFile, when set, records which turns each ingested record
	// covers; with Reuse, a run skips ingestion and reads it back, asking
	// the questions of a store an earlier run ingested (for comparing
	// query-time changes without ingesting again).
	StateFile string
	Reuse     bool
}

// Hit is one search result as the benchmark sees it.
type Hit struct {
	ID        string   `json:"id"`
	Turns     []string `json:"turns"`
	Content   string   `json:"content,omitempty"`
	Relevance float64  `json:"relevance"`
	// Evidence, the fused score and each signal's rank and score are
	// kept when Options.Evidence asks for them.
	Evidence *retrieve.Evidence              `json:"evidence,omitempty"`
	Score    float64                         `json:"score,omitempty"`
	Signals  map[string]retrieve.SignalScore `json:"signals,omitempty"`
}

// QuestionResult is the outcome of one question.
type QuestionResult struct {
	Conv     string
	Question Question
	// Hits are the results in rank order (content kept for the first
	// ReportHits only).
	Hits []Hit
	// Rank maps each evidence turn to the 1-based rank of the first
	// result covering it; 0 means not retrieved within KMax.
	Rank    map[string]int
	Route   string
	Latency time.Duration
	Err     string
}

// Covered is how many evidence turns are covered within the top k.
func (q *QuestionResult) Covered(k int) int {
	n := 0
	for _, r := range q.Rank {
		if r > 0 && r <= k {
			n++
		}
	}
	return n
}

// FirstEvidenceRank is the 1-based rank of the first result covering an
// evidence turn, 0 when none is within KMax.
func (q *QuestionResult) FirstEvidenceRank() int {
	first := 0
	for _, r := range q.Rank {
		if r > 0 && (first == 0 || r < first) {
			first = r
		}
	}
	return first
}

// SessionRanks maps each evidence session to the 1-based rank of the first
// result that is a turn of it (0: none within KMax).
func (q *QuestionResult) SessionRanks() map[string]int {
	out := make(map[string]int, len(q.Question.EvidenceSessions))
	for _, s := range q.Question.EvidenceSessions {
		out[s] = 0
	}
	for r, h := range q.Hits {
		for _, t := range h.Turns {
			s := TurnSession(t)
			if rk, ok := out[s]; ok && rk == 0 {
				out[s] = r + 1
			}
		}
	}
	return out
}

// DistinctSessions lists the sessions of the ranked results, each once,
// in the order of their first result.
func (q *QuestionResult) DistinctSessions() []string {
	var out []string
	for _, h := range q.Hits {
		for _, t := range h.Turns {
			if s := TurnSession(t); !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// ReportHits is how many hits keep their content for the report.
const ReportHits = 10

// Result is everything a run measured.
type Result struct {
	Bench   string
	Convs   int
	Turns   int
	Ignored int // turns of repeated sessions, not ingested
	// Decisions counts write decisions by kind (accepted, duplicate,
	// quarantined, rejected, ...); Reasons counts the non-accepted ones
	// by "decision/reason".
	Decisions map[string]int
	Reasons   map[string]int
	// Quarantined turns are stored but not searchable.
	Quarantined int
	// RejectSamples holds a few rejection messages.
	RejectSamples []string
	BadDates      int
	Embedded      int
	// Flushes is the number of flush jobs, Facts the facts they stored,
	// ExtractWait how long the last ones took after ingestion ended.
	Flushes     int
	Facts       int
	ExtractWait time.Duration
	Ingest      time.Duration
	Embed       time.Duration
	Query       time.Duration
	KMax        int
	// SignalsRequested is the --signals list (nil: all available);
	// SignalsUsed is the union of signals the searches reported.
	SignalsRequested []string
	SignalsUsed      []string
	Routes           map[string]int
	Degraded         map[string]int
	SearchErrors     int
	// Skipped counts questions without valid evidence, by group.
	Skipped   map[string]int
	Questions []QuestionResult
	// turnText maps conv → turn id → content, for the report.
	turnText map[string]map[string]string
}

// convState is the ingestion bookkeeping of one conversation.
type convState struct {
	recTurns map[string][]string // record id → turn ids it covers
	content  map[string]string   // record id → content
}

// Run ingests ds through svc, asks every question and returns the raw
// results; Summarize turns them into metrics. Its phases: the options'
// defaults, the result's totals, ingestion (or the reused state), then
// the questions.
func Run(ctx context.Context, svc Service, ds *Dataset, o Options) (*Result, error) {
	if err := o.runDefaults(); err != nil {
		return nil, err
	}
	convs := ds.Convs
	if o.Limit > 0 && o.Limit < len(convs) {
		convs = convs[:o.Limit]
	}
	res := newResult(ds.Bench, convs, o)
	states, err := ingestOrReuse(ctx, svc, convs, res, o)
	if err != nil {
		return nil, err
	}
	if err := askAll(ctx, svc, convs, states, res, o); err != nil {
		return nil, err
	}
	return res, nil
}

// runDefaults fills Run's unset options and checks KMax.
func (o *Options) runDefaults() error {
	if o.KMax <= 0 {
		o.KMax = 50
	}
	if o.KMax > core.MaxK {
		return fmt.Errorf("bench: k-max must be at most %d", core.MaxK)
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.IngestWorkers <= 0 {
		o.IngestWorkers = 1
	}
	return nil
}

// newResult is an empty result with the dataset's totals and each turn's
// text for the report.
func newResult(bench string, convs []Conv, o Options) *Result {
	res := &Result{Bench: bench, Convs: len(convs), Decisions: map[string]int{}, Reasons: map[string]int{},
		KMax: o.KMax, SignalsRequested: o.Signals, Routes: map[string]int{}, Degraded: map[string]int{},
		Skipped: map[string]int{}, turnText: map[string]map[string]string{}}
	for _, c := range convs {
		res.Turns += len(c.Turns)
		res.Ignored += c.Ignored
		res.BadDates += c.BadDates
		tt := make(map[string]string, len(c.Turns))
		for _, t := range c.Turns {
			if _, ok := tt[t.ID]; !ok {
				tt[t.ID] = t.Content
			}
		}
		res.turnText[c.ID] = tt
	}
	return res
}

// ingestOrReuse ingests every conversation, or with o.Reuse reads the
// state a previous run saved; a fresh ingestion is saved to o.StateFile.
func ingestOrReuse(ctx context.Context, svc Service, convs []Conv, res *Result, o Options) ([]*convState, error) {
	states := make([]*convState, len(convs))
	if o.Reuse {
		return states, loadStates(o.StateFile, convs, states)
	}
	if err := ingestAll(ctx, svc, convs, states, res, o); err != nil {
		return nil, err
	}
	if o.StateFile != "" {
		if err := saveStates(o.StateFile, convs, states); err != nil {
			return nil, err
		}
	}
	return states, nil
}

// question is one question to ask: its conversation and its index there.
type question struct{ conv, q int }

// questionsToAsk lists the questions with evidence, and the abstention
// questions (asked all the same: how relevant their best hit looks is
// what the abstention separation measures); the others are counted as
// skipped.
func questionsToAsk(convs []Conv, res *Result) []question {
	var work []question
	for ci, c := range convs {
		for qi, q := range c.Questions {
			if len(q.Evidence) == 0 {
				res.Skipped[q.Group]++
				if q.Group != Abstention {
					continue
				}
			}
			work = append(work, question{ci, qi})
		}
	}
	return work
}

// askAll asks every question on o.Workers workers and records the
// results, the query time and the signals the searches used.
func askAll(ctx context.Context, svc Service, convs []Conv, states []*convState, res *Result, o Options) error {
	work := questionsToAsk(convs, res)
	res.Questions = make([]QuestionResult, len(work))
	var mu sync.Mutex
	var wg sync.WaitGroup
	used := map[string]bool{}
	start := time.Now()
	next := make(chan int)
	for range min(o.Workers, max(1, len(work))) {
		wg.Go(func() {
			for i := range next {
				j := work[i]
				qr, sr, err := ask(ctx, svc, convs[j.conv], convs[j.conv].Questions[j.q], states[j.conv], o)
				res.Questions[i] = qr
				mu.Lock()
				for _, s := range sr.Signals {
					used[s] = true
				}
				for _, d := range sr.Degraded {
					res.Degraded[d]++
				}
				if err != nil {
					res.SearchErrors++
				}
				res.Routes[sr.Route]++
				mu.Unlock()
			}
		})
	}
	for i := range work {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	res.Query = time.Since(start)
	for _, s := range []string{retrieve.SignalLexical, retrieve.SignalDense, retrieve.SignalGraph} {
		if used[s] {
			res.SignalsUsed = append(res.SignalsUsed, s)
			delete(used, s)
		}
	}
	for s := range used {
		res.SignalsUsed = append(res.SignalsUsed, s)
	}
	return nil
}

// ask runs one question's search and ranks its evidence turns among the
// hits.
func ask(ctx context.Context, svc Service, c Conv, q Question, st *convState, o Options) (QuestionResult, core.SearchResponse, error) {
	qr := QuestionResult{Conv: c.ID, Question: q, Rank: make(map[string]int, len(q.Evidence))}
	for _, e := range q.Evidence {
		qr.Rank[e] = 0
	}
	req := core.SearchRequest{Query: truncate(q.Text, 4096), K: o.KMax, Signals: o.Signals, Weights: o.Weights, Context: o.Context, Feedback: o.Feedback, Speaker: o.Speaker, Session: o.Session, Time: o.Time, Ranker: o.Ranker, Opening: o.Opening, ReferenceTime: q.Date,
		Scope: memory.Scope{AppID: AppID, ProjectID: c.ID},
		// The metric is turn recall: a result counts when it is a
		// turn's episode, so the facts extraction derived from
		// the turns are not ranked against them.
		Types: []memory.Type{memory.Episode}, Explain: o.Evidence}
	t0 := time.Now()
	sr, err := svc.Search(ctx, o.Principal, req)
	qr.Latency = time.Since(t0)
	if err != nil {
		qr.Err = err.Error()
	}
	qr.Route = sr.Route
	for r, h := range sr.Results {
		turns := st.recTurns[h.Record.ID]
		hit := Hit{ID: h.Record.ID, Turns: turns, Relevance: h.Relevance, Evidence: h.Evidence}
		if o.Evidence {
			hit.Score, hit.Signals = h.Score, h.Explain
		}
		if r < ReportHits {
			hit.Content = h.Record.Content
		}
		qr.Hits = append(qr.Hits, hit)
		for _, t := range turns {
			if rk, ok := qr.Rank[t]; ok && rk == 0 {
				qr.Rank[t] = r + 1
			}
		}
	}
	return qr, sr, err
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// admissible splits a session's turns into those the gateway takes and
// the reasons of those it would refuse as a whole add, which are counted
// as rejected, as the gate would have.
func admissible(sess []Turn) (turns []Turn, refused []string) {
	for _, t := range sess {
		switch {
		case strings.TrimSpace(t.Text) == "":
			refused = append(refused, "blank")
		case len(t.Text) > maxTurnBytes:
			refused = append(refused, "too_large")
		default:
			turns = append(turns, t)
		}
	}
	return turns, refused
}

// ingestAll writes every conversation through the gateway, waits for
// extraction and, with o.Embed, embeds everything before returning.
func ingestAll(ctx context.Context, svc Service, convs []Conv, states []*convState, res *Result, o Options) error {
	if o.Gateway == nil {
		return fmt.Errorf("bench: no gateway to ingest through")
	}
	in := &ingester{res: res, o: o, start: time.Now()}
	in.lastProgress = in.start
	var firstErr error
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(o.IngestWorkers, max(1, len(convs))) {
		wg.Go(func() {
			for i := range jobs {
				st := &convState{recTurns: map[string][]string{}, content: map[string]string{}}
				states[i] = st
				if err := in.conv(ctx, convs[i], st); err != nil {
					in.mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					in.mu.Unlock()
				}
			}
		})
	}
	for i := range convs {
		in.mu.Lock()
		failed := firstErr != nil
		in.mu.Unlock()
		if failed {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	res.Ingest = time.Since(in.start)
	if err := waitFlushes(ctx, in.flushes, res, o); err != nil {
		return err
	}
	if o.Embed {
		return embedAll(ctx, svc, res)
	}
	return nil
}

// ingester is the state the ingestion workers share; mu guards it and
// res.
type ingester struct {
	res          *Result
	o            Options
	start        time.Time
	mu           sync.Mutex
	written      int
	flushes      []string // job ids
	lastProgress time.Time
}

// conv ingests conversation c session by session: its admissible turns
// added in parts of at most core.MaxAddMessages, then a flush. st learns
// which turns each memory holds.
func (in *ingester) conv(ctx context.Context, c Conv, st *convState) error {
	res := in.res
	for _, sess := range sessionTurns(c) {
		if err := ctx.Err(); err != nil {
			return err
		}
		turns, refused := admissible(sess)
		in.mu.Lock()
		for _, reason := range refused {
			res.Decisions[memory.DecisionRejected]++
			res.Reasons[memory.DecisionRejected+"/"+reason]++
		}
		in.mu.Unlock()
		for from := 0; from < len(turns); from += core.MaxAddMessages {
			part := turns[from:min(len(turns), from+core.MaxAddMessages)]
			if err := in.add(ctx, c, part, st); err != nil {
				return err
			}
		}
		if len(turns) == 0 {
			continue
		}
		fr, err := in.o.Gateway.Flush(ctx, AppID, c.ID, turns[0].Session)
		if err != nil {
			return fmt.Errorf("bench: flushing session %s of %s: %w", turns[0].Session, c.ID, err)
		}
		in.mu.Lock()
		in.flushes = append(in.flushes, fr.JobID)
		in.mu.Unlock()
	}
	return nil
}

// add sends part, turns of one session of c, in one add and counts the
// gate's decisions.
func (in *ingester) add(ctx context.Context, c Conv, part []Turn, st *convState) error {
	res, o := in.res, in.o
	ar, err := o.Gateway.Add(ctx, AppID, c.ID, part[0].Session, messages(part))
	if err != nil {
		return fmt.Errorf("bench: adding session %s of %s: %w", part[0].Session, c.ID, err)
	}
	if len(ar.MemoryIDs) != len(part) {
		return fmt.Errorf("bench: add answered %d ids for %d messages", len(ar.MemoryIDs), len(part))
	}
	in.mu.Lock()
	for d, n := range ar.Decisions {
		res.Decisions[d] += n
		if d == memory.DecisionQuarantined {
			res.Quarantined += n
		}
	}
	res.Decisions[memory.DecisionDuplicate] += ar.Duplicates
	in.written += len(part)
	if o.Progress != nil && time.Since(in.lastProgress) > 10*time.Second {
		in.lastProgress = time.Now()
		fmt.Fprintf(o.Progress, "bench: ingested %d/%d turns (%.0f/s)\n", in.written, res.Turns,
			float64(in.written)/time.Since(in.start).Seconds())
	}
	in.mu.Unlock()
	for i, id := range ar.MemoryIDs {
		t := part[i]
		if !slices.Contains(st.recTurns[id], t.ID) {
			st.recTurns[id] = append(st.recTurns[id], t.ID)
		}
		if _, ok := st.content[id]; !ok {
			st.content[id] = t.Content
		}
	}
	return nil
}

// waitFlushes waits for every flush job to end (extraction must be done
// before querying) and counts the facts they extracted.
func waitFlushes(ctx context.Context, flushes []string, res *Result, o Options) error {
	start := time.Now()
	for _, id := range flushes {
		j, err := o.Gateway.Wait(ctx, id)
		if err != nil {
			return fmt.Errorf("bench: waiting for flush job %s: %w", id, err)
		}
		if j.Status != "done" {
			return fmt.Errorf("bench: flush job %s ended %s: %s", id, j.Status, j.LastError)
		}
		var sum core.FlushSummary
		if len(j.Result) > 0 {
			_ = json.Unmarshal(j.Result, &sum)
		}
		res.Facts += sum.Added + sum.Updated
	}
	res.Flushes = len(flushes)
	res.ExtractWait = time.Since(start)
	return nil
}

// embedAll computes every pending vector before querying.
func embedAll(ctx context.Context, svc Service, res *Result) error {
	start := time.Now()
	for {
		n, err := svc.EmbedPending(ctx, 1<<30)
		if err != nil {
			return fmt.Errorf("bench: embedding: %w", err)
		}
		if n == 0 {
			break
		}
		res.Embedded += n
	}
	res.Embed = time.Since(start)
	return nil
}

// statesFile is what StateFile holds: conversation id → record id → the
// turn ids the record covers.
type statesFile map[string]map[string][]string

func saveStates(path string, convs []Conv, states []*convState) error {
	out := statesFile{}
	for i, c := range convs {
		out[c.ID] = states[i].recTurns
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		return fmt.Errorf("bench: state file: %w", err)
	}
	return nil
}

func loadStates(path string, convs []Conv, states []*convState) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("bench: reuse: %w", err)
	}
	var in statesFile
	if err := json.Unmarshal(raw, &in); err != nil {
		return fmt.Errorf("bench: reuse: state file: %w", err)
	}
	for i, c := range convs {
		rt, ok := in[c.ID]
		if !ok {
			return fmt.Errorf("bench: reuse: conversation %s was not ingested by the earlier run", c.ID)
		}
		states[i] = &convState{recTurns: rt, content: map[string]string{}}
	}
	return nil
}
