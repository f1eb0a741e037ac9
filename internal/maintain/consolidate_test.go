package maintain

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// TestConsolidatePromotesToReview: three confirming episodes become one
// provisional belief with evidence links to each and an approval item;
// it is active only once an operator approves it; a second run proposes
// nothing, and neither does a run after the operator rejected it.
func TestConsolidatePromotesToReview(t *testing.T) {
	backends(t, func(t *testing.T, open func(*testing.T, gate.Policy, core.Loops) env) {
		ctx := t.Context()
		e := open(t, gate.Default(), core.Loops{})
		var eps []string
		for _, c := range []string{"Alice uses Vim for Go", "alice uses vim for go.", "Alice uses Vim for Go"} {
			eps = append(eps, e.write(t, memory.Episode, c).ID)
		}
		// Two say something else; two are too few.
		e.write(t, memory.Episode, "Bob uses Emacs")
		e.write(t, memory.Episode, "Bob uses Emacs")
		m := New(e.svc, Options{Now: e.clk.Now})

		dry, err := New(e.svc, Options{DryRun: true}).Consolidate(ctx)
		if err != nil || dry.Inserted != 1 {
			t.Fatalf("dry run %+v %v", dry, err)
		}
		rep, err := m.Consolidate(ctx)
		if err != nil || rep.Inserted != 1 || len(rep.Approval) != 1 {
			t.Fatalf("consolidate %+v %v", rep, err)
		}
		page, err := e.svc.ListApprovals(ctx, e.op, memory.ApprovalOpen, "", 50)
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("approvals %+v %v", page, err)
		}
		item := page.Items[0]
		b := item.Record
		if b.Type != memory.Belief || b.Status != memory.Provisional || b.Gate.Origin != memory.OriginConsolidation ||
			b.Path != memory.PathSlow || item.Reason != ReasonConsolidation || item.Kind != memory.ApprovalPending {
			t.Fatalf("proposal %+v (%s %s)", b, item.Kind, item.Reason)
		}
		ev := slices.Clone(b.Source.Evidence)
		slices.Sort(ev)
		slices.Sort(eps)
		if !slices.Equal(ev, eps) {
			t.Fatalf("evidence %v, want every episode %v", ev, eps)
		}
		// Provisional: not in default reads.
		list, err := e.svc.List(ctx, e.op, core.ListRequest{Types: []memory.Type{memory.Belief}})
		if err != nil || len(list.Records) != 0 {
			t.Fatalf("a provisional belief is listed: %d %v", len(list.Records), err)
		}
		if n := e.auditEvents(t)["record.consolidate"]; n != 1 {
			t.Fatalf("consolidate audited %d times", n)
		}
		if rep, err := m.Consolidate(ctx); err != nil || rep.Inserted != 0 || rep.Changed != 0 {
			t.Fatalf("second run %+v %v", rep, err)
		}
		// A fourth confirmation does not propose the claim again.
		e.write(t, memory.Episode, "Alice uses Vim for Go")
		if rep, err := m.Consolidate(ctx); err != nil || rep.Inserted != 0 {
			t.Fatalf("run after a fourth episode %+v %v", rep, err)
		}
		if _, err := e.svc.Approve(ctx, e.op, item.ID, nil); err != nil {
			t.Fatal(err)
		}
		if got := e.get(t, b.ID); got.Status != memory.Active || got.Gate.Origin != memory.OriginConsolidation {
			t.Fatalf("approved %+v", got)
		}
		if rep, err := m.Consolidate(ctx); err != nil || rep.Inserted != 0 {
			t.Fatalf("run after approval %+v %v", rep, err)
		}
	})
}

