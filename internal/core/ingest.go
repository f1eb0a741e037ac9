package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/extract"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
)

// ExtractionOptions configure what a gateway flush extracts (SPEC §7).
type ExtractionOptions struct {
	// LLM, when set, extracts facts with a chat model and reconciles
	// them against existing facts; the pattern gatekeeper is the
	// fallback when it fails on a job's last attempt.
	LLM *extract.LLM
	// LLMBudget bounds the model calls of one flush attempt, extraction
	// and reconciliation together (the client's retries included). It
	// is never more than half the time the attempt has left, which is
	// also the default, so that the pattern fallback, reconciliation by
	// the rules and the commit always keep the other half.
	LLMBudget time.Duration
}

// Gatekeeper decisions (SPEC §7).
const (
	GateSkip           = "skip"
	GateIngestPattern  = "ingest_pattern"
	GateIngestLLM      = "ingest_llm"
	GateIngestFailopen = "ingest_failopen"
)

// factTypes are the record types extraction writes and reconciles.
var factTypes = []memory.Type{memory.Belief, memory.Preference, memory.Decision}

// plannedFact is a candidate with its reconciliation decision. The
// decision's TargetID is a stored fact's id, or a pendingRef to an
// earlier fact of the same flush.
type plannedFact struct {
	fact      extract.Fact
	extractor string
	rec       extract.Reconciliation
}

// handleFlush extracts facts from the messages a flush took. Episodes
// already exist (each message became one at add); the slow part — the
// model calls and reconciliation — runs here, outside any transaction;
// the commit writes the facts through the gate, the gatekeeper log and
// the job's completion together.
func (s *Service) handleFlush(ctx context.Context, j store.Job) (jobCommit, error) {
	b, turns, err := s.loadFlush(ctx, j)
	if err != nil {
		return nil, err
	}
	b.patternPass(j, turns)
	useLLM := false
	llmCtx := ctx
	if l := s.extract.LLM; l != nil && len(turns) > 0 {
		// The model gets its own budget inside the attempt: a model that
		// hangs uses it up and no more, so the rest of the attempt is
		// left for the fallback and the commit.
		var cancel context.CancelFunc
		var budget time.Duration
		llmCtx, cancel, budget = s.llmBudget(ctx)
		defer cancel()
		if useLLM, err = s.llmPass(ctx, llmCtx, budget, j, b, turns); err != nil {
			return nil, err
		}
	}
	if err := s.planFacts(ctx, llmCtx, useLLM, b.p, b.conv, b.facts); err != nil {
		return nil, err
	}
	now := s.clock()
	return func(ctx context.Context, tx store.Tx) (jobEffects, error) {
		return s.commitFlush(ctx, tx, j, b, now)
	}, nil
}

// flushBatch is what one flush extracted: the principal it runs as, the
// conversation, the gatekeeper's log entry for each message and the
// planned facts.
type flushBatch struct {
	p     memory.Principal
	conv  store.Conversation
	sum   FlushSummary
	msgs  []store.Message
	gk    []store.GatekeeperEntry
	facts []plannedFact
}

// loadFlush reads the job's principal and messages and turns the
// messages into extraction turns.
func (s *Service) loadFlush(ctx context.Context, j store.Job) (*flushBatch, []extract.Turn, error) {
	var pl flushPayload
	if err := json.Unmarshal(j.Payload, &pl); err != nil {
		return nil, nil, fmt.Errorf("flush job payload: %w", err)
	}
	p, err := s.store.GetPrincipal(ctx, store.PrincipalFind{Workspace: j.Workspace, ID: pl.PrincipalID})
	if err != nil {
		return nil, nil, fmt.Errorf("flush job principal: %w", err)
	}
	p.TokenHash = nil
	msgs, err := s.store.ListJobMessages(ctx, j.Workspace, j.ID)
	if err != nil {
		return nil, nil, err
	}
	turns := make([]extract.Turn, 0, len(msgs))
	for _, m := range msgs {
		at := time.UnixMilli(m.Timestamp).UTC()
		// Evidence links point at the episode records, which readers can
		// fetch; MessageID carries the episode id for that reason.
		turns = append(turns, extract.Turn{MessageID: m.RecordID, SessionID: m.SessionID, SenderID: m.SenderID,
			Role: m.Role, Time: at, SessionDate: at, Text: m.Content})
	}
	b := &flushBatch{p: p, conv: pl.Conversation, msgs: msgs,
		sum: FlushSummary{Messages: len(msgs), Extractor: "pattern", Gatekeeper: map[string]int{}}}
	return b, turns, nil
}

