package core

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// The event outbox (internal/events): each change that matters to people
// and integrations appends its event in its own transaction, so an event
// exists exactly when its change committed. Events name ids, kinds and
// counts, never content: erasing a record leaves nothing to erase here.

// insertApproval queues a in tx with its events: approval.pending, and
// record.quarantined or conflict.opened for those kinds of review.
func insertApproval(ctx context.Context, tx store.Tx, a memory.Approval) error {
	if err := tx.InsertApproval(ctx, a); err != nil {
		return err
	}
	subject := events.Subject{"approval_id": a.ID, "approval_kind": string(a.Kind), "record_id": a.RecordID}
	if err := events.Emit(ctx, tx, a.Workspace, events.ApprovalPending, a.CreatedAt, subject); err != nil {
		return err
	}
	switch a.Kind {
	case memory.ApprovalQuarantine:
		return events.Emit(ctx, tx, a.Workspace, events.RecordQuarantined, a.CreatedAt, subject)
	case memory.ApprovalConflict:
		return events.Emit(ctx, tx, a.Workspace, events.ConflictOpened, a.CreatedAt, subject)
	}
	return nil
}

// updateApproval records a's decision in tx with its approval.decided
// event.
func updateApproval(ctx context.Context, tx store.Tx, a memory.Approval) error {
	if err := tx.UpdateApproval(ctx, a); err != nil {
		return err
	}
	at := time.Time{}
	if a.DecidedAt != nil {
		at = *a.DecidedAt
	}
	return events.Emit(ctx, tx, a.Workspace, events.ApprovalDecided, at, events.Subject{
		"approval_id": a.ID, "approval_kind": string(a.Kind), "record_id": a.RecordID, "status": string(a.Status), "decided_by": a.DecidedBy})
}

// emit appends one event in tx.
func emit(ctx context.Context, tx store.Tx, ws, kind string, at time.Time, subject events.Subject) error {
	return events.Emit(ctx, tx, ws, kind, at, subject)
}

// fileCategory is the category of memory files (internal/files.Category,
// which imports core).
const fileCategory = "file"

// fileChanged appends memory_file.changed in tx when r is a memory file.
// change says what happened: created, updated, deleted or redacted.
func fileChanged(ctx context.Context, tx store.Tx, ws string, r memory.Record, change string, at time.Time) error {
	if r.Category != fileCategory || r.Type != memory.Resource {
		return nil
	}
	if change == "updated" && r.InvalidatedAt != nil {
		change = "deleted"
	}
	return emit(ctx, tx, ws, events.MemoryFileChanged, at, events.Subject{"file_id": r.ID, "version": r.Version, "change": change})
}

// reportBroken appends audit.broken for a chain found broken at be, once
// per break: the setting it writes in the same transaction remembers the
// break reported, so periodic checks (and other replicas) do not repeat it.
func (s *Service) reportBroken(ctx context.Context, ws string, be *audit.BrokenError) error {
	key := "events.audit_broken." + ws
	mark := strconv.FormatInt(be.Seq, 10) + "/" + be.ID
	return s.store.Tx(ctx, func(tx store.Tx) error {
		if last, err := tx.GetSetting(ctx, key); err == nil && last == mark {
			return nil
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.PutSetting(ctx, key, mark); err != nil {
			return err
		}
		return emit(ctx, tx, ws, events.AuditBroken, s.clock(), events.Subject{"seq": be.Seq, "entry_id": be.ID, "reason": be.Reason})
	})
}
