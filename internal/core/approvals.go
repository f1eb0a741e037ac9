package core

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// ApprovalItem is a queue item with the record it concerns.
type ApprovalItem struct {
	memory.Approval
	Record memory.Record `json:"record"`
	// ConflictsWith is, for a conflict item, the record Record
	// contradicts (the other side, with its provenance). Approving keeps
	// Record and supersedes it.
	ConflictsWith *memory.Record `json:"conflicts_with,omitempty"`
	// PII is where the PII screen finds personal data in Record's
	// content now, for a reviewer to see (kinds and offsets, never the
	// text itself).
	PII []PIISpan `json:"pii,omitempty"`
}

// ApprovalPage is one page of the approval queue.
type ApprovalPage struct {
	Items      []ApprovalItem `json:"items"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// ListApprovals pages through the queue, oldest first. status "" means
// pending.
func (s *Service) ListApprovals(ctx context.Context, by memory.Principal, status memory.ApprovalStatus, cursor string, limit int) (ApprovalPage, error) {
	if err := requireOperator(by); err != nil {
		return ApprovalPage{}, err
	}
	switch status {
	case "":
		status = memory.ApprovalOpen
	case memory.ApprovalOpen, memory.ApprovalApproved, memory.ApprovalRejected, memory.ApprovalExpired:
	default:
		return ApprovalPage{}, fault.Field("status", "must be one of pending, approved, rejected, expired")
	}
	if cursor != "" && !memory.ValidID(cursor) {
		return ApprovalPage{}, fault.Field("cursor", "is not a cursor returned by this API")
	}
	if limit == 0 {
		limit = store.DefaultLimit
	}
	if limit < 0 || limit > store.MaxLimit {
		return ApprovalPage{}, fault.Field("limit", "must be between 1 and 500")
	}
	as, err := s.store.ListApprovals(ctx, by.Workspace, status, cursor, limit+1)
	if err != nil {
		return ApprovalPage{}, storeErr(err, "approvals")
	}
	page := ApprovalPage{Items: []ApprovalItem{}}
	if len(as) > limit {
		as = as[:limit]
		page.NextCursor = as[limit-1].ID
	}
	for _, a := range as {
		r, err := s.store.GetRecord(ctx, by.Workspace, a.RecordID)
		if err != nil {
			return ApprovalPage{}, storeErr(err, "record")
		}
		it := ApprovalItem{Approval: a, Record: r, PII: s.piiSpans(r.Content)}
		if a.Kind == memory.ApprovalConflict && r.Supersedes != nil {
			o, err := s.store.GetRecord(ctx, by.Workspace, *r.Supersedes)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return ApprovalPage{}, storeErr(err, "record")
			}
			if err == nil {
				it.ConflictsWith = &o
			}
		}
		page.Items = append(page.Items, it)
	}
	return page, nil
}

// ApprovalEdit is an operator's edit applied before approving.
type ApprovalEdit struct {
	Content        *string        `json:"content,omitempty"`
	Category       *string        `json:"category,omitempty"`
	Entities       *[]string      `json:"entities,omitempty"`
	Access         *memory.Access `json:"access,omitempty"`
	Classification *string        `json:"classification,omitempty"`
}

// Approve promotes a queued record to active, optionally editing it first.
// An edit is screened again: if it still carries PII the record stays at
// access sensitive, since the operator approved the content, not a leak.
func (s *Service) Approve(ctx context.Context, by memory.Principal, id string, edit *ApprovalEdit) (ApprovalItem, error) {
	if err := requireOperator(by); err != nil {
		return ApprovalItem{}, err
	}
	now := s.clock()
	var out ApprovalItem
	err := s.tx(ctx, "approval", func(tx store.Tx) error {
		a, rec, err := openItem(ctx, tx, by.Workspace, id)
		if err != nil {
			return err
		}
		next := rec
		edited := false
		if edit != nil {
			pr := PatchRequest{Content: edit.Content, Category: edit.Category, Entities: edit.Entities, Access: edit.Access, Classification: edit.Classification}
			edited = !pr.empty()
			next = pr.apply(rec)
			if err := s.policy.CheckSchema(next); err != nil {
				return err
			}
		}
		if edited && s.policy.PII.Enabled && len(gate.Screen(next.Content, s.policy.PII.Kinds)) > 0 {
			next.Access = memory.Sensitive
		}
		decisionID := memory.NewID()
		next.Version = rec.Version + 1
		next.Status = memory.Active
		next.Gate = memory.GateInfo{DecisionID: decisionID, Decision: memory.DecisionAccepted, Origin: rec.Gate.Origin}
		next.UpdatedAt = now
		next.ModifiedBy = by.ID
		var target *memory.Record
		if next.Supersedes != nil {
			t, err := tx.GetRecord(ctx, by.Workspace, *next.Supersedes)
			if err == nil && t.Status == memory.Active {
				target = &t
				next.ValidFrom = successorValidFrom(t, next, now)
			} else if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if err := tx.UpdateRecord(ctx, by.Workspace, next, rec.Version); err != nil {
			return err
		}
		if err = s.linkEntities(ctx, tx, by, next, now, nil); err != nil {
			return err
		}
		if err = regrant(ctx, tx, by.Workspace, &rec, next); err != nil {
			return err
		}
		if target != nil {
			if err := supersede(ctx, tx, by.Workspace, by, *target, next, now); err != nil {
				return err
			}
		}
		a.Status, a.DecidedAt, a.DecidedBy = memory.ApprovalApproved, &now, by.ID
		if err := updateApproval(ctx, tx, a); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, by.Workspace, by, decisionID, "approval.approve", now, map[string]any{
			"approval_id": a.ID, "record_id": rec.ID, "version": next.Version, "edited": edited,
			"decision": memory.DecisionAccepted, "content_sha256": next.ContentSHA256, "access": string(next.Access)})
		out = ApprovalItem{Approval: a, Record: next}
		return err
	})
	if err == nil {
		s.countDecision(memory.DecisionAccepted, "approved")
		s.logMoved(ctx)
	}
	return out, err
}

// Reject discards a queued record: its content is erased (a tombstone is
// kept) since it was never admitted, and it may carry PII.
func (s *Service) Reject(ctx context.Context, by memory.Principal, id, reason string) (ApprovalItem, error) {
	if err := requireOperator(by); err != nil {
		return ApprovalItem{}, err
	}
	if len(reason) > 256 {
		return ApprovalItem{}, fault.Field("reason", "at most 256 bytes")
	}
	it, err := s.discard(ctx, by, id, memory.ApprovalRejected, "approval.reject", reason)
	if err != nil {
		return it, err
	}
	return it, s.scrub(ctx)
}

// discard erases a queued item's record (erase.go) and closes the item.
// The caller scrubs: expiry scrubs once for a batch.
func (s *Service) discard(ctx context.Context, by memory.Principal, id string, st memory.ApprovalStatus, event, reason string) (ApprovalItem, error) {
	now := s.clock()
	var out ApprovalItem
	err := s.tx(ctx, "approval", func(tx store.Tx) error {
		a, rec, err := openItem(ctx, tx, by.Workspace, id)
		if err != nil {
			return err
		}
		a.Status, a.DecidedAt, a.DecidedBy = st, &now, by.ID
		if err := updateApproval(ctx, tx, a); err != nil {
			return err
		}
		if reason != "" {
			a.DecisionReason, a.ReasonSubjects = reason, reasonSubjects(rec)
		}
		if a.Kind == memory.ApprovalConflict && rec.Status == memory.Active {
			// A conflict the maintenance sweep found between two admitted
			// records: rejecting it invalidates the newer side (the older
			// stands); letting it expire leaves both standing. Neither
			// erases: the record was admitted, not queued.
			var err error
			out, err = s.settleSweptConflict(ctx, tx, by, a, rec, st == memory.ApprovalRejected, event, reason, now)
			return err
		}
		tomb, _, _, _, err := s.purgeIn(ctx, tx, by.Workspace, rec.ID, "", now)
		if err != nil {
			return err
		}
		if reason != "" {
			// After the purge, which erases the reasons of the record's
			// items: this one is written about the erasure itself.
			if err := tx.UpdateApproval(ctx, a); err != nil {
				return err
			}
		}
		payload := map[string]any{"approval_id": a.ID, "record_id": rec.ID, "decision": memory.DecisionRejected,
			"content_sha256": rec.ContentSHA256}
		if reason != "" {
			payload["reason_sha256"] = memory.SHA256Hex(reason) // operator free text could quote the content
		}
		if _, err := appendAudit(ctx, tx, by.Workspace, by, "", event, now, payload); err != nil {
			return err
		}
		out = ApprovalItem{Approval: a, Record: tomb}
		return nil
	})
	if err == nil {
		s.countDecision(memory.DecisionRejected, string(st))
		s.erased(ctx)
	}
	return out, err
}

// settleSweptConflict closes a conflict item on an active record.
func (s *Service) settleSweptConflict(ctx context.Context, tx store.Tx, by memory.Principal, a memory.Approval, rec memory.Record,
	invalidate bool, event, reason string, now time.Time) (ApprovalItem, error) {
	// The record no longer claims to replace the other side.
	next := rec
	next.Version, next.UpdatedAt, next.ModifiedBy, next.Supersedes = rec.Version+1, now, by.ID, nil
	if invalidate {
		next.InvalidatedAt = &now
	}
	if err := tx.UpdateRecord(ctx, by.Workspace, next, rec.Version); err != nil {
		return ApprovalItem{}, err
	}
	if reason != "" {
		if err := tx.UpdateApproval(ctx, a); err != nil {
			return ApprovalItem{}, err
		}
	}
	payload := map[string]any{"approval_id": a.ID, "record_id": rec.ID, "decision": memory.DecisionRejected,
		"content_sha256": rec.ContentSHA256, "invalidated": invalidate}
	if reason != "" {
		payload["reason_sha256"] = memory.SHA256Hex(reason)
	}
	if _, err := appendAudit(ctx, tx, by.Workspace, by, "", event, now, payload); err != nil {
		return ApprovalItem{}, err
	}
	return ApprovalItem{Approval: a, Record: next}, nil
}

// reasonSubjects is what a decision reason about rec is erased with
// besides rec itself: the sha256 of every subject rec names, as an
// entity or as its scope (subjectScope), so forget_subject finds the
// reason once rec is a tombstone that names nothing.
func reasonSubjects(rec memory.Record) []string {
	keys := slices.Clone(rec.Entities)
	for label, id := range map[string]string{"user": rec.Scope.UserID, "agent": rec.Scope.AgentID,
		"project": rec.Scope.ProjectID, "session": rec.Scope.SessionID} {
		if id != "" {
			keys = append(keys, label+":"+id)
		}
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		if h := memory.SHA256Hex(k); !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

func openItem(ctx context.Context, tx store.Tx, ws, id string) (memory.Approval, memory.Record, error) {
	if !memory.ValidID(id) {
		return memory.Approval{}, memory.Record{}, fault.New(fault.NotFound, "approval not found")
	}
	a, err := tx.GetApproval(ctx, ws, id)
	if err != nil {
		return a, memory.Record{}, storeErr(err, "approval")
	}
	if a.Status != memory.ApprovalOpen {
		return a, memory.Record{}, fault.New(fault.Conflict, "approval was already decided: "+string(a.Status))
	}
	rec, err := tx.GetRecord(ctx, ws, a.RecordID)
	return a, rec, storeErr(err, "record")
}

// ExpireApprovals rejects every pending item whose TTL has passed and
// returns how many it expired. It is the body of the expiry job and can be
// run once from the CLI. The erased records' files are scrubbed once, at
// the end.
func (s *Service) ExpireApprovals(ctx context.Context) (n int, err error) {
	defer func() {
		if n > 0 {
			if serr := s.scrub(ctx); err == nil {
				err = serr
			}
		}
	}()
	for {
		items, err := s.store.ListExpiredApprovals(ctx, s.clock(), 100)
		if err != nil {
			return n, storeErr(err, "approvals")
		}
		if len(items) == 0 {
			return n, nil
		}
		before := n
		for _, a := range items {
			_, err := s.discard(ctx, systemPrincipal(a.Workspace), a.ID, memory.ApprovalExpired, "approval.expire", "")
			if fault.Is(err, fault.Conflict) || fault.Is(err, fault.NotFound) {
				continue // decided meanwhile by an operator
			}
			if err != nil {
				return n, err
			}
			n++
			if s.metrics != nil {
				s.metrics.ApprovalsExpire.Inc()
			}
		}
		if len(items) < 100 || n == before {
			return n, nil
		}
	}
}

// RunExpiry runs ExpireApprovals every interval until ctx ends.
func (s *Service) RunExpiry(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if n, err := s.ExpireApprovals(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("approval expiry failed", "err", err)
		} else if n > 0 {
			s.log.Info("approvals expired", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
