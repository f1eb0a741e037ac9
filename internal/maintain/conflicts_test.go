package maintain

import (
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
)

// TestConflictSweep: contradictions the write-time check did not see
// (it was off) become review items showing both sides; approving
// supersedes the older, rejecting invalidates the newer, expiry leaves
// both; nothing is erased; a second sweep asks nothing again.
func TestConflictSweep(t *testing.T) {
	backends(t, func(t *testing.T, open func(*testing.T, gate.Policy, core.Loops) env) {
		ctx := t.Context()
		pol := gate.Default()
		pol.Conflicts.Detect = false
		e := open(t, pol, core.Loops{})
		a1 := e.write(t, memory.Belief, "Alice likes Java")
		a2 := e.write(t, memory.Belief, "Alice hates Java")
		b1 := e.write(t, memory.Preference, "Bob uses Vim")
		b2 := e.write(t, memory.Preference, "Bob uses Emacs")
		c1 := e.write(t, memory.Belief, "Carol prefers PostgreSQL for backend work")
		c2 := e.write(t, memory.Belief, "Carol prefers MySQL for backend work")
		e.write(t, memory.Belief, "Dave uses Go") // no other side
		m := New(e.svc, Options{})

		dry, err := New(e.svc, Options{DryRun: true}).Conflicts(ctx)
		if err != nil || dry.Reviews != 3 {
			t.Fatalf("dry run %+v %v", dry, err)
		}
		rep, err := m.Conflicts(ctx)
		if err != nil || rep.Reviews != 3 || rep.Changed != 3 {
			t.Fatalf("sweep %+v %v", rep, err)
		}
		if rep, err := m.Conflicts(ctx); err != nil || rep.Reviews != 0 || rep.Changed != 0 {
			t.Fatalf("second sweep %+v %v", rep, err)
		}
		page, err := e.svc.ListApprovals(ctx, e.op, memory.ApprovalOpen, "", 50)
		if err != nil || len(page.Items) != 3 {
			t.Fatalf("queue %+v %v", page, err)
		}
		items := map[string]core.ApprovalItem{}
		for _, it := range page.Items {
			if it.Kind != memory.ApprovalConflict || it.Reason != ReasonConflictSweep || it.ConflictsWith == nil {
				t.Fatalf("item %+v", it)
			}
			items[it.Record.ID] = it
		}
		for older, newer := range map[string]string{a1.ID: a2.ID, b1.ID: b2.ID, c1.ID: c2.ID} {
			it, ok := items[newer]
			if !ok || it.ConflictsWith.ID != older || it.ConflictsWith.Source.PrincipalID == "" || it.Record.Gate.Origin != memory.OriginMaintenance {
				t.Fatalf("item for %s: %+v", newer, it)
			}
		}

		// Approve: the newer stands, the older is superseded.
		if _, err := e.svc.Approve(ctx, e.op, items[a2.ID].ID, nil); err != nil {
			t.Fatal(err)
		}
		if g := e.get(t, a1.ID); g.Status != memory.Superseded || g.SupersededBy == nil || *g.SupersededBy != a2.ID {
			t.Fatalf("older after approval %+v", g)
		}
		if g := e.get(t, a2.ID); g.Status != memory.Active {
			t.Fatalf("newer after approval %+v", g)
		}
		// Reject: the newer is invalidated (kept), the older stands.
		if _, err := e.svc.Reject(ctx, e.op, items[b2.ID].ID, "Bob went back"); err != nil {
			t.Fatal(err)
		}
		if g := e.get(t, b2.ID); g.InvalidatedAt == nil || g.Content != b2.Content || g.Supersedes != nil {
			t.Fatalf("newer after rejection %+v", g)
		}
		if g := e.get(t, b1.ID); g.Status != memory.Active || g.InvalidatedAt != nil {
			t.Fatalf("older after rejection %+v", g)
		}
		// Expiry: both stand, content intact.
		e.clk.Add(pol.Approvals.TTL.D() + time.Minute)
		if n, err := e.svc.ExpireApprovals(ctx); err != nil || n != 1 {
			t.Fatalf("expire %d %v", n, err)
		}
		for _, r := range []memory.Record{c1, c2} {
			if g := e.get(t, r.ID); g.Status != memory.Active || g.InvalidatedAt != nil || g.Content != r.Content || g.Supersedes != nil {
				t.Fatalf("after expiry %+v", g)
			}
		}
		// An unresolved conflict is asked about again.
		if rep, err := m.Conflicts(ctx); err != nil || rep.Reviews != 1 {
			t.Fatalf("sweep after expiry %+v %v", rep, err)
		}
		if n := e.auditEvents(t)["maintenance.review"]; n != 4 {
			t.Fatalf("%d review audits, want 4", n)
		}
	})
}
