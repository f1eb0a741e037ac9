package core

import (
	"context"
	"errors"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// RedactVersion erases the content of one past version of a record (a
// memory file's old text, say), for good: the version keeps its number,
// times and content hash as a tombstone, so history and the audit chain
// still verify, and the bytes are scrubbed from the database files
// (store.Scrub). The current version cannot be redacted: write a new one
// (or delete the record) first. Operators may redact any record; agents
// and users only records they wrote, as for forgetting. Redacting a
// redacted version again changes nothing.
func (s *Service) RedactVersion(ctx context.Context, p memory.Principal, id string, version int) (memory.Record, error) {
	if p.Kind == memory.KindAgent && (p.Trust == memory.ReadOnly || p.Trust == memory.Restricted) {
		return memory.Record{}, fault.New(fault.PermissionDenied, "agents of trust "+string(p.Trust)+" may not redact records")
	}
	if !memory.ValidID(id) {
		return memory.Record{}, fault.New(fault.NotFound, "record not found")
	}
	if version < 1 {
		return memory.Record{}, fault.Field("version", "must be a positive integer")
	}
	now := s.clock()
	var out memory.Record
	changed := false
	err := s.tx(ctx, "record", func(tx store.Tx) error {
		head, err := tx.GetRecord(ctx, p.Workspace, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err != nil || !canRead(p, head, true) {
			return fault.New(fault.NotFound, "record not found")
		}
		if head.Status != memory.Forgotten && !canChange(p, head) {
			return errNotOwner()
		}
		v, err := tx.GetRecordVersion(ctx, p.Workspace, id, version)
		if errors.Is(err, store.ErrNotFound) {
			return fault.New(fault.NotFound, "record version not found")
		}
		if err != nil {
			return err
		}
		if version == head.Version {
			return fault.New(fault.Conflict, "the current version cannot be redacted: write a new version or delete it first").With("field", "version")
		}
		if v.Status == memory.Forgotten && v.Content == "" {
			out = v
			return nil
		}
		if err := tx.RedactVersion(ctx, p.Workspace, id, version); err != nil {
			return err
		}
		if err := fileChanged(ctx, tx, p.Workspace, head, "redacted", now); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, p.Workspace, p, "", "record.redact", now, map[string]any{
			"record_id": id, "version": version, "content_sha256": v.ContentSHA256})
		if err != nil {
			return err
		}
		changed = true
		out, err = tx.GetRecordVersion(ctx, p.Workspace, id, version)
		return err
	})
	if err != nil {
		return memory.Record{}, err
	}
	if changed {
		// Old pages and the write-ahead log still hold the text until
		// scrubbed, and a search index snapshot written earlier may too:
		// the erasure owner (erase.go) makes it physical, as for a forget.
		s.erasure.commit()
		if err := s.scrub(ctx); err != nil {
			return out, err
		}
	}
	return out, nil
}
