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
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
)

// ExtractionOptions configure what a gateway flush extracts (SPEC §7).
type ExtractionOptions struct {
	// LLM, when set, extracts facts with a chat model and reconciles
	// them against existing facts; the pattern gatekeeper is the
	// fallback when it fails for good.
	LLM *extract.LLM
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

// plannedFact is a candidate with its reconciliation decision.
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
	var pl flushPayload
	if err := json.Unmarshal(j.Payload, &pl); err != nil {
		return nil, fmt.Errorf("flush job payload: %w", err)
	}
	p, err := s.store.GetPrincipal(ctx, j.Workspace, pl.PrincipalID)
	if err != nil {
		return nil, fmt.Errorf("flush job principal: %w", err)
	}
	p.TokenHash = nil
	msgs, err := s.store.ListJobMessages(ctx, j.Workspace, j.ID)
	if err != nil {
		return nil, err
	}
	turns := make([]extract.Turn, 0, len(msgs))
	for _, m := range msgs {
		at := time.UnixMilli(m.Timestamp).UTC()
		// Evidence links point at the episode records, which readers can
		// fetch; MessageID carries the episode id for that reason.
		turns = append(turns, extract.Turn{MessageID: m.RecordID, SessionID: m.SessionID, SenderID: m.SenderID,
			Role: m.Role, Time: at, SessionDate: at, Text: m.Content})
	}

	sum := FlushSummary{Messages: len(msgs), Extractor: "pattern", Gatekeeper: map[string]int{}}
	gk := make([]store.GatekeeperEntry, len(turns))
	var facts []plannedFact
	for i, t := range turns {
		ev := extract.Patterns(t)
		gk[i] = store.GatekeeperEntry{ID: memory.NewID(), Workspace: j.Workspace, JobID: j.ID, MessageID: msgs[i].ID,
			Decision: ev.Decision, Reason: ev.Reason, Pattern: ev.Pattern, Facts: len(ev.Facts)}
		for _, f := range ev.Facts {
			facts = append(facts, plannedFact{fact: f, extractor: "pattern"})
		}
	}
	if l := s.extract.LLM; l != nil && len(turns) > 0 {
		llmFacts, err := l.Extract(ctx, turns)
		switch {
		case err == nil:
			sum.Extractor = "llm"
			facts = facts[:0]
			for _, f := range llmFacts {
				facts = append(facts, plannedFact{fact: f, extractor: "llm"})
			}
			for i := range gk {
				gk[i].Decision, gk[i].Reason, gk[i].Facts = GateIngestLLM, "extracted by the model with the rest of the flush", 0
			}
		case j.Attempts < j.MaxAttempts && ctx.Err() == nil:
			return nil, fmt.Errorf("llm extraction: %w", err)
		default:
			// Out of attempts: keep what the patterns found.
			s.log.Warn("llm extraction failed for good; using pattern extraction", "job_id", j.ID, "err", err, "event", GateIngestFailopen)
			sum.Extractor = GateIngestFailopen
			for i := range gk {
				gk[i].Decision, gk[i].Reason = GateIngestFailopen, "model unavailable: "+gk[i].Reason
			}
		}
	}
	for i := range facts {
		facts[i].rec = s.reconcile(ctx, p, pl.Conversation, facts[i].fact)
	}

	now := s.clock()
	commit := func(ctx context.Context, tx store.Tx) (jobEffects, error) {
		res := sum
		res.Gatekeeper = map[string]int{}
		var changed []memory.Record
		var gfx graphEffects
		for _, e := range gk {
			e.CreatedAt = now
			if err := tx.InsertGatekeeper(ctx, e); err != nil {
				return jobEffects{}, err
			}
			res.Gatekeeper[e.Decision]++
		}
		for _, pf := range facts {
			res.Facts++
			switch pf.rec.Action {
			case extract.ActionNoop:
				res.Noop++
				continue
			case extract.ActionInvalidate:
				old, ok, err := s.invalidateIn(ctx, tx, p, pf.rec.TargetID, j.ID, now)
				if err != nil {
					return jobEffects{}, err
				}
				if ok {
					res.Invalidated++
					changed = append(changed, old)
				} else {
					res.Noop++
				}
				continue
			}
			req := factRequest(pf, pl.Conversation, j.ID)
			if pf.rec.Action == extract.ActionUpdate {
				req.Supersedes = pf.rec.TargetID
			}
			wr, ch, err := s.writeIn(ctx, tx, p, req, now)
			if err != nil {
				if !isRefusal(err) {
					return jobEffects{}, err
				}
				res.Refused++
				continue
			}
			switch {
			case wr.Decision == memory.DecisionDuplicate:
				res.Noop++
			case req.Supersedes != "" || wr.Record.Supersedes != nil:
				res.Updated++
			default:
				res.Added++
			}
			changed = append(changed, ch...)
			gfx.add(wr.graph)
			if wr.Decision != memory.DecisionDuplicate && wr.Record.Type == memory.Preference {
				// The typed relation the fact states: the user prefers
				// what it names.
				es, err := s.relateIn(ctx, tx, p.Workspace, req.Entities[0], req.Entities[1:], "PREFERS", now)
				if err != nil {
					return jobEffects{}, err
				}
				gfx.edges = append(gfx.edges, es...)
			}
		}
		for _, e := range gk {
			s.metrics.ObserveGatekeeper(e.Decision)
		}
		return jobEffects{result: res, records: changed, graph: gfx}, nil
	}
	return commit, nil
}