// patternPass runs the pattern gatekeeper over every turn: one log
// entry a message, and the facts the patterns found.
func (b *flushBatch) patternPass(j store.Job, turns []extract.Turn) {
	b.gk = make([]store.GatekeeperEntry, len(turns))
	for i, t := range turns {
		ev := extract.Patterns(t)
		b.gk[i] = store.GatekeeperEntry{ID: memory.NewID(), Workspace: j.Workspace, JobID: j.ID, MessageID: b.msgs[i].ID,
			Decision: ev.Decision, Reason: ev.Reason, Pattern: ev.Pattern, Facts: len(ev.Facts)}
		for _, f := range ev.Facts {
			b.facts = append(b.facts, plannedFact{fact: f, extractor: "pattern"})
		}
	}
}

// llmPass extracts the facts with the model within llmCtx's budget. On
// success the model's facts replace the patterns'; on failure the job
// is handed back for another attempt, or, on its last attempt, keeps
// the patterns' facts (fail open, logged).
func (s *Service) llmPass(ctx, llmCtx context.Context, budget time.Duration, j store.Job, b *flushBatch, turns []extract.Turn) (bool, error) {
	llmFacts, err := s.extract.LLM.Extract(llmCtx, turns)
	switch {
	case err == nil:
		b.sum.Extractor = "llm"
		b.facts = b.facts[:0]
		for _, f := range llmFacts {
			b.facts = append(b.facts, plannedFact{fact: f, extractor: "llm"})
		}
		for i := range b.gk {
			b.gk[i].Decision, b.gk[i].Reason, b.gk[i].Facts = GateIngestLLM, "extracted by the model with the rest of the flush", 0
		}
		return true, nil
	case ctx.Err() != nil:
		// The attempt itself ended (shutdown): hand the job back.
		return false, fmt.Errorf("flush attempt ended during llm extraction: %w", ctx.Err())
	case j.Attempts < j.MaxAttempts:
		return false, fmt.Errorf("llm extraction: %s", llmFailure(err, llmCtx, budget))
	default:
		// The last attempt: keep what the patterns found.
		s.log.Warn("llm extraction failed on the job's last attempt; using pattern extraction", "job_id", j.ID,
			"attempt", j.Attempts, "err", llmFailure(err, llmCtx, budget), "event", GateIngestFailopen)
		b.sum.Extractor = GateIngestFailopen
		for i := range b.gk {
			b.gk[i].Decision, b.gk[i].Reason = GateIngestFailopen, "model unavailable: "+b.gk[i].Reason
		}
		return false, nil
	}
}

// commitFlush writes the gatekeeper log and the planned facts in the
// job's completing transaction.
func (s *Service) commitFlush(ctx context.Context, tx store.Tx, j store.Job, b *flushBatch, now time.Time) (jobEffects, error) {
	res := b.sum
	res.Gatekeeper = map[string]int{}
	for _, e := range b.gk {
		e.CreatedAt = now
		if err := tx.InsertGatekeeper(ctx, e); err != nil {
			return jobEffects{}, err
		}
		res.Gatekeeper[e.Decision]++
	}
	// resolved[i] is the record that stands for facts[i] once it is
	// committed: the one written, the one it repeats, or, when the
	// gate refused it, the one it would have replaced. Later facts
	// of the flush that target facts[i] target that record.
	resolved := make([]string, len(b.facts))
	for i, pf := range b.facts {
		res.Facts++
		tid := pf.rec.TargetID
		if k, ok := pendingIndex(tid); ok {
			tid = resolved[k]
		}
		id, err := s.applyFlushFact(ctx, tx, j, b, pf, tid, now, &res)
		if err != nil {
			return jobEffects{}, err
		}
		resolved[i] = id
	}
	for _, e := range b.gk {
		s.metrics.ObserveGatekeeper(e.Decision)
	}
	return jobEffects{result: res}, nil
}

