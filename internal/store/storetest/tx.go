package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// writeEverything writes one row of each kind into ws and returns the
// record and principal it wrote.
func writeEverything(ctx context.Context, tx store.Tx, ws string) (memory.Record, memory.Principal, error) {
	r := NewRecord("written in a transaction", func(r *memory.Record) { r.Entities = []string{"person:alice"} })
	p := newPrincipal(ws, "rolled-back", memory.KindAgent)
	if err := tx.InsertRecord(ctx, ws, r); err != nil {
		return r, p, err
	}
	next := NextVersion(r, r.UpdatedAt, func(r *memory.Record) { r.Content = "second version" })
	if err := tx.UpdateRecord(ctx, ws, next, 1); err != nil {
		return r, p, err
	}
	if err := tx.InsertPrincipal(ctx, p); err != nil {
		return r, p, err
	}
	if err := tx.InsertApproval(ctx, newApproval(ws, r.ID, T0)); err != nil {
		return r, p, err
	}
	if _, err := tx.AppendAudit(ctx, ws, NewAuditEntry("record.write", `{}`)); err != nil {
		return r, p, err
	}
	return r, p, nil
}

// assertNothingWritten checks that nothing writeEverything wrote is
// visible.
func assertNothingWritten(t *testing.T, s store.Store, ws string, r memory.Record, p memory.Principal) {
	t.Helper()
	ctx := t.Context()
	_, err := s.GetRecord(ctx, ws, r.ID)
	assertNotFound(t, "GetRecord after rollback", err)
	_, err = s.ListVersions(ctx, ws, r.ID)
	assertNotFound(t, "ListVersions after rollback", err)
	_, err = s.GetPrincipal(ctx, store.PrincipalFind{Workspace: ws, ID: p.ID})
	assertNotFound(t, "GetPrincipal after rollback", err)
	assertIDs(t, "ListRecords after rollback", list(t, s, ws, store.RecordQuery{Access: allAccess, Statuses: memory.Statuses}))
	assertIDs(t, "entity after rollback", list(t, s, ws, store.RecordQuery{Access: allAccess, Entity: "person:alice"}))
	if es := listAudit(t, s, ws, 0, 10); len(es) != 0 {
		t.Fatalf("ListAudit after rollback: %d entries", len(es))
	}
	if as, err := s.ListApprovals(ctx, ws, "", "", 10); err != nil || len(as) != 0 {
		t.Fatalf("ListApprovals after rollback: %d items, err %v", len(as), err)
	}
	// The audit chain head did not move: the next entry is seq 1.
	e := mustAppend(t, s, ws, NewAuditEntry("after", `{}`))
	if e.Seq != 1 {
		t.Fatalf("first entry after rollback has seq %d", e.Seq)
	}
}

func testTxRollback(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	boom := errors.New("boom")
	var (
		r memory.Record
		p memory.Principal
	)
	err := s.Tx(ctx, func(tx store.Tx) error {
		var err error
		r, p, err = writeEverything(ctx, tx, "a")
		if err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx returned %v, want the callback's error", err)
	}
	assertNothingWritten(t, s, "a", r, p)
}

func testTxPanic(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	var (
		r memory.Record
		p memory.Principal
	)
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Fatalf("recovered %v, want the callback's panic", v)
			}
		}()
		_ = s.Tx(ctx, func(tx store.Tx) error {
			var err error
			r, p, err = writeEverything(ctx, tx, "a")
			if err != nil {
				t.Errorf("write: %v", err)
			}
			panic("boom")
		})
	}()
	assertNothingWritten(t, s, "a", r, p)
	// The store is still usable.
	mustInsert(t, s, "a", NewRecord("after the panic"))
}

func testTxCanceled(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := NewRecord("never written")
	err := s.Tx(ctx, func(tx store.Tx) error { return tx.InsertRecord(ctx, "a", r) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Tx with a canceled context returned %v, want context.Canceled", err)
	}
	_, err = s.GetRecord(t.Context(), "a", r.ID)
	assertNotFound(t, "GetRecord", err)
}

func testTxIsolation(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	r := NewRecord("not yet committed")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.InsertRecord(ctx, "a", r); err != nil {
			return err
		}
		if _, err := tx.GetRecord(ctx, "a", r.ID); err != nil {
			return err
		}
		// Reads outside the transaction see committed data only.
		_, err := s.GetRecord(ctx, "a", r.ID)
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("uncommitted record visible outside its transaction (err %v)", err)
		}
		return nil
	})
	assertRecord(t, "after commit", mustGet(t, s, "a", r.ID), r)
}
