package storetest

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// A store whose transactions tell their last record write
// (store.ChangeSequencer) tells it exactly: the record is what a read
// returns after commit, and the seq is its change log entry's. The
// search index's catch-up uses that record instead of reading it
// (core/follow.go), so any difference would be a difference in what is
// indexed. Stores that do not implement it skip.
func testLastWrite(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	head, err := s.ChangeHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	full := fullRecord("the records a transaction writes are what it reads back")
	full.CreatedAt = full.CreatedAt.Add(999 * time.Nanosecond)
	full.Metadata = []byte(`{ "b" : [1, 2],  "a": "x" }`)
	minimal := NewRecord("a minimal record", func(r *memory.Record) {
		r.Metadata, r.Entities, r.Source.Evidence = nil, nil, nil
	})
	local := NewRecord("a record in local time", func(r *memory.Record) {
		loc := time.FixedZone("X", 5*3600)
		r.CreatedAt, r.UpdatedAt, r.ValidFrom = T0.In(loc).Add(3*time.Nanosecond), T0.In(loc), ptr(T0.In(loc))
	})
	type written struct {
		seq int64
		r   memory.Record
	}
	var got []written
	implemented := true
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		cs, ok := tx.(store.ChangeSequencer)
		if !ok {
			implemented = false
			return nil
		}
		if _, _, ok := cs.LastWrite(); ok {
			return fmt.Errorf("LastWrite before any write: ok")
		}
		for _, r := range []memory.Record{full, minimal, local} {
			if err := tx.InsertRecord(ctx, "a", r); err != nil {
				return err
			}
			seq, w, ok := cs.LastWrite()
			if !ok || w.ID != r.ID {
				return fmt.Errorf("LastWrite after inserting %s: %s, ok %v", r.ID, w.ID, ok)
			}
			got = append(got, written{seq, w})
		}
		return nil
	})
	if !implemented {
		t.Skip("the store's transactions do not implement store.ChangeSequencer")
	}
	chs, err := s.ListChanges(ctx, head, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) != len(got) {
		t.Fatalf("%d changes logged, want %d", len(chs), len(got))
	}
	for i, w := range got {
		if chs[i].Seq != w.seq || chs[i].RecordID != w.r.ID {
			t.Fatalf("LastWrite of %s told seq %d; the log has %s at %d", w.r.ID, w.seq, chs[i].RecordID, chs[i].Seq)
		}
		read := mustGet(t, s, "a", w.r.ID)
		if !reflect.DeepEqual(w.r, read) {
			t.Fatalf("LastWrite's record differs from the read after commit:\nLastWrite %s\nread      %s", dump(w.r), dump(read))
		}
	}
}
