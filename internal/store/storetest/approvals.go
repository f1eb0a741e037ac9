package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// newApproval returns a pending approval for record in ws, created at
// created and expiring a day later.
func newApproval(ws, record string, created time.Time) memory.Approval {
	return memory.Approval{
		ID:        memory.NewID(),
		Workspace: ws,
		RecordID:  record,
		Kind:      memory.ApprovalPending,
		Reason:    "restricted agent",
		Status:    memory.ApprovalOpen,
		CreatedAt: created,
		ExpiresAt: created.Add(24 * time.Hour),
	}
}

func assertApprovals(t *testing.T, what string, got []memory.Approval, want ...memory.Approval) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d approvals, want %d\n got: %s\nwant: %s", what, len(got), len(want), dump(got), dump(want))
	}
	for i := range want {
		w := want[i]
		w.CreatedAt = memory.Canon(w.CreatedAt)
		w.ExpiresAt = memory.Canon(w.ExpiresAt)
		w.DecidedAt = memory.CanonPtr(w.DecidedAt)
		if w.ReasonSubjects == nil {
			w.ReasonSubjects = []string{}
		}
		if !reflect.DeepEqual(got[i], w) {
			t.Fatalf("%s: approval %d mismatch\n got: %s\nwant: %s", what, i, dump(got[i]), dump(w))
		}
	}
}

func testApprovals(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a", "b")
	rec := NewRecord("pending write", func(r *memory.Record) { r.Status = memory.Provisional })
	mustInsert(t, s, "a", rec)
	recB := NewRecord("pending in b", func(r *memory.Record) { r.Status = memory.Provisional })
	mustInsert(t, s, "b", recB)

	var items []memory.Approval
	for i := range 5 {
		a := newApproval("a", rec.ID, T0.Add(time.Duration(i)*time.Minute))
		if i == 3 {
			a.Kind = memory.ApprovalQuarantine
			a.Status = memory.ApprovalApproved
			a.DecidedAt = ptr(T0.Add(time.Hour))
			a.DecidedBy = "operator-1"
		}
		items = append(items, a)
	}
	inB := newApproval("b", recB.ID, T0)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, a := range append(items, inB) {
			if err := tx.InsertApproval(ctx, a); err != nil {
				return err
			}
		}
		return nil
	})
	testApprovalReads(t, s, items, inB)
	testUpdateApproval(t, s, items, inB)
	testCountOpenApprovals(t, s)
}

// listApprovalsA lists the approvals of workspace a, failing the test on
// an error.
func listApprovalsA(t *testing.T, s store.Store, status memory.ApprovalStatus, after string, limit int) []memory.Approval {
	t.Helper()
	out, err := s.ListApprovals(t.Context(), "a", status, after, limit)
	if err != nil {
		t.Fatalf("ListApprovals: %v", err)
	}
	return out
}

// testApprovalReads: GetApproval within its workspace, ListApprovals by
// status with paging. items are workspace a's (the fourth approved), inB
// workspace b's.
func testApprovalReads(t *testing.T, s store.Store, items []memory.Approval, inB memory.Approval) {
	ctx := t.Context()
	got, err := s.GetApproval(ctx, "a", items[3].ID)
	if err != nil {
		t.Fatalf("GetApproval: %v", err)
	}
	assertApprovals(t, "GetApproval", []memory.Approval{got}, items[3])
	_, err = s.GetApproval(ctx, "a", inB.ID)
	assertNotFound(t, "GetApproval(other workspace)", err)
	_, err = s.GetApproval(ctx, "a", memory.NewID())
	assertNotFound(t, "GetApproval(missing)", err)

	listA := func(status memory.ApprovalStatus, after string, limit int) []memory.Approval {
		t.Helper()
		return listApprovalsA(t, s, status, after, limit)
	}
	assertApprovals(t, "any status", listA("", "", 0), items...)
	pending := []memory.Approval{items[0], items[1], items[2], items[4]}
	assertApprovals(t, "pending", listA(memory.ApprovalOpen, "", 10), pending...)
	page1 := listA(memory.ApprovalOpen, "", 3)
	assertApprovals(t, "pending page 1", page1, pending[:3]...)
	page2 := listA(memory.ApprovalOpen, page1[2].ID, 3)
	assertApprovals(t, "pending page 2", page2, pending[3:]...)
	assertApprovals(t, "pending page 3", listA(memory.ApprovalOpen, page2[0].ID, 3))
	assertApprovals(t, "approved", listA(memory.ApprovalApproved, "", 10), items[3])
	assertApprovals(t, "rejected", listA(memory.ApprovalRejected, "", 10))
}

