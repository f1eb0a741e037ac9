package cli

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
)

// The search index snapshot (index.snapshot in the data directory) is
// derived data that holds the words of the records it indexed. Erasure
// must not leave them there, whichever process erases:
//
//   - every erasure, in any process, deletes the file (and temporary
//     files a crashed save left) after its commit: invalidateSnapshot,
//     core.Options.OnErased;
//   - serve, the only writer, publishes a new file only if no record was
//     forgotten after the change-log position the file reflects
//     (saveSnapshotChecked); else it skips, catches up and saves again.
//
// Both hold an exclusive lock on index.snapshot.lock, so a save in one
// process cannot check before another's erasure commits and rename after
// that erasure deleted the file: either the save's check sees the
// erasure, or the erasure's delete comes after the rename.

// errSnapshotStale: the save was skipped because a record was forgotten
// after the state it would have written.
var errSnapshotStale = core.ErrSnapshotStale

func snapshotLock(path string) string { return path + ".lock" }

// invalidateSnapshot deletes the snapshot at path and any temporary file
// of an interrupted save. Under the lock no save is in progress, so every
// temporary file is stale.
func invalidateSnapshot(path string, log *slog.Logger) {
	unlock, err := lockFile(snapshotLock(path))
	if err != nil {
		log.Warn("cannot lock the search index snapshot; deleting it unlocked", "path", path, "err", err)
	} else {
		defer unlock()
	}
	dir, base := filepath.Split(path)
	temps, _ := filepath.Glob(filepath.Join(dir, "."+base+".*.tmp"))
	for _, p := range append(temps, path) {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("cannot delete the search index snapshot after an erasure", "path", p, "err", err)
		}
	}
}

// saveSnapshotChecked saves ix to path under the lock, unless a record
// was forgotten after the position the snapshot reflects
// (errSnapshotStale).
func saveSnapshotChecked(ix *retrieve.Engine, st store.Reader, path string) error {
	unlock, err := lockFile(snapshotLock(path))
	if err != nil {
		return err
	}
	defer unlock()
	return ix.SaveSnapshotIf(path, func(seq int64) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		forgot, err := forgottenSince(ctx, st, seq)
		if err == nil && forgot {
			err = errSnapshotStale
		}
		return err
	})
}

// forgottenSince reports whether a record changed after change seq is now
// forgotten.
func forgottenSince(ctx context.Context, st store.Reader, seq int64) (bool, error) {
	const page = 500
	for {
		cs, err := st.ListChanges(ctx, seq, page)
		if err != nil {
			return false, err
		}
		for _, c := range cs {
			r, err := st.GetRecord(ctx, c.Workspace, c.RecordID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return false, err
			}
			if err == nil && r.Status == memory.Forgotten {
				return true, nil
			}
		}
		if len(cs) < page {
			return false, nil
		}
		seq = cs[len(cs)-1].Seq
	}
}