// reconcile decides what a candidate fact does to the user's existing
// facts: the 5 most similar live ones are compared by the model when one
// is configured, else (or when it fails) by the deterministic rules. A
// model's no-op against a fact that differs in negation, a number, a date
// or time or a name would lose what the user said (docs/duplicates.md):
// the rules decide instead.
func (s *Service) reconcile(ctx context.Context, p memory.Principal, cv store.Conversation, f extract.Fact) extract.Reconciliation {
	existing := s.similarFacts(ctx, p, cv, f.Content)
	if len(existing) == 0 {
		return extract.Reconciliation{Action: extract.ActionAdd, Reason: "no similar fact"}
	}
	if l := s.extract.LLM; l != nil {
		if r, err := l.Reconcile(ctx, f, existing); err == nil {
			i := slices.IndexFunc(existing, func(e extract.Existing) bool { return e.ID == r.TargetID })
			if r.Action != extract.ActionNoop || i < 0 || !gate.MeaningDiffers(f.Content, existing[i].Content) {
				return r
			}
		}
	}
	return extract.ReconcileRules(f, existing)
}

// similarFacts returns up to 5 live facts of the user, most similar to
// content first.
func (s *Service) similarFacts(ctx context.Context, p memory.Principal, cv store.Conversation, content string) []extract.Existing {
	if s.index == nil {
		return nil
	}
	af := accessFilter(p, false)
	f := retrieve.Filter{Workspace: p.Workspace, Types: factTypes, Statuses: []memory.Status{memory.Active},
		Scope: memory.Scope{UserID: cv.UserID, AppID: cv.AppID, ProjectID: cv.ProjectID}, Access: af.Levels, OwnAgent: af.OwnAgent}
	var out []extract.Existing
	for _, c := range s.index.SimilarTo(f, content, retrieve.WordSet(content), 5) {
		r, err := s.store.GetRecord(ctx, p.Workspace, c.ID)
		if err != nil || r.Status != memory.Active || r.InvalidatedAt != nil {
			continue
		}
		out = append(out, extract.Existing{ID: r.ID, Type: string(r.Type), Content: r.Content, Entities: r.Entities})
	}
	return out
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
	if err != nil || head.Status != memory.Active || head.InvalidatedAt != nil || !slices.Contains(factTypes, head.Type) {
		return memory.Record{}, false, nil
	}
	decisionID := memory.NewID()
	next := head
	next.Version++
	next.UpdatedAt = now
	next.InvalidatedAt = &now
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
// node are skipped.
func (s *Service) relateIn(ctx context.Context, tx store.Tx, ws, from string, to []string, relation string, now time.Time) ([]memory.Edge, error) {
	fl, fk, _ := strings.Cut(from, ":")
	src, err := tx.GetNodeByKey(ctx, ws, fl, fk)
	if err != nil {
		return nil, nil
	}
	var out []memory.Edge
	for _, t := range to {
		tl, tk, _ := strings.Cut(t, ":")
		dst, err := tx.GetNodeByKey(ctx, ws, tl, tk)
		if err != nil || dst.ID == src.ID {
			continue
		}
		e, err := tx.FindLiveEdge(ctx, ws, src.ID, dst.ID, relation)
		switch {
		case err == nil:
			e.ObservedAt, e.UpdatedAt = now, now
			err = tx.UpdateEdge(ctx, ws, e)
		case errors.Is(err, store.ErrNotFound):
			props, _ := json.Marshal(map[string]string{"provenance": string(memory.ProvExtracted)})
			e = memory.Edge{ID: memory.NewID(), From: src.ID, To: dst.ID, Relation: relation, Weight: 1, Properties: props,
				ObservedAt: now, CreatedAt: now, UpdatedAt: now}
			err = tx.InsertEdge(ctx, ws, e)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
