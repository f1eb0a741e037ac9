package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// OptionalTime distinguishes an absent JSON field (Set false) from an
// explicit null (Set true, Value nil), so a PATCH can clear a time.
type OptionalTime struct {
	Set   bool
	Value *time.Time
}

// UnmarshalJSON implements json.Unmarshaler.
func (o *OptionalTime) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(b, []byte("null")) {
		o.Value = nil
		return nil
	}
	var t time.Time
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	o.Value = &t
	return nil
}

// PatchRequest changes a record, producing version expected_version+1.
// Absent fields are unchanged.
type PatchRequest struct {
	ExpectedVersion *int            `json:"expected_version"`
	Content         *string         `json:"content,omitempty"`
	Category        *string         `json:"category,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	Entities        *[]string       `json:"entities,omitempty"`
	Confidence      *float64        `json:"confidence,omitempty"`
	ValidFrom       OptionalTime    `json:"valid_from"`
	ValidUntil      OptionalTime    `json:"valid_until"`
	Access          *memory.Access  `json:"access,omitempty"`
	Classification  *string         `json:"classification,omitempty"`
	// Invalidate marks the record as no longer true (invalidated_at = now).
	Invalidate bool `json:"invalidate,omitempty"`
	// Claim is WriteRequest.Claim for a change of the caller's key; it
	// runs inside the transaction before the head is read.
	Claim func(ctx context.Context, tx store.Tx) error `json:"-"`
}

func (req PatchRequest) empty() bool {
	return req.Content == nil && req.Category == nil && req.Metadata == nil && req.Entities == nil &&
		req.Confidence == nil && !req.ValidFrom.Set && !req.ValidUntil.Set && req.Access == nil &&
		req.Classification == nil && !req.Invalidate
}

// apply returns r with the patch applied (without version bookkeeping).
func (req PatchRequest) apply(r memory.Record) memory.Record {
	if req.Content != nil {
		r.Content = *req.Content
		r.ContentSHA256 = memory.SHA256Hex(r.Content)
	}
	if req.Category != nil {
		r.Category = *req.Category
	}
	if req.Metadata != nil {
		r.Metadata = req.Metadata
		if string(r.Metadata) == "null" {
			r.Metadata = json.RawMessage(`{}`)
		}
	}
	if req.Entities != nil {
		r.Entities = slices.Clone(*req.Entities)
		if r.Entities == nil {
			r.Entities = []string{}
		}
	}
	if req.Confidence != nil {
		r.Source.Confidence = *req.Confidence
	}
	if req.ValidFrom.Set {
		r.ValidFrom = memory.CanonPtr(req.ValidFrom.Value)
	}
	if req.ValidUntil.Set {
		r.ValidUntil = memory.CanonPtr(req.ValidUntil.Value)
	}
	if req.Access != nil {
		r.Access = *req.Access
	}
	if req.Classification != nil {
		r.Classification = *req.Classification
	}
	return r
}

// Patch writes a new version of a record through the gate. A stale
// expected_version is a version_conflict and writes nothing, audit
// included.
func (s *Service) Patch(ctx context.Context, p memory.Principal, id string, req PatchRequest) (WriteResult, error) {
	defer s.fgBegin()() // background embedding yields (yield.go)
	if req.ExpectedVersion == nil {
		return WriteResult{}, fault.Field("expected_version", "is required")
	}
	if req.empty() {
		return WriteResult{}, fault.Field("body", "names no field to change")
	}
	if p.Kind == memory.KindAgent && (p.Trust == memory.Restricted || p.Trust == memory.ReadOnly) {
		return WriteResult{}, fault.New(fault.PermissionDenied, "agents of trust "+string(p.Trust)+" may not modify records; write a new record instead").
			With("reason", gate.ReasonReadOnly)
	}
	now := s.clock()
	decisionID := memory.NewID()
	var res WriteResult
	err := s.tx(ctx, "record", func(tx store.Tx) error {
		var err error
		res, err = s.patchTx(ctx, tx, p, id, req, decisionID, now, true)
		return err
	})
	if err != nil {
		// Rejections by policy are decisions and are audited; conflicts and
		// not-found are not decisions about content and write nothing.
		switch fault.CodeOf(err) {
		case fault.InvalidArgument, fault.PermissionDenied, fault.RateLimited, fault.GateRejected, fault.TooLarge:
			s.auditRejection(ctx, p, decisionID, "record.patch", memory.Record{ID: id}, err, now)
		}
		return WriteResult{}, err
	}
	s.countDecision(res.Decision, res.Reason)
	s.logMoved(ctx)
	return res, nil
}

// patchTx is Patch's transactional part in the caller's transaction;
// limit applies the rate limit (callers that limited the whole request
// once pass false). The caller audits a refusal and counts; after commit
// it calls logMoved.
func (s *Service) patchTx(ctx context.Context, tx store.Tx, p memory.Principal, id string, req PatchRequest, decisionID string, now time.Time, limit bool) (WriteResult, error) {
	var res WriteResult
	err := func() error {
		if req.Claim != nil {
			if err := req.Claim(ctx, tx); err != nil {
				return err
			}
		}
		head, err := tx.GetRecord(ctx, p.Workspace, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err // a store failure, not a missing record
		}
		if err != nil || !canRead(p, head, true) {
			return fault.New(fault.NotFound, "record not found")
		}
		if head.Status == memory.Forgotten || head.Status == memory.Superseded {
			return fault.New(fault.Conflict, "a "+string(head.Status)+" record cannot be modified")
		}
		if _, ok := EventOf(head); ok {
			return fault.New(fault.Conflict, "session events are append-only: append a new event instead")
		}
		if !canChange(p, head) {
			return errNotOwner()
		}
		if head.Version != *req.ExpectedVersion {
			return fault.New(fault.VersionConflict, "record was modified: expected_version is not the current version").
				With("current_version", head.Version)
		}
		next := req.apply(head)
		next.Version = head.Version + 1
		next.UpdatedAt = now
		next.ModifiedBy = p.ID
		next.Gate = memory.GateInfo{DecisionID: decisionID, Decision: memory.DecisionAccepted, Origin: memory.OriginExternal}
		if req.Invalidate && next.InvalidatedAt == nil {
			next.InvalidatedAt = &now
		}
		if err := s.policy.CheckSchema(next); err != nil {
			return err
		}
		if err := s.policy.Authorize(p, next); err != nil {
			return err
		}
		if limit {
			if err := s.rateLimit(p); err != nil {
				return err
			}
		}
		// A gateway user editing its own chat turn is decided as the turn
		// was (pii.own_conversation).
		own := p.Kind == memory.KindUser && next.Type == memory.Episode && next.Scope.UserID == userOf(p) && head.Source.PrincipalID == p.ID
		out, err := s.decide(ctx, gate.Input{Principal: p, Record: next, OwnConversation: own})
		if err != nil {
			return err
		}
		switch out.Decision {
		case memory.DecisionQuarantined:
			next.Status, next.Access, next.Gate.Decision = memory.Quarantined, memory.Sensitive, memory.DecisionQuarantined
		case memory.DecisionFlagged:
			next.Status, next.Access, next.Gate.Decision = out.Status, out.Access, memory.DecisionFlagged
		}
		if err := tx.UpdateRecord(ctx, p.Workspace, next, head.Version); err != nil {
			return err
		}
		if err := fileChanged(ctx, tx, p.Workspace, next, "updated", now); err != nil {
			return err
		}
		known := map[string]memory.Node{}
		if err = s.linkEntities(ctx, tx, p, next, now, known); err != nil {
			return err
		}
		if err = regrantKnown(ctx, tx, p.Workspace, &head, next, known); err != nil {
			return err
		}
		payload := map[string]any{"decision": next.Gate.Decision, "reason": out.Reason, "record_id": id, "version": next.Version,
			"status": string(next.Status), "content_sha256": next.ContentSHA256}
		res = WriteResult{Decision: next.Gate.Decision, Reason: out.Reason, Record: next, Citation: next.Citation(), PIIKinds: out.PIIKinds}
		if out.ApprovalKind == memory.ApprovalQuarantine {
			a := memory.Approval{ID: memory.NewID(), Workspace: p.Workspace, RecordID: id, Kind: out.ApprovalKind, Reason: out.Reason,
				Status: memory.ApprovalOpen, CreatedAt: now, ExpiresAt: now.Add(s.policy.Approvals.TTL.D())}
			if err := insertApproval(ctx, tx, a); err != nil {
				return err
			}
			res.ApprovalID = a.ID
			payload["approval_id"] = a.ID
			payload["pii_kinds"] = out.PIIKinds
		}
		_, err = appendAudit(ctx, tx, p.Workspace, p, decisionID, "record.patch", now, payload)
		return err
	}()
	return res, err
}

// Forget erases one record's content, keeping a tombstone (SPEC §3).
// Operators may forget any record; agents only records they wrote, and
// only if they may write at all. The erasure goes through erase.go: the
// record's messages and the nodes only it named go with it, and the
// database files are scrubbed before Forget returns.
func (s *Service) Forget(ctx context.Context, p memory.Principal, id string) (memory.Record, error) {
	if p.Kind == memory.KindAgent && (p.Trust == memory.ReadOnly || p.Trust == memory.Restricted) {
		return memory.Record{}, fault.New(fault.PermissionDenied, "agents of trust "+string(p.Trust)+" may not forget records")
	}
	if !memory.ValidID(id) {
		return memory.Record{}, fault.New(fault.NotFound, "record not found")
	}
	now := s.clock()
	var out memory.Record
	forgot := false
	err := s.tx(ctx, "record", func(tx store.Tx) error {
		forgot = false
		head, err := tx.GetRecord(ctx, p.Workspace, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err // a store failure, not a missing record
		}
		if err != nil || !canRead(p, head, true) {
			return fault.New(fault.NotFound, "record not found")
		}
		if head.Status == memory.Forgotten { // idempotent; a tombstone no longer names its writer
			out = head
			// A rejected item's record is a tombstone already; forgetting
			// it still erases the operator's reason (DecisionReason).
			n, err := tx.EraseApprovalReasons(ctx, p.Workspace, store.ReasonErasure{RecordID: id})
			if err != nil || n == 0 {
				return err
			}
			forgot = true
			_, err = appendAudit(ctx, tx, p.Workspace, p, "", "record.forget", now, map[string]any{
				"record_id": id, "type": string(head.Type), "content_sha256": head.ContentSHA256, "reasons": n})
			return err
		}
		if !canChange(p, head) {
			return errNotOwner()
		}
		if err := closeApprovals(ctx, tx, p, id, memory.ApprovalRejected, now); err != nil {
			return err
		}
		if out, _, _, _, err = s.purgeIn(ctx, tx, p.Workspace, id, "", now); err != nil {
			return err
		}
		forgot = true
		if err := emit(ctx, tx, p.Workspace, events.ForgetCompleted, now, events.Subject{"scope": "record", "record_id": id}); err != nil {
			return err
		}
		if err := fileChanged(ctx, tx, p.Workspace, head, "forgotten", now); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, p.Workspace, p, "", "record.forget", now, map[string]any{
			"record_id": id, "type": string(head.Type), "content_sha256": head.ContentSHA256, "version": head.Version + 1})
		return err
	})
	if err != nil {
		return memory.Record{}, err
	}
	if !forgot {
		// Forgetting again finishes a scrub an earlier call could not.
		return out, s.scrub(ctx)
	}
	s.erased(ctx)
	return out, s.scrub(ctx)
}

// closeApprovals resolves every open approval item of a record.
func closeApprovals(ctx context.Context, tx store.Tx, by memory.Principal, recordID string, st memory.ApprovalStatus, now time.Time) error {
	after := ""
	for {
		items, err := tx.ListApprovals(ctx, by.Workspace, memory.ApprovalOpen, after, store.MaxLimit)
		if err != nil {
			return err
		}
		for _, a := range items {
			if a.RecordID != recordID {
				continue
			}
			a.Status, a.DecidedAt, a.DecidedBy = st, &now, by.ID
			if err := updateApproval(ctx, tx, a); err != nil {
				return err
			}
		}
		if len(items) < store.MaxLimit {
			return nil
		}
		after = items[len(items)-1].ID
	}
}
