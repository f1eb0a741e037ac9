package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// testListJobs: jobs of one workspace, newest first, by status and kind,
// paged by id.
func testListJobs(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	var jobs []store.Job // oldest first
	for i, kind := range []string{"flush", "embed", "flush", "flush"} {
		j := newJob("a", kind, T0.Add(time.Duration(i)*time.Minute))
		jobs = append(jobs, j)
	}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, j := range append(jobs, newJob("b", "flush", T0)) {
			if err := tx.InsertJob(ctx, j); err != nil {
				return err
			}
		}
		return nil
	})
	// One of a's flush jobs runs.
	if j, err := claim(t, s, T0.Add(time.Hour), "w", "embed"); err != nil || j.ID != jobs[1].ID {
		t.Fatalf("claim: %+v %v", j, err)
	}
	ids := func(q store.JobQuery) []string {
		t.Helper()
		got, err := s.ListJobs(ctx, "a", q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range got {
			if j.Workspace != "a" {
				t.Fatalf("ListJobs(a) returned a job of %s", j.Workspace)
			}
			out = append(out, j.ID)
		}
		return out
	}
	same := func(what string, got []string, want ...store.Job) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d jobs, want %d", what, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i].ID {
				t.Fatalf("%s: job %d is %s, want %s", what, i, got[i], want[i].ID)
			}
		}
	}
	same("all", ids(store.JobQuery{}), jobs[3], jobs[2], jobs[1], jobs[0])
	same("running", ids(store.JobQuery{Status: store.JobRunning}), jobs[1])
	same("queued flush", ids(store.JobQuery{Status: store.JobQueued, Kind: "flush"}), jobs[3], jobs[2], jobs[0])
	same("page 1", ids(store.JobQuery{Limit: 2}), jobs[3], jobs[2])
	same("page 2", ids(store.JobQuery{Limit: 2, Before: jobs[2].ID}), jobs[1], jobs[0])
	same("no such kind", ids(store.JobQuery{Kind: "nope"}))
}

// testListAuditWhere: entries filtered by actor id, actor kind, event
// and event prefix (an '_' in it is no wildcard), paged by seq, in one
// workspace.
func testListAuditWhere(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	mk := func(kind, actor, event string) audit.Entry {
		e := NewAuditEntry(event, `{}`)
		e.ActorKind, e.ActorID = kind, actor
		return mustAppend(t, s, "a", e)
	}
	e1 := mk(audit.ActorOperator, "op-1", "approval.reject")
	e2 := mk(audit.ActorAgent, "agent-1", "record.write")
	e3 := mk(audit.ActorOperator, "op-2", "approval.approve")
	e4 := mk(audit.ActorOperator, "op-1", "approvalXreject")
	e5 := mk(audit.ActorSystem, "", "approval.expire")
	mustAppend(t, s, "b", NewAuditEntry("approval.reject", `{}`))
	list := func(q store.AuditQuery) []audit.Entry {
		t.Helper()
		got, err := s.ListAuditWhere(ctx, "a", q)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	assertEntries(t, "everything", list(store.AuditQuery{}), []audit.Entry{e1, e2, e3, e4, e5})
	assertEntries(t, "actor op-1", list(store.AuditQuery{ActorID: "op-1"}), []audit.Entry{e1, e4})
	assertEntries(t, "operators", list(store.AuditQuery{ActorKind: audit.ActorOperator}), []audit.Entry{e1, e3, e4})
	assertEntries(t, "event", list(store.AuditQuery{Event: "approval.reject"}), []audit.Entry{e1})
	assertEntries(t, "prefix", list(store.AuditQuery{EventPrefix: "approval."}), []audit.Entry{e1, e3, e5})
	assertEntries(t, "prefix with _", list(store.AuditQuery{EventPrefix: "approval_"}), nil)
	assertEntries(t, "op-1 and prefix", list(store.AuditQuery{ActorID: "op-1", EventPrefix: "approval."}), []audit.Entry{e1})
	assertEntries(t, "page 1", list(store.AuditQuery{EventPrefix: "approval.", Limit: 2}), []audit.Entry{e1, e3})
	assertEntries(t, "page 2", list(store.AuditQuery{EventPrefix: "approval.", Limit: 2, AfterSeq: e3.Seq}), []audit.Entry{e5})
}

// testSetTrust: a principal's trust changes in its workspace only.
func testSetTrust(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	p := memory.Principal{ID: memory.NewID(), Workspace: "a", Kind: memory.KindAgent, Name: "bot", Trust: memory.Restricted, CreatedAt: T0, TokenHash: []byte("h")}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertPrincipal(ctx, p) })
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.SetTrust(ctx, "a", p.ID, memory.Trusted) })
	got, err := s.GetPrincipal(ctx, "a", p.ID)
	if err != nil || got.Trust != memory.Trusted || got.Name != "bot" || string(got.TokenHash) != "h" {
		t.Fatalf("after SetTrust: %+v, %v", got, err)
	}
	err = s.Tx(ctx, func(tx store.Tx) error { return tx.SetTrust(ctx, "b", p.ID, memory.ReadOnly) })
	assertNotFound(t, "SetTrust(other workspace)", err)
	err = s.Tx(ctx, func(tx store.Tx) error { return tx.SetTrust(ctx, "a", memory.NewID(), memory.ReadOnly) })
	assertNotFound(t, "SetTrust(missing)", err)
}