// applyFlushFact carries out one fact's reconciliation decision against
// tid (its resolved target) and counts it in res. It returns the record
// that stands for the fact afterwards ("" when none).
func (s *Service) applyFlushFact(ctx context.Context, tx store.Tx, j store.Job, b *flushBatch, pf plannedFact, tid string, now time.Time, res *FlushSummary) (string, error) {
	p := b.p
	switch pf.rec.Action {
	case extract.ActionNoop:
		res.Noop++
		return tid, nil
	case extract.ActionInvalidate:
		if tid == "" {
			res.Noop++
			return "", nil
		}
		old, ok, err := s.invalidateIn(ctx, tx, p, tid, j.ID, now)
		if err != nil {
			return "", err
		}
		if !ok {
			res.Noop++
			return "", nil
		}
		res.Invalidated++
		prev := old
		prev.InvalidatedAt = nil
		return "", regrant(ctx, tx, p.Workspace, &prev, old)
	}
	req := factRequest(pf, b.conv, j.ID)
	if pf.rec.Action == extract.ActionUpdate {
		req.Supersedes = tid
	}
	wr, err := s.writeIn(ctx, tx, p, req, now)
	if err != nil {
		if !isRefusal(err) {
			return "", err
		}
		res.Refused++
		return req.Supersedes, nil
	}
	switch {
	case wr.Decision == memory.DecisionDuplicate:
		res.Noop++
	case req.Supersedes != "" || wr.Record.Supersedes != nil:
		res.Updated++
	default:
		res.Added++
	}
	if g, ok := recordGrant(wr.Record); ok && wr.Decision != memory.DecisionDuplicate && wr.Record.Type == memory.Preference {
		// The typed relation the fact states: the user prefers
		// what it names (a quarantined fact states none yet).
		if err := s.relateIn(ctx, tx, p.Workspace, req.Entities[0], req.Entities[1:], "PREFERS", g, now); err != nil {
			return "", err
		}
	}
	return wr.Record.ID, nil
}

// similarFacts returns up to 5 live facts of the user, most similar to
// content first. A store failure is an error: reconciling against facts
// that could not be read would store contradictions as new facts.
func (s *Service) similarFacts(ctx context.Context, p memory.Principal, cv store.Conversation, content string) ([]extract.Existing, error) {
	if s.index == nil {
		return nil, nil
	}
	af := accessFilter(p, false)
	f := retrieve.Filter{Workspace: p.Workspace, Types: factTypes, Statuses: []memory.Status{memory.Active},
		Scope: memory.Scope{UserID: cv.UserID, AppID: cv.AppID, ProjectID: cv.ProjectID}, Access: af.Levels, OwnAgent: af.OwnAgent, OwnUser: af.OwnUser}
	var out []extract.Existing
	for _, c := range s.index.SimilarTo(f, content, retrieve.WordSet(content), 5) {
		r, err := s.store.GetRecord(ctx, p.Workspace, c.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue // forgotten meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("reading facts to reconcile with: %w", err)
		}
		if r.Status != memory.Active || r.InvalidatedAt != nil {
			continue
		}
		out = append(out, extract.Existing{ID: r.ID, Type: string(r.Type), Content: r.Content, Entities: r.Entities})
	}
	return out, nil
}

// factRequest is the write a planned fact becomes: user memory (no
// session), inferred, with its evidence and how it was extracted.
func factRequest(pf plannedFact, cv store.Conversation, jobID string) WriteRequest {
	f := pf.fact
	meta := map[string]any{"extractor": pf.extractor, "job_id": jobID, "session_id": cv.SessionID}
	if f.Pattern != "" {
		meta["pattern"] = f.Pattern
	}
	if pf.extractor == "llm" {
		meta["prompt_version"] = extract.PromptVersion
	}
	if f.EventTime != nil {
		meta["event_time"] = f.EventTime.UTC().Format(time.RFC3339)
	}
	if len(f.Tags) > 0 {
		meta["tags"] = f.Tags
	}
	raw, _ := json.Marshal(meta)
	conf := f.Confidence
	if conf <= 0 || conf > 1 {
		conf = memory.DefaultConfidence(memory.Inferred)
	}
	ev := slices.DeleteFunc(slices.Clone(f.Evidence), func(id string) bool { return !memory.ValidID(id) })
	return WriteRequest{Type: memory.Type(f.Type), Category: "extracted", Content: f.Content, Metadata: raw,
		Entities: append([]string{"user:" + cv.UserID}, entityKeys(f)...), Source: &SourceInput{Kind: memory.Inferred, Confidence: &conf, Evidence: ev},
		Scope: memory.Scope{UserID: cv.UserID, AppID: cv.AppID, ProjectID: cv.ProjectID}, Origin: OriginExtraction}
}

