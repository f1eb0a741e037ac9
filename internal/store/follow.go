package store

import (
	"context"

	"github.com/memgate/memgate/internal/memory"
)

// FollowReader is what a Follower reads: a scan of every record head once,
// then the change log every process writing the database appends to.
type FollowReader interface {
	ChangeHead(ctx context.Context) (int64, error)
	ScanRecords(ctx context.Context, fn func(ws string, r memory.Record) error) error
	ListChanges(ctx context.Context, after int64, limit int) ([]Change, error)
	GetRecords(ctx context.Context, ws string, ids []string) (map[string]memory.Record, error)
}

// FollowIndex is a derived, in-process index over record heads (the memory
// files' path index, the knowledge resource index): Reset empties it,
// Index records a head's current state, Unindex drops a record that is
// gone.
type FollowIndex struct {
	Reset   func()
	Index   func(ws string, r memory.Record)
	Unindex func(ws, id string)
}

// Follower keeps a FollowIndex up to the change log: one mechanism for
// every such index, so each is fed in one direction only (it pulls; no
// writer pushes into it). It is not safe for concurrent use: its owner
// syncs under the lock that guards the index.
type Follower struct {
	seq   int64 // change log position the index reflects
	built bool
}

// followPage is how many changes one ListChanges call reads.
const followPage = 1000

// Invalidate makes the next Sync rebuild the index from a scan.
func (f *Follower) Invalidate() { f.built = false }

// Sync brings ix up to the change log: a full scan the first time (or
// after Invalidate), then the changes since, a page at a time with one
// batched read of the changed heads per workspace.
func (f *Follower) Sync(ctx context.Context, st FollowReader, ix FollowIndex) error {
	if !f.built {
		head, err := st.ChangeHead(ctx)
		if err != nil {
			return err
		}
		ix.Reset()
		if err := st.ScanRecords(ctx, func(ws string, r memory.Record) error {
			ix.Index(ws, r)
			return nil
		}); err != nil {
			return err
		}
		f.seq, f.built = head, true
	}
	for {
		chs, err := st.ListChanges(ctx, f.seq, followPage)
		if err != nil {
			return err
		}
		ids := map[string][]string{}
		for _, c := range chs {
			ids[c.Workspace] = append(ids[c.Workspace], c.RecordID)
		}
		heads := make(map[string]map[string]memory.Record, len(ids))
		for ws, list := range ids {
			got, err := st.GetRecords(ctx, ws, list)
			if err != nil {
				return err
			}
			heads[ws] = got
		}
		for _, c := range chs {
			if r, ok := heads[c.Workspace][c.RecordID]; ok {
				ix.Index(c.Workspace, r)
			} else {
				ix.Unindex(c.Workspace, c.RecordID)
			}
			f.seq = c.Seq
		}
		if len(chs) < followPage {
			return nil
		}
	}
}

// ChangeSequencer is implemented by a Tx whose change-log rows have their
// final seq the moment they are written (SQLite: one writer, so a row's
// seq is fixed unless its transaction rolls back). A process that wrote a
// record can then tell, once the transaction has committed, which change
// of the log its own copy of the record is; it follows the log with that
// copy instead of reading the record back (core/follow.go). PostgreSQL
// assigns seqs at commit and does not implement it.
type ChangeSequencer interface {
	// LastWrite returns the record head this transaction wrote last, as
	// a read of it returns it, and the seq of the change-log row that
	// write made; ok is false when the last change-log row this
	// transaction wrote was not a record insert's.
	LastWrite() (seq int64, r memory.Record, ok bool)
}