// testUpdateApproval: deciding an approval, within its workspace only.
func testUpdateApproval(t *testing.T, s store.Store, items []memory.Approval, inB memory.Approval) {
	ctx := t.Context()
	decided := items[1]
	decided.Status = memory.ApprovalRejected
	decided.DecidedAt = ptr(T0.Add(2 * time.Hour))
	decided.DecidedBy = "operator-2"
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.UpdateApproval(ctx, decided) })
	got, err := s.GetApproval(ctx, "a", decided.ID)
	if err != nil {
		t.Fatalf("GetApproval: %v", err)
	}
	assertApprovals(t, "after UpdateApproval", []memory.Approval{got}, decided)
	assertApprovals(t, "rejected after update", listApprovalsA(t, s, memory.ApprovalRejected, "", 10), decided)

	missing := decided
	missing.ID = memory.NewID()
	err = s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateApproval(ctx, missing) })
	assertNotFound(t, "UpdateApproval(missing)", err)
	wrongWS := inB
	wrongWS.Workspace = "a"
	wrongWS.Status = memory.ApprovalApproved
	err = s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateApproval(ctx, wrongWS) })
	assertNotFound(t, "UpdateApproval(other workspace)", err)
	got, err = s.GetApproval(ctx, "b", inB.ID)
	if err != nil {
		t.Fatalf("GetApproval: %v", err)
	}
	assertApprovals(t, "approval in b", []memory.Approval{got}, inB)
}

// testCountOpenApprovals: the counts for metrics are the pending items of
// every workspace by kind.
func testCountOpenApprovals(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := map[string]int{}
	for _, ws := range []string{"a", "b"} {
		open, err := s.ListApprovals(ctx, ws, memory.ApprovalOpen, "", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range open {
			want[string(a.Kind)]++
		}
	}
	counts, err := s.CountOpenApprovals(ctx)
	if err != nil || !reflect.DeepEqual(counts, want) || len(want) == 0 {
		t.Errorf("CountOpenApprovals = %v, %v; want %v", counts, err, want)
	}
}

func testExpiredApprovals(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	ra := NewRecord("in a", func(r *memory.Record) { r.Status = memory.Provisional })
	rb := NewRecord("in b", func(r *memory.Record) { r.Status = memory.Provisional })
	mustInsert(t, s, "a", ra)
	mustInsert(t, s, "b", rb)

	now := T0.Add(100 * time.Hour)
	mk := func(ws, rec string, expires time.Time) memory.Approval {
		a := newApproval(ws, rec, expires.Add(-24*time.Hour))
		a.ExpiresAt = expires
		return a
	}
	// Created in expiry order, so that "oldest first" is unambiguous.
	expiredA := mk("a", ra.ID, now.Add(-3*time.Hour))
	expiredB := mk("b", rb.ID, now.Add(-2*time.Hour))
	decidedB := mk("b", rb.ID, now.Add(-90*time.Minute))
	decidedB.Status = memory.ApprovalApproved
	decidedB.DecidedAt = ptr(now.Add(-100 * time.Minute))
	expiredNowA := mk("a", ra.ID, now)
	liveA := mk("a", ra.ID, now.Add(time.Microsecond))
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, a := range []memory.Approval{expiredA, expiredB, decidedB, expiredNowA, liveA} {
			if err := tx.InsertApproval(ctx, a); err != nil {
				return err
			}
		}
		return nil
	})

	got, err := s.ListExpiredApprovals(ctx, now, 0)
	if err != nil {
		t.Fatalf("ListExpiredApprovals: %v", err)
	}
	assertApprovals(t, "expired", got, expiredA, expiredB, expiredNowA)
	got, err = s.ListExpiredApprovals(ctx, now, 2)
	if err != nil {
		t.Fatalf("ListExpiredApprovals: %v", err)
	}
	assertApprovals(t, "expired, limit 2", got, expiredA, expiredB)
	got, err = s.ListExpiredApprovals(ctx, now.Add(-24*time.Hour), 10)
	if err != nil {
		t.Fatalf("ListExpiredApprovals: %v", err)
	}
	assertApprovals(t, "expired a day earlier", got)

	// Once decided, an item is no longer listed.
	expiredB.Status = memory.ApprovalExpired
	expiredB.DecidedAt = ptr(now)
	expiredB.DecidedBy = "system"
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.UpdateApproval(ctx, expiredB) })
	got, err = s.ListExpiredApprovals(ctx, now, 10)
	if err != nil {
		t.Fatalf("ListExpiredApprovals: %v", err)
	}
	assertApprovals(t, "expired after deciding one", got, expiredA, expiredNowA)
}
