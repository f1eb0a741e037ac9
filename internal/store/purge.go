package store

import (
	"context"
	"time"

	"github.com/memgate/memgate/internal/memory"
)

// Purging is what a backend's transaction gives Purge: driver-specific
// primitives that hold no rule of erasure. What a tombstone keeps is
// memory.Record.Tombstone's, and the order of the steps is Purge's, the
// same on every backend.
type Purging interface {
	// LockHead returns the head of a record, locked against concurrent
	// writers until the transaction ends.
	LockHead(ctx context.Context, ws, id string) (memory.Record, error)
	// ListVersions is Reader's: every version, oldest first.
	ListVersions(ctx context.Context, ws, id string) ([]memory.Record, error)
	// DropDerived deletes what was computed from the record's content:
	// its vectors and the cached embeddings of every version's content.
	DropDerived(ctx context.Context, ws, id string) error
	// OverwriteVersion replaces the stored version v.Version of v.ID by v,
	// in place.
	OverwriteVersion(ctx context.Context, ws string, v *memory.Record) error
	// AppendVersion writes r as the new head over prev (conditional on
	// prev.Version still being the head) and as a new version row,
	// appending the change-log entry; entities move from prev's to r's.
	AppendVersion(ctx context.Context, ws string, r *memory.Record, prev memory.Record) error
}

// Purge is Tx.PurgeRecord for every backend: derived data first (it is
// found through the content hashes the versions still hold), then every
// stored version becomes its own tombstone (keeping its version number
// and timestamps), then the tombstone of the head is written as a new
// version.
func Purge(ctx context.Context, t Purging, ws, id string, at time.Time) error {
	head, err := t.LockHead(ctx, ws, id)
	if err != nil {
		return err
	}
	if err := t.DropDerived(ctx, ws, id); err != nil {
		return err
	}
	versions, err := t.ListVersions(ctx, ws, id)
	if err != nil {
		return err
	}
	for i := range versions {
		v := versions[i].Tombstone(versions[i].UpdatedAt)
		if err := t.OverwriteVersion(ctx, ws, &v); err != nil {
			return err
		}
	}
	tomb := head.Tombstone(at)
	tomb.Version = head.Version + 1
	return t.AppendVersion(ctx, ws, &tomb, head)
}
