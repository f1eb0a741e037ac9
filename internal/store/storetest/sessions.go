package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// testApprovalReasons: a decision reason and its subjects round-trip,
// and EraseApprovalReasons blanks exactly the reasons of a record or of
// a subject, in its workspace only.
func testApprovalReasons(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	r1, r2, r3 := NewRecord("one"), NewRecord("two"), NewRecord("three")
	mustInsert(t, s, "a", r1, r2, r3)
	rb := NewRecord("in b")
	mustInsert(t, s, "b", rb)
	bob, carol := memory.SHA256Hex("person:bob"), memory.SHA256Hex("person:carol")
	decide := func(ws, rec, reason string, subjects ...string) memory.Approval {
		a := newApproval(ws, rec, T0)
		mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertApproval(ctx, a) })
		a.Status, a.DecidedAt, a.DecidedBy = memory.ApprovalRejected, ptr(T0.Add(time.Hour)), "op"
		a.DecisionReason, a.ReasonSubjects = reason, subjects
		mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.UpdateApproval(ctx, a) })
		return a
	}
	byRecord := decide("a", r1.ID, "quotes a password")
	bySubject := decide("a", r2.ID, "about bob, 'quoted' 100% _x_", bob, carol)
	other := decide("a", r3.ID, "about carol", carol)
	inB := decide("b", rb.ID, "about bob in b", bob)
	reread := func(a memory.Approval) memory.Approval {
		t.Helper()
		got, err := s.GetApproval(ctx, a.Workspace, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	assertApprovals(t, "decided with a reason", []memory.Approval{reread(bySubject)}, bySubject)

	erase := func(ws string, e store.ReasonErasure) int {
		t.Helper()
		var n int
		mustTx(t, s, func(ctx context.Context, tx store.Tx) (err error) {
			n, err = tx.EraseApprovalReasons(ctx, ws, e)
			return err
		})
		return n
	}
	blank := func(a memory.Approval) memory.Approval { a.DecisionReason, a.ReasonSubjects = "", nil; return a }
	if n := erase("a", store.ReasonErasure{}); n != 0 {
		t.Fatalf("an empty selection erased %d reasons", n)
	}
	if n := erase("a", store.ReasonErasure{RecordID: r1.ID}); n != 1 {
		t.Fatalf("erasing record %s's reasons blanked %d, want 1", r1.ID, n)
	}
	assertApprovals(t, "by record", []memory.Approval{reread(byRecord), reread(bySubject)}, blank(byRecord), bySubject)
	if n := erase("a", store.ReasonErasure{SubjectSHA256: bob}); n != 1 {
		t.Fatalf("erasing bob's reasons in a blanked %d, want 1", n)
	}
	assertApprovals(t, "by subject", []memory.Approval{reread(bySubject), reread(other), reread(inB)}, blank(bySubject), other, inB)
	if n := erase("a", store.ReasonErasure{SubjectSHA256: bob}); n != 0 {
		t.Fatalf("erasing again blanked %d", n)
	}
	// The prefix of a hash matches nothing.
	if n := erase("a", store.ReasonErasure{SubjectSHA256: carol[:20]}); n != 0 {
		t.Fatalf("a hash prefix blanked %d", n)
	}
}

// testSessions: console sessions round-trip by id hash, are deleted one
// by one and by expiry.
func testSessions(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	mk := func(hash string, expires time.Time) store.Session {
		return store.Session{IDHash: hash, Workspace: "a", PrincipalID: memory.NewID(), CSRF: "csrf-" + hash, CreatedAt: T0, ExpiresAt: expires}
	}
	live, soon, gone := mk("h-live", T0.Add(8*time.Hour)), mk("h-soon", T0.Add(time.Hour)), mk("h-gone", T0.Add(time.Minute))
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, x := range []store.Session{live, soon, gone} {
			if err := tx.InsertSession(ctx, x); err != nil {
				return err
			}
		}
		return nil
	})
	got, err := s.GetSession(ctx, live.IDHash)
	want := live
	want.CreatedAt, want.ExpiresAt = memory.Canon(want.CreatedAt), memory.Canon(want.ExpiresAt)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("GetSession = %+v, %v; want %+v", got, err, want)
	}
	_, err = s.GetSession(ctx, "h-missing")
	assertNotFound(t, "GetSession(missing)", err)
	err = s.Tx(ctx, func(tx store.Tx) error { return tx.InsertSession(ctx, live) })
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("inserting a session twice: %v, want ErrExists", err)
	}
	if err := s.Tx(ctx, func(tx store.Tx) error {
		return tx.InsertSession(ctx, store.Session{IDHash: "h-x", Workspace: "nope", CreatedAt: T0, ExpiresAt: T0})
	}); err == nil {
		t.Fatal("a session of a missing workspace was stored")
	}
	var n int
	mustTx(t, s, func(ctx context.Context, tx store.Tx) (err error) {
		n, err = tx.DeleteExpiredSessions(ctx, T0.Add(time.Hour))
		return err
	})
	if n != 2 {
		t.Fatalf("DeleteExpiredSessions at the second one's expiry removed %d, want 2 (expiry is inclusive)", n)
	}
	for _, h := range []string{soon.IDHash, gone.IDHash} {
		_, err = s.GetSession(ctx, h)
		assertNotFound(t, "expired session", err)
	}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.DeleteSession(ctx, live.IDHash) })
	_, err = s.GetSession(ctx, live.IDHash)
	assertNotFound(t, "deleted session", err)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.DeleteSession(ctx, live.IDHash) })
}
