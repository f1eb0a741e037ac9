package maintain

import (
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
)

// TestRescreenQuarantinesAndPropagates: records stored while the screen
// was off are quarantined when it is on, and so is every record derived
// from them through evidence, transitively; a second run changes nothing;
// the scheduled sweep rescreens only when the rules change.
func TestRescreenQuarantinesAndPropagates(t *testing.T) {
	backends(t, func(t *testing.T, open func(*testing.T, gate.Policy, core.Loops) env) {
		ctx := t.Context()
		off := gate.Default()
		off.PII.Enabled = false
		e := open(t, off, core.Loops{})
		leak := e.write(t, memory.Episode, "Frank's address is frank.doe@example.com")
		clean := e.write(t, memory.Episode, "Frank joined the platform team")
		w := func(content string, ev ...string) memory.Record {
			res, err := e.svc.Write(ctx, e.op, core.WriteRequest{Type: memory.Belief, Content: content,
				Source: &core.SourceInput{Evidence: ev}})
			if err != nil {
				t.Fatal(err)
			}
			return res.Record
		}
		derived := w("Frank can be reached by mail", leak.ID)
		second := w("Frank is reachable", derived.ID)
		unrelated := w("Frank works on the platform", clean.ID)
		queued, err := e.svc.Write(ctx, e.op, core.WriteRequest{Type: memory.Belief, Status: memory.Provisional,
			Content: "Frank's phone is +1 415 555 0134"})
		if err != nil || queued.ApprovalID == "" {
			t.Fatalf("queued write %+v %v", queued, err)
		}

		// The rules change: the screen is on again.
		svc := core.New(core.Options{Store: e.st, Policy: gate.Default(), Now: e.clk.Now})
		m := New(svc, Options{})
		if due, err := m.rescreenDue(ctx); err != nil || !due {
			t.Fatalf("rescreen not due after a rules change: %v", err)
		}
		rep, err := m.Rescreen(ctx)
		if err != nil || rep.Changed != 4 || rep.Reviews != 4 {
			t.Fatalf("rescreen %+v %v", rep, err)
		}
		for _, r := range []memory.Record{leak, derived, second, queued.Record} {
			g := e.get(t, r.ID)
			if g.Status != memory.Quarantined || g.Access != memory.Sensitive || g.Gate.Decision != memory.DecisionQuarantined ||
				g.Gate.Origin != memory.OriginMaintenance {
				t.Fatalf("%s after rescreen: %+v", r.Content, g)
			}
		}
		for _, r := range []memory.Record{clean, unrelated} {
			if g := e.get(t, r.ID); g.Status != memory.Active {
				t.Fatalf("%s quarantined", r.Content)
			}
		}
		page, err := svc.ListApprovals(ctx, e.op, memory.ApprovalOpen, "", 50)
		if err != nil || len(page.Items) != 4 {
			t.Fatalf("quarantine items %d %v", len(page.Items), err)
		}
		for _, it := range page.Items {
			if it.Kind != memory.ApprovalQuarantine {
				t.Fatalf("a %s item is still open for a quarantined record: %+v", it.Kind, it)
			}
		}
		if rep, err := m.Rescreen(ctx); err != nil || rep.Changed != 0 || rep.Reviews != 0 {
			t.Fatalf("second rescreen %+v %v", rep, err)
		}
		if due, err := m.rescreenDue(ctx); err != nil || due {
			t.Fatalf("rescreen due with unchanged rules: %v", err)
		}
		reps, err := m.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reps {
			if r.Job == JobRescreen {
				t.Fatal("the sweep rescreened with unchanged rules")
			}
		}
		// Audit: one record.rescreen per quarantined record.
		if n := e.auditEvents(t)["record.rescreen"]; n != 4 {
			t.Fatalf("%d rescreen audits", n)
		}
	})
}

// TestRescreenKeepsOwnTurnsFlagged: a rescreen leaves a gateway user's own
// turn with its contact details flagged and readable by the user (the
// gate would decide so again); once the policy quarantines such turns
// (pii.own_conversation.action: quarantine), a rescreen quarantines it.
func TestRescreenKeepsOwnTurnsFlagged(t *testing.T) {
	backends(t, func(t *testing.T, open func(*testing.T, gate.Policy, core.Loops) env) {
		ctx := t.Context()
		e := open(t, gate.Default(), core.Loops{})
		u, err := e.svc.CreateUser(ctx, e.op, "dana")
		if err != nil {
			t.Fatal(err)
		}
		up, err := e.svc.AuthenticateUser(ctx, "", u.UserID, u.UserKey)
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.svc.GatewayAdd(ctx, up, core.UserConversation(up, "app", "proj", "chat:1"), []core.GatewayMessage{
			{SenderID: up.Name, Role: "user", Timestamp: t0.UnixMilli(), Content: "mail me at dana@example.com"}})
		if err != nil || res.Decisions[memory.DecisionFlagged] != 1 {
			t.Fatalf("add %+v %v", res, err)
		}
		id := res.MemoryIDs[0]
		if rep, err := New(e.svc, Options{}).Rescreen(ctx); err != nil || rep.Changed != 0 {
			t.Fatalf("rescreen %+v %v", rep, err)
		}
		if g := e.get(t, id); g.Status != memory.Active || g.Access != memory.UserOnly {
			t.Fatalf("after rescreen: %s %s", g.Status, g.Access)
		}
		pol := gate.Default()
		pol.PII.OwnConversation.Action = gate.PIIQuarantine
		svc := core.New(core.Options{Store: e.st, Policy: pol, Now: e.clk.Now})
		if rep, err := New(svc, Options{}).Rescreen(ctx); err != nil || rep.Changed != 1 {
			t.Fatalf("rescreen under quarantine %+v %v", rep, err)
		}
		if g := e.get(t, id); g.Status != memory.Quarantined || g.Access != memory.Sensitive {
			t.Fatalf("after rescreen under quarantine: %s %s", g.Status, g.Access)
		}
	})
}