// OriginExtraction marks records written by conversation extraction.
const OriginExtraction = "extraction"

// entityKeys turns extracted entity names into label:key entity keys.
func entityKeys(f extract.Fact) []string {
	label := "concept"
	if slices.Contains(f.Tags, "technology") {
		label = "technology"
	}
	out := []string{}
	for _, e := range f.Entities {
		k := strings.Join(strings.Fields(strings.ToLower(e)), "_")
		if k == "" || len(k) > 200 {
			continue
		}
		key := label + ":" + k
		if !slices.Contains(out, key) {
			out = append(out, key)
		}
	}
	return out
}

// invalidateIn marks a live fact as no longer believed (invalidated_at),
// a new version, audited, inside the job's transaction. ok is false when
// the fact is gone or changed meanwhile.
func (s *Service) invalidateIn(ctx context.Context, tx store.Tx, p memory.Principal, id, jobID string, now time.Time) (memory.Record, bool, error) {
	head, err := tx.GetRecord(ctx, p.Workspace, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return memory.Record{}, false, err
	}
	if err != nil || head.Status != memory.Active || head.InvalidatedAt != nil || !slices.Contains(factTypes, head.Type) {
		return memory.Record{}, false, nil
	}
	decisionID := memory.NewID()
	next := head
	next.Version++
	next.UpdatedAt = now
	next.InvalidatedAt = &now
	next.ModifiedBy = p.ID
	next.Gate = memory.GateInfo{DecisionID: decisionID, Decision: memory.DecisionAccepted, Origin: OriginExtraction}
	if err := tx.UpdateRecord(ctx, p.Workspace, next, head.Version); err != nil {
		return memory.Record{}, false, err
	}
	_, err = appendAudit(ctx, tx, p.Workspace, p, decisionID, "record.invalidate", now, map[string]any{
		"decision": memory.DecisionAccepted, "reason": "extraction_invalidated", "record_id": id, "version": next.Version,
		"job_id": jobID})
	return next, err == nil, err
}

// relateIn joins the node of entity from to the nodes of entities to by
// relation, inside tx: a live edge that exists is observed again (its
// observed_at moves on), else a new one is inserted. Entities without a
// node are skipped. The edge is seen by whoever sees the fact that
// states it (g), and both of its ends.
func (s *Service) relateIn(ctx context.Context, tx store.Tx, ws, from string, to []string, relation string, g memory.Grant, now time.Time) error {
	fl, fk, _ := strings.Cut(from, ":")
	src, err := tx.GetNode(ctx, store.NodeFind{Workspace: ws, Label: fl, Key: fk})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, t := range to {
		tl, tk, _ := strings.Cut(t, ":")
		dst, err := tx.GetNode(ctx, store.NodeFind{Workspace: ws, Label: tl, Key: tk})
		if errors.Is(err, store.ErrNotFound) || err == nil && dst.ID == src.ID {
			continue
		}
		if err != nil {
			return err
		}
		// EnsureEdge: a concurrent flush of the same user may relate the
		// same nodes; the edge is then observed again, not a conflict.
		props, _ := json.Marshal(map[string]string{"provenance": string(memory.ProvExtracted)})
		e, inserted, err := tx.EnsureEdge(ctx, ws, memory.Edge{ID: memory.NewID(), From: src.ID, To: dst.ID, Relation: relation,
			Weight: 1, Properties: props, ObservedAt: now, CreatedAt: now, UpdatedAt: now, Access: g.Access, Writer: g.Writer})
		if err == nil && !inserted {
			e.ObservedAt, e.UpdatedAt = now, now
			if e.Access != "" && covers(g, memory.Grant{Access: e.Access, Writer: e.Writer}) {
				e.Access, e.Writer = g.Access, g.Writer // stated again more widely
			}
			err = tx.UpdateEdge(ctx, ws, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
