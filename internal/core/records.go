package core

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// SourceInput is the writer-supplied part of a record's provenance; the
// agent is always the authenticated principal.
type SourceInput struct {
	Kind       memory.SourceKind `json:"kind,omitempty"`
	Confidence *float64          `json:"confidence,omitempty"`
	Evidence   []string          `json:"evidence,omitempty"`
}

// WriteRequest proposes a new record.
type WriteRequest struct {
	Type           memory.Type     `json:"type"`
	Category       string          `json:"category,omitempty"`
	Content        string          `json:"content"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	Entities       []string        `json:"entities,omitempty"`
	Source         *SourceInput    `json:"source,omitempty"`
	Scope          memory.Scope    `json:"scope"`
	ValidFrom      *time.Time      `json:"valid_from,omitempty"`
	ValidUntil     *time.Time      `json:"valid_until,omitempty"`
	Access         memory.Access   `json:"access,omitempty"`
	Classification string          `json:"classification,omitempty"`
	// Status may be "" (let the gate decide) or "provisional".
	Status memory.Status `json:"status,omitempty"`
	// Supersedes names an active record this one replaces.
	Supersedes string `json:"supersedes,omitempty"`
	Path       string `json:"path,omitempty"`
	// Origin is set by internal callers (consolidation, maintenance);
	// adapters leave it empty, which means external.
	Origin string `json:"-"`
	// exactByCaller is set by callers that decide duplicates themselves,
	// exactly, as the knowledge-graph layer does for an entity's
	// observations (the reference server's rule): the gate then neither
	// merges near-duplicates nor exact ones.
	exactByCaller bool
	// nodes are entity nodes the caller read or wrote in this same
	// transaction, by entity, kept current by the write (regrantKnown):
	// linking and regranting do not read them again (the drop-in's
	// create_entities writes an entity's node, then its observations).
	nodes map[string]memory.Node
	// written, when set, collects the record the write inserts for the
	// search index's catch-up after commit (follow.go).
	written *txWrites
	// ownTurn is set by the gateway for a user's own chat turn
	// (gate.Input.OwnConversation).
	ownTurn bool
	// Addressed is set by callers that address records by a key of their
	// own (memory files by path, internal/files): identical or similar
	// text at two keys is two records, so the write skips duplicate and
	// conflict detection, which would merge or supersede them.
	Addressed bool `json:"-"`
	// Claim, set by callers that address records by a key of their own,
	// runs first inside the write transaction: it may lock and look up its
	// key in the database (tx.LockKey, tx.FindByMeta), so a key taken by
	// another process is refused however the processes race. An error
	// refuses the write.
	Claim func(ctx context.Context, tx store.Tx) error `json:"-"`
}

// WriteResult is the gate's answer to a write.
type WriteResult struct {
	Decision   string        `json:"decision"`
	Reason     string        `json:"reason,omitempty"`
	Record     memory.Record `json:"record"`
	Citation   string        `json:"citation"`
	ApprovalID string        `json:"approval_id,omitempty"`
	PIIKinds   []string      `json:"pii_kinds,omitempty"`
}

// draft turns a request into a version-1 record with defaults applied.
func (s *Service) draft(p memory.Principal, req WriteRequest, now time.Time) memory.Record {
	src := SourceInput{}
	if req.Source != nil {
		src = *req.Source
	}
	if src.Kind == "" {
		src.Kind = memory.Observed
	}
	conf := memory.DefaultConfidence(src.Kind)
	if src.Confidence != nil {
		conf = *src.Confidence
	}
	if src.Evidence == nil {
		src.Evidence = []string{}
	}
	access := req.Access
	if access == "" {
		access = memory.Public
	}
	path := req.Path
	if path == "" {
		path = memory.PathFast
	}
	meta := req.Metadata
	if len(meta) == 0 || string(meta) == "null" {
		meta = json.RawMessage(`{}`)
	}
	ents := req.Entities
	if ents == nil {
		ents = []string{}
	}
	origin := req.Origin
	if origin == "" {
		origin = memory.OriginExternal
	}
	var sup *string
	if req.Supersedes != "" {
		sup = &req.Supersedes
	}
	return memory.Record{
		ID:             memory.NewID(),
		Type:           req.Type,
		Category:       req.Category,
		Content:        req.Content,
		ContentSHA256:  memory.SHA256Hex(req.Content),
		Metadata:       meta,
		Entities:       ents,
		Version:        1,
		Supersedes:     sup,
		Source:         memory.Source{Agent: p.Name, PrincipalID: p.ID, Kind: src.Kind, Confidence: conf, Evidence: src.Evidence},
		Scope:          req.Scope,
		ValidFrom:      memory.CanonPtr(req.ValidFrom),
		ValidUntil:     memory.CanonPtr(req.ValidUntil),
		IngestedAt:     now,
		Access:         access,
		Classification: req.Classification,
		Gate:           memory.GateInfo{Origin: origin},
		DecayScore:     1,
		Path:           path,
		CreatedAt:      now,
		UpdatedAt:      now,
		ModifiedBy:     p.ID,
	}
}

// Write runs a proposed record through the gate (SPEC §4) and stores it.
// Every decision, rejections included, is one audit entry.
func (s *Service) Write(ctx context.Context, p memory.Principal, req WriteRequest) (WriteResult, error) {
	defer s.fgBegin()() // background embedding yields (yield.go)
	now := s.clock()
	r := s.draft(p, req, now)
	decisionID := memory.NewID()
	r.Gate.DecisionID = decisionID

	// Steps 1-3: schema, authorization, rate limit.
	if err := s.precheck(p, r, req); err != nil {
		s.auditRejection(ctx, p, decisionID, "record.write", r, err, now)
		return WriteResult{}, err
	}

	// Step 5's similarity search runs before the transaction, on the read
	// pool; only a hit is re-verified under the writer.
	var found similarity
	if !req.Addressed {
		found = s.checkSimilar(p, p.Workspace, r)
	}

	var res WriteResult
	// A new record has no expected version, so a version conflict here is
	// the write's own race: a record it supersedes changed between the
	// in-transaction re-check and the update (on PostgreSQL, a concurrent
	// transaction of this or another replica). The transaction is run
	// again, re-checking against the new head, instead of answering 409 to
	// a create (issue 14).
	var err error
	var written txWrites
	if s.index != nil {
		req.written = &written
	}
	for attempt := 0; ; attempt++ {
		err = s.tx(ctx, "record", func(tx store.Tx) error {
			written = written[:0] // this attempt's
			var err error
			res, err = s.writeTx(ctx, tx, p, r, req, found, decisionID, now)
			return err
		})
		if attempt == 3 || !errors.Is(err, store.ErrVersionConflict) {
			break
		}
	}
	if err != nil {
		if isRefusal(err) {
			s.auditRejection(ctx, p, decisionID, "record.write", r, err, now)
		}
		return WriteResult{}, err
	}
	s.countDecision(res.Decision, res.Reason)
	s.handed.put(written)
	s.logMoved(ctx)
	return res, nil
}

// writeTx is the transactional part of a gated write (SPEC §4 steps 4-7)
// for a draft that passed precheck; found is checkSimilar's verdict. A
// gate decision that refuses the write (a fault other than internal or
// unavailable) is returned before anything is written.
func (s *Service) writeTx(ctx context.Context, tx store.Tx, p memory.Principal, r memory.Record, req WriteRequest, found similarity, decisionID string, now time.Time) (WriteResult, error) {
	if req.Claim != nil {
		if err := req.Claim(ctx, tx); err != nil {
			return WriteResult{}, err
		}
	}
	flagged, err := evidenceFlagged(ctx, tx, p.Workspace, r.Source.Evidence)
	if err != nil {
		return WriteResult{}, err
	}
	var target memory.Record
	if r.Supersedes != nil {
		if target, err = supersedeTarget(ctx, tx, p, *r.Supersedes); err != nil {
			return WriteResult{}, err
		}
	}
	own := req.ownTurn && p.Kind == memory.KindUser && r.Scope.UserID == userOf(p)
	out, err := s.decide(ctx, gate.Input{Principal: p, Record: r, WantProvisional: req.Status == memory.Provisional,
		EvidenceFlagged: flagged, OwnConversation: own})
	if err != nil {
		return WriteResult{}, err
	}
	r.Status, r.Access = out.Status, out.Access
	r.Gate.Decision = out.Decision

	// Step 5: exact duplicates of live records are no-ops.
	dedup := !req.Addressed && !slices.Contains(s.policy.Duplicates.IgnoreTypes, r.Type) && !req.exactByCaller
	if dedup && s.policy.Duplicates.Exact && out.Decision != memory.DecisionQuarantined {
		dup, err := tx.FindDuplicate(ctx, p.Workspace, r.Type, r.ContentSHA256, r.Scope)
		if err == nil && canRead(p, dup, false) {
			return duplicateWrite(ctx, tx, p, r, dup, gate.ReasonDuplicate, decisionID, now)
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return WriteResult{}, err
		}
	}

	if out.Decision != memory.DecisionQuarantined && !req.Addressed {
		sim, err := recheck(ctx, tx, p.Workspace, r.Content, found)
		if err != nil {
			return WriteResult{}, err
		}
		if dup := sim.duplicate; dup != nil && dedup && canRead(p, *dup, false) {
			return duplicateWrite(ctx, tx, p, r, *dup, reasonNearDuplicate, decisionID, now)
		}
		if c := sim.conflict; c != nil {
			// The new record supersedes the one it contradicts, now or
			// when an operator approves it.
			id := c.ID
			r.Supersedes, target = &id, *c
			out = conflictOutcome(s.policy, out)
			if out.Reason == gate.ReasonPolicyAccept {
				out.Reason = reasonConflict
			}
			r.Status, r.Gate.Decision = out.Status, out.Decision
		}
	}
	if out.Status == memory.Active && r.Supersedes != nil {
		r.ValidFrom = successorValidFrom(target, r, now)
	}
	return s.insertWritten(ctx, tx, p, r, req, out, target, decisionID, now)
}

// supersedeTarget reads the record a write supersedes: one p can read,
// active, not a session event.
func supersedeTarget(ctx context.Context, tx store.Tx, p memory.Principal, id string) (memory.Record, error) {
	target, err := tx.GetRecord(ctx, p.Workspace, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return memory.Record{}, err // a store failure, not a bad field
	}
	if err != nil || !canRead(p, target, true) {
		return memory.Record{}, fault.Field("supersedes", "no such record")
	}
	if target.Status != memory.Active {
		return memory.Record{}, fault.New(fault.Conflict, "supersedes: only an active record can be superseded").With("field", "supersedes")
	}
	if _, ok := EventOf(target); ok {
		return memory.Record{}, fault.New(fault.Conflict, "supersedes: session events are append-only").With("field", "supersedes")
	}
	return target, nil
}

// duplicateWrite answers a write that repeats dup (for reason): nothing
// is stored but the audit entry that says so.
func duplicateWrite(ctx context.Context, tx store.Tx, p memory.Principal, r, dup memory.Record, reason, decisionID string, now time.Time) (WriteResult, error) {
	_, err := appendAudit(ctx, tx, p.Workspace, p, decisionID, "record.write", now, map[string]any{
		"decision": memory.DecisionDuplicate, "reason": reason, "record_id": dup.ID,
		"type": string(r.Type), "content_sha256": r.ContentSHA256,
	})
	if err != nil {
		return WriteResult{}, err
	}
	return WriteResult{Decision: memory.DecisionDuplicate, Reason: reason, Record: dup, Citation: dup.Citation()}, nil
}

// insertWritten stores the decided record (SPEC §4 step 7): the row, its
// file change, entity links and grants, the supersession of target, the
// approval item the decision asks for, and the audit entry.
func (s *Service) insertWritten(ctx context.Context, tx store.Tx, p memory.Principal, r memory.Record, req WriteRequest, out gate.Outcome, target memory.Record, decisionID string, now time.Time) (WriteResult, error) {
	if err := tx.InsertRecord(ctx, p.Workspace, r); err != nil {
		return WriteResult{}, err
	}
	req.written.note(tx, p.Workspace, r)
	if err := fileChanged(ctx, tx, p.Workspace, r, "created", now); err != nil {
		return WriteResult{}, err
	}
	known := req.nodes
	if known == nil {
		known = map[string]memory.Node{}
	}
	if err := s.linkEntities(ctx, tx, p, r, now, known); err != nil {
		return WriteResult{}, err
	}
	if err := regrantKnown(ctx, tx, p.Workspace, nil, r, known); err != nil {
		return WriteResult{}, err
	}
	if out.Status == memory.Active && r.Supersedes != nil {
		if err := supersede(ctx, tx, p.Workspace, p, target, r, now); err != nil {
			return WriteResult{}, err
		}
	}
	res := WriteResult{Decision: out.Decision, Reason: out.Reason, Record: r, Citation: r.Citation(), PIIKinds: out.PIIKinds}
	payload := map[string]any{
		"decision": out.Decision, "reason": out.Reason, "record_id": r.ID, "version": r.Version,
		"type": string(r.Type), "status": string(r.Status), "access": string(r.Access), "content_sha256": r.ContentSHA256,
	}
	if len(out.PIIKinds) > 0 {
		payload["pii_kinds"] = out.PIIKinds
	}
	if r.Supersedes != nil {
		payload["supersedes"] = *r.Supersedes
	}
	if out.ApprovalKind != "" {
		a := memory.Approval{ID: memory.NewID(), Workspace: p.Workspace, RecordID: r.ID, Kind: out.ApprovalKind,
			Reason: out.Reason, Status: memory.ApprovalOpen, CreatedAt: now, ExpiresAt: now.Add(s.policy.Approvals.TTL.D())}
		if err := insertApproval(ctx, tx, a); err != nil {
			return WriteResult{}, err
		}
		res.ApprovalID = a.ID
		payload["approval_id"] = a.ID
	}
	if _, err := appendAudit(ctx, tx, p.Workspace, p, decisionID, "record.write", now, payload); err != nil {
		return WriteResult{}, err
	}
	return res, nil
}

// precheck is gate steps 1-3 for a write.
func (s *Service) precheck(p memory.Principal, r memory.Record, req WriteRequest) error {
	if err := s.schemaAndAuth(p, r, req); err != nil {
		return err
	}
	return s.rateLimit(p)
}

// schemaAndAuth is gate steps 1 and 2.
func (s *Service) schemaAndAuth(p memory.Principal, r memory.Record, req WriteRequest) error {
	if req.Status != "" && req.Status != memory.Provisional && req.Status != memory.Active {
		return fault.Field("status", "may only be provisional (or omitted)").With("reason", gate.ReasonSchema)
	}
	if req.Supersedes != "" && !memory.ValidID(req.Supersedes) {
		return fault.Field("supersedes", "must be a record id").With("reason", gate.ReasonSchema)
	}
	if err := s.policy.CheckSchema(r); err != nil {
		return err
	}
	return s.policy.Authorize(p, r)
}

func (s *Service) rateLimit(p memory.Principal) error {
	l := s.limits[p.Kind]
	if l == nil {
		return nil
	}
	if ok, wait := l.Allow(p.ID); !ok {
		return &fault.Error{Code: fault.RateLimited, Message: "rate limit exceeded, retry later", RetryAfter: wait,
			Details: map[string]any{"reason": gate.ReasonRateLimited}}
	}
	return nil
}

// auditRejection records a rejected decision in its own transaction. A
// failure to audit is logged: the caller already answers with the
// rejection, and the rejection wrote nothing else.
func (s *Service) auditRejection(ctx context.Context, p memory.Principal, decisionID, event string, r memory.Record, cause error, now time.Time) {
	err := s.store.Tx(ctx, func(tx store.Tx) error {
		return s.auditRejectionTx(ctx, tx, p, decisionID, event, r, cause, now)
	})
	if err != nil {
		s.log.Error("audit of a rejected write failed", "err", err, "decision_id", decisionID)
	}
}

// auditRejectionTx appends the audit entry of a rejected decision in tx.
func (s *Service) auditRejectionTx(ctx context.Context, tx store.Tx, p memory.Principal, decisionID, event string, r memory.Record, cause error, now time.Time) error {
	fe := fault.As(cause)
	reason, _ := fe.Details["reason"].(string)
	if reason == "" {
		reason = string(fe.Code)
	}
	s.countDecision(memory.DecisionRejected, reason)
	// Rejected input is untrusted: only values known to be ours (enum
	// members, well-formed ids, hashes) may enter the payload, since a
	// rejected field could hold a secret.
	payload := map[string]any{"decision": memory.DecisionRejected, "reason": reason, "code": string(fe.Code)}
	if slices.Contains(memory.Types, r.Type) {
		payload["type"] = string(r.Type)
	}
	if r.ContentSHA256 != "" {
		payload["content_sha256"] = r.ContentSHA256
	}
	if memory.ValidID(r.ID) && event != "record.write" {
		payload["record_id"] = r.ID
	}
	if f, ok := fe.Details["field"].(string); ok {
		payload["field"] = f
	}
	_, err := appendAudit(ctx, tx, p.Workspace, p, decisionID, event, now, payload)
	return err
}

// writeIn runs a whole gated write inside the caller's transaction, so
// that ingestion commits a request's or a job's writes, and its own
// bookkeeping, together. It applies no rate limit (the caller's request
// was limited once). A write the gate refuses is audited in tx and
// returned as an error that wrote nothing else (isRefusal), so the caller
// may go on with the transaction; any other error must abort it. The
// caller calls logMoved after commit.
func (s *Service) writeIn(ctx context.Context, tx store.Tx, p memory.Principal, req WriteRequest, now time.Time) (WriteResult, error) {
	r := s.draft(p, req, now)
	decisionID := memory.NewID()
	r.Gate.DecisionID = decisionID
	err := s.schemaAndAuth(p, r, req)
	var res WriteResult
	if err == nil {
		var found similarity
		if !req.exactByCaller && !req.Addressed { // writeTx uses it for neither
			found = s.checkSimilar(p, p.Workspace, r)
		}
		res, err = s.writeTx(ctx, tx, p, r, req, found, decisionID, now)
	}
	if err != nil {
		if isRefusal(err) {
			if aerr := s.auditRejectionTx(ctx, tx, p, decisionID, "record.write", r, err, now); aerr != nil {
				return WriteResult{}, aerr
			}
		}
		return WriteResult{}, err
	}
	s.countDecision(res.Decision, res.Reason)
	return res, nil
}

// isRefusal reports whether err is the gate (or a validation) refusing a
// write, as opposed to a failure of the system.
func isRefusal(err error) bool {
	fe := fault.As(err)
	return fe.Code != fault.Internal && fe.Code != fault.Unavailable
}

// evidenceFlagged reports whether any evidence record was flagged by the
// PII screen, so derived records inherit the quarantine.
func evidenceFlagged(ctx context.Context, tx store.Tx, ws string, ids []string) (bool, error) {
	for _, id := range ids {
		ev, err := tx.GetRecord(ctx, ws, id)
		if errors.Is(err, store.ErrNotFound) {
			return false, fault.Field("source.evidence", "refers to a record that does not exist")
		}
		if err != nil {
			return false, err
		}
		// A flagged turn is readable by its user only: what is derived
		// from it must not reach agents either.
		if ev.Status == memory.Quarantined || ev.Gate.Decision == memory.DecisionQuarantined || ev.Gate.Decision == memory.DecisionFlagged {
			return true, nil
		}
	}
	return false, nil
}

// supersede retires target in favour of r: a new version of target with
// status superseded, a pointer to r, and its world validity closed where
// r's begins.
func supersede(ctx context.Context, tx store.Tx, ws string, by memory.Principal, target, r memory.Record, now time.Time) error {
	next := target
	next.Version = target.Version + 1
	next.Status = memory.Superseded
	id := r.ID
	next.SupersededBy = &id
	next.ValidUntil = closedValidity(target, r, now)
	next.UpdatedAt = now
	next.ModifiedBy = by.ID
	return tx.UpdateRecord(ctx, ws, next, target.Version)
}

// closedValidity is where target's world validity ends once r replaces
// it: its own end if it had one, else where r's begins (now when r does
// not say), unless that is not after target's start.
func closedValidity(target, r memory.Record, now time.Time) *time.Time {
	if target.ValidUntil != nil {
		return target.ValidUntil
	}
	end := now
	if r.ValidFrom != nil {
		end = *r.ValidFrom
	}
	if target.ValidFrom == nil || end.After(*target.ValidFrom) {
		return &end
	}
	return nil
}

// successorValidFrom is where the world validity of r, which replaces
// target, begins: its own start if it states one, else where target's
// ends, so that an as_of query never sees both as valid at once.
func successorValidFrom(target, r memory.Record, now time.Time) *time.Time {
	if r.ValidFrom != nil {
		return r.ValidFrom
	}
	if end := closedValidity(target, r, now); end != nil {
		return memory.CanonPtr(end)
	}
	return memory.CanonPtr(&now)
}

// canRead applies SPEC §2 access levels. includeSensitive is the
// request's explicit ask for sensitive records.
func canRead(p memory.Principal, r memory.Record, includeSensitive bool) bool {
	switch p.Kind {
	case memory.KindSystem:
		return true
	case memory.KindOperator:
		return r.Access != memory.System
	case memory.KindAgent, memory.KindUser:
		switch r.Access {
		case memory.Public:
			return true
		case memory.AgentOnly:
			// Ownership follows the principal id: a name is free text
			// that a later principal (or an import) may share.
			return p.ID != "" && r.Source.PrincipalID == p.ID
		case memory.UserOnly:
			// A gateway user's own turns the PII policy flagged.
			return p.Kind == memory.KindUser && p.ID != "" && r.Source.PrincipalID == p.ID
		case memory.Sensitive:
			return includeSensitive && p.Trust == memory.Trusted
		}
	}
	return false
}

// canChange applies the one ownership rule for changing a record (patch,
// forget, invalidate; docs/access.md) to a record p can read: operators
// (and memgate itself) may change any record of their workspace; agents
// of trust standard or trusted, and gateway users, only records they
// wrote, by principal id; restricted and read_only agents none.
func canChange(p memory.Principal, r memory.Record) bool {
	switch p.Kind {
	case memory.KindSystem, memory.KindOperator:
		return true
	case memory.KindAgent:
		if p.Trust != memory.Trusted && p.Trust != memory.Standard {
			return false
		}
	case memory.KindUser:
	default:
		return false
	}
	return p.ID != "" && r.Source.PrincipalID == p.ID
}

// errNotOwner answers a change to a record the principal can read but did
// not write (a new value each time: callers may add details).
func errNotOwner() error {
	return fault.New(fault.PermissionDenied, "only the record's writer or an operator may change it").
		With("reason", gate.ReasonAccessDenied)
}

// accessFilter is canRead expressed as a store filter.
func accessFilter(p memory.Principal, includeSensitive bool) store.AccessFilter {
	switch p.Kind {
	case memory.KindSystem:
		return store.AccessFilter{Levels: memory.AccessLevels}
	case memory.KindOperator:
		return store.AccessFilter{Levels: []memory.Access{memory.Public, memory.AgentOnly, memory.UserOnly, memory.Sensitive}}
	case memory.KindAgent, memory.KindUser:
		f := store.AccessFilter{Levels: []memory.Access{memory.Public}, OwnAgent: p.ID, OwnUser: p.Kind == memory.KindUser}
		if includeSensitive && p.Trust == memory.Trusted {
			f.Levels = append(f.Levels, memory.Sensitive)
		}
		return f
	}
	return store.AccessFilter{}
}

// GetOptions select which state of a record Get returns.
type GetOptions struct {
	Version          int
	KnownAt          *time.Time
	IncludeSensitive bool
}

// Get returns a record the principal may read. Records it may not read are
// reported as not found, so their existence does not leak.
func (s *Service) Get(ctx context.Context, p memory.Principal, id string, o GetOptions) (memory.Record, error) {
	if !memory.ValidID(id) {
		return memory.Record{}, fault.New(fault.NotFound, "record not found")
	}
	head, err := s.store.GetRecord(ctx, p.Workspace, id)
	if err != nil {
		return memory.Record{}, storeErr(err, "record")
	}
	if !canRead(p, head, o.IncludeSensitive) {
		return memory.Record{}, fault.New(fault.NotFound, "record not found")
	}
	var r memory.Record
	switch {
	case o.Version > 0:
		r, err = s.store.GetRecordVersion(ctx, p.Workspace, id, o.Version)
		if err != nil {
			return memory.Record{}, storeErr(err, "record version")
		}
	case o.KnownAt != nil:
		r, err = s.store.GetRecordKnownAt(ctx, p.Workspace, id, memory.Canon(*o.KnownAt))
		if err != nil {
			return memory.Record{}, storeErr(err, "record at that time")
		}
	default:
		return head, nil
	}
	// A past version is read under its own access too: a version held
	// back (quarantined before an edited approval, say) stays hidden.
	if !canRead(p, r, o.IncludeSensitive) {
		return memory.Record{}, fault.New(fault.NotFound, "record version not found")
	}
	return r, nil
}

// History returns every version of a record, oldest first.
func (s *Service) History(ctx context.Context, p memory.Principal, id string, includeSensitive bool) ([]memory.Record, error) {
	if _, err := s.Get(ctx, p, id, GetOptions{IncludeSensitive: includeSensitive}); err != nil {
		return nil, err
	}
	vs, err := s.store.ListVersions(ctx, p.Workspace, id)
	if err != nil {
		return nil, storeErr(err, "record")
	}
	// Each version under its own access, as in Get.
	return slices.DeleteFunc(vs, func(v memory.Record) bool { return !canRead(p, v, includeSensitive) }), nil
}

// readableHeads keeps the versions in rs whose record's head p may read.
func (s *Service) readableHeads(ctx context.Context, p memory.Principal, rs []memory.Record, includeSensitive bool) ([]memory.Record, error) {
	out := rs[:0]
	for _, r := range rs {
		head, err := s.store.GetRecord(ctx, p.Workspace, r.ID)
		if err != nil {
			return nil, storeErr(err, "record")
		}
		if canRead(p, head, includeSensitive) {
			out = append(out, r)
		}
	}
	return out, nil
}

// ListRequest filters a record listing.
type ListRequest struct {
	Types              []memory.Type
	Statuses           []memory.Status
	Category           string
	Scope              memory.Scope
	Entity             string
	AsOf               *time.Time
	KnownAt            *time.Time
	IncludeInvalidated bool
	IncludeSensitive   bool
	MinConfidence      float64
	Cursor             string
	Limit              int
}

// ListResult is one page of records.
type ListResult struct {
	Records    []memory.Record `json:"records"`
	NextCursor string          `json:"next_cursor,omitempty"`
}

// List returns records the principal may read, newest first. When AsOf is
// set and no status is asked for, superseded records are included: the
// world-validity window, not the current status, decides what was true.
func (s *Service) List(ctx context.Context, p memory.Principal, req ListRequest) (ListResult, error) {
	for _, t := range req.Types {
		if !slices.Contains(memory.Types, t) {
			return ListResult{}, fault.Field("type", "must be one of belief, decision, episode, skill, entity, preference, reflection, resource")
		}
	}
	for _, st := range req.Statuses {
		if !slices.Contains(memory.Statuses, st) {
			return ListResult{}, fault.Field("status", "must be one of provisional, active, quarantined, archived, superseded, forgotten")
		}
	}
	if req.Cursor != "" && !memory.ValidID(req.Cursor) {
		return ListResult{}, fault.Field("cursor", "is not a cursor returned by this API")
	}
	if req.Limit < 0 || req.Limit > store.MaxLimit {
		return ListResult{}, fault.Field("limit", "must be between 1 and 500")
	}
	if req.MinConfidence < 0 || req.MinConfidence > 1 {
		return ListResult{}, fault.Field("min_confidence", "must be between 0 and 1")
	}
	statuses := req.Statuses
	if len(statuses) == 0 && req.AsOf != nil {
		statuses = []memory.Status{memory.Active, memory.Superseded}
	}
	limit := req.Limit
	if limit == 0 {
		limit = store.DefaultLimit
	}
	q := store.RecordQuery{
		Types: req.Types, Statuses: statuses, Category: req.Category, Scope: req.Scope, Entity: req.Entity,
		Access: accessFilter(p, req.IncludeSensitive), AsOf: memory.CanonPtr(req.AsOf), KnownAt: memory.CanonPtr(req.KnownAt),
		IncludeInvalidated: req.IncludeInvalidated, MinConfidence: req.MinConfidence, Before: req.Cursor, Limit: limit + 1,
	}
	rs, err := s.store.ListRecords(ctx, p.Workspace, q)
	if err != nil {
		return ListResult{}, storeErr(err, "records")
	}
	out := ListResult{Records: rs}
	if len(rs) > limit {
		out.Records = rs[:limit]
		out.NextCursor = rs[limit-1].ID
	}
	if req.KnownAt != nil {
		// Past versions: the record's head must be readable too, as in Get.
		if out.Records, err = s.readableHeads(ctx, p, out.Records, req.IncludeSensitive); err != nil {
			return ListResult{}, err
		}
	}
	if out.Records == nil {
		out.Records = []memory.Record{}
	}
	return out, nil
}
