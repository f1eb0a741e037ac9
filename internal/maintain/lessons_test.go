package maintain

import (
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
)

// TestLessonsFromFailures: a reported failure becomes one proposed
// lesson linked to the events that led to it (since the previous
// outcome), in the review queue; successes propose nothing; a second run
// proposes nothing; forgetting the subject erases the events and the
// lesson drawn from them.
func TestLessonsFromFailures(t *testing.T) {
	backends(t, func(t *testing.T, open func(*testing.T, gate.Policy, core.Loops) env) {
		ctx := t.Context()
		e := open(t, gate.Default(), core.Loops{})
		ev := func(kind, content, outcome string) memory.Record {
			res, err := e.svc.AppendEvent(ctx, e.op, "s1", core.EventRequest{Kind: kind, Content: content, Outcome: outcome,
				Entities: []string{"person:gina"}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Record
		}
		early := ev(core.EventAction, "listed the open tickets", "")
		ev(core.EventOutcome, "tickets listed", core.OutcomeSuccess)
		act := ev(core.EventAction, "closed Gina's ticket without asking", "")
		fail := ev(core.EventOutcome, "Gina reopened the ticket, annoyed", core.OutcomeFailure)

		m := New(e.svc, Options{})
		rep, err := m.Lessons(ctx)
		if err != nil || rep.Inserted != 1 || len(rep.Approval) != 1 {
			t.Fatalf("lessons %+v %v", rep, err)
		}
		page, err := e.svc.ListApprovals(ctx, e.op, memory.ApprovalOpen, "", 10)
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("queue %+v %v", page, err)
		}
		l := page.Items[0].Record
		if l.Type != memory.Reflection || l.Category != CategoryLesson || l.Status != memory.Provisional ||
			l.Gate.Origin != memory.OriginConsolidation || page.Items[0].Reason != ReasonLesson || l.Scope.SessionID != "s1" {
			t.Fatalf("lesson %+v", l)
		}
		if !slices.Contains(l.Source.Evidence, act.ID) || !slices.Contains(l.Source.Evidence, fail.ID) || slices.Contains(l.Source.Evidence, early.ID) {
			t.Fatalf("lesson evidence %v: want the action and the failure, not the earlier episode", l.Source.Evidence)
		}
		if rep, err := m.Lessons(ctx); err != nil || rep.Inserted != 0 {
			t.Fatalf("second run %+v %v", rep, err)
		}
		if _, err := e.svc.ForgetSubject(ctx, e.op, "person:gina"); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{act.ID, fail.ID, l.ID} {
			if g := e.get(t, id); g.Status != memory.Forgotten || g.Content != "" {
				t.Fatalf("%s not erased: %+v", id, g)
			}
		}
	})
}