// TestConsolidateRejectedStaysRejected: a rejected proposal is not made
// again.
func TestConsolidateRejectedStaysRejected(t *testing.T) {
	backends(t, func(t *testing.T, open func(*testing.T, gate.Policy, core.Loops) env) {
		ctx := t.Context()
		e := open(t, gate.Default(), core.Loops{})
		for range 3 {
			e.write(t, memory.Episode, "the staging database runs PostgreSQL 16")
		}
		m := New(e.svc, Options{})
		rep, err := m.Consolidate(ctx)
		if err != nil || len(rep.Approval) != 1 {
			t.Fatalf("consolidate %+v %v", rep, err)
		}
		if _, err := e.svc.Reject(ctx, e.op, rep.Approval[0], "not a belief"); err != nil {
			t.Fatal(err)
		}
		if rep, err := m.Consolidate(ctx); err != nil || rep.Inserted != 0 {
			t.Fatalf("proposed again after rejection: %+v %v", rep, err)
		}
	})
}

// TestConsolidateMergesNearDuplicates: beliefs that say the same thing in
// other words (written where write-time detection could not see them:
// different writers with near-duplicate detection off) merge into the
// oldest, which keeps every evidence link; the others are superseded.
func TestConsolidateMergesNearDuplicates(t *testing.T) {
	backends(t, func(t *testing.T, open func(*testing.T, gate.Policy, core.Loops) env) {
		ctx := t.Context()
		pol := gate.Default()
		pol.Duplicates.Near = false
		e := open(t, pol, core.Loops{})
		ev1 := e.write(t, memory.Episode, "standup: Carol said she prefers tabs")
		ev2 := e.write(t, memory.Episode, "review: Carol asked for tabs again")
		w := func(content string, ev string) memory.Record {
			res, err := e.svc.Write(ctx, e.op, core.WriteRequest{Type: memory.Preference, Content: content,
				Source: &core.SourceInput{Evidence: []string{ev}}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Record
		}
		a := w("Carol prefers tabs", ev1.ID)
		b := w("carol prefers TABS.", ev2.ID)
		other := w("Dave prefers spaces", ev1.ID)
		rep, err := New(e.svc, Options{}).Consolidate(ctx)
		if err != nil || rep.Changed != 2 {
			t.Fatalf("merge %+v %v", rep, err)
		}
		keep := e.get(t, a.ID)
		if keep.Status != memory.Active || keep.Gate.Origin != memory.OriginConsolidation || keep.Path != memory.PathSlow {
			t.Fatalf("survivor %+v", keep)
		}
		for _, want := range []string{ev1.ID, ev2.ID, b.ID} {
			if !slices.Contains(keep.Source.Evidence, want) {
				t.Fatalf("survivor evidence %v lacks %s", keep.Source.Evidence, want)
			}
		}
		gone := e.get(t, b.ID)
		if gone.Status != memory.Superseded || gone.SupersededBy == nil || *gone.SupersededBy != a.ID {
			t.Fatalf("merged record %+v", gone)
		}
		if e.get(t, other.ID).Status != memory.Active {
			t.Fatal("an unrelated record was merged")
		}
		if n := e.auditEvents(t)["record.merge"]; n != 2 {
			t.Fatalf("merge audited %d times", n)
		}
		if rep, err := New(e.svc, Options{}).Consolidate(ctx); err != nil || rep.Changed != 0 {
			t.Fatalf("second run %+v %v", rep, err)
		}
	})
}

// TestConsolidateResumesAfterKill: killed after proposing its first
// group, the next run proposes the rest and nothing twice.
func TestConsolidateResumesAfterKill(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st, gate.Default(), core.Loops{})
	for range 3 {
		e.write(t, memory.Episode, "the CI runs Go 1.25")
		e.write(t, memory.Episode, "Erin uses Neovim")
	}
	ctx, kill := context.WithCancel(t.Context())
	first, err := New(e.svc, Options{Progress: func(Progress) { kill() }}).Consolidate(ctx)
	if first.Inserted != 1 {
		t.Fatalf("killed run %+v %v", first, err)
	}
	second, err := New(e.svc, Options{}).Consolidate(t.Context())
	if err != nil || second.Inserted != 1 {
		t.Fatalf("resumed run %+v %v", second, err)
	}
	if n := e.auditEvents(t)["record.consolidate"]; n != 2 {
		t.Fatalf("%d proposals, want 2", n)
	}
}
