package sdk

import (
	"context"
	"errors"
	"testing"
)

// TestSDKConsoleRoutes drives the console's operator routes against a
// real server: an agent's trust changed (and in force on its next
// write), a readable reject reason, the audit log filtered on the
// server, and the jobs list.
func TestSDKConsoleRoutes(t *testing.T) {
	ctx := context.Background()
	url, opTok := realServer(t)
	op := must[*Client](t, "client")(NewClient(url, opTok))
	intern := must[CreatedPrincipal](t, "create agent")(op.CreateAgent(ctx, "intern", "restricted"))
	c := must[*Client](t, "client")(NewClient(url, intern.Token))

	queued := must[WriteResult](t, "write")(c.Write(ctx, WriteRequest{Type: TypeBelief, Content: "The staging database is in eu-west"}))
	if queued.ApprovalID == "" {
		t.Fatalf("a restricted agent's write was not queued: %+v", queued)
	}
	rej := must[Approval](t, "reject")(op.Reject(ctx, queued.ApprovalID, "wrong region"))
	if rej.DecisionReason != "wrong region" {
		t.Fatalf("reject answered reason %q", rej.DecisionReason)
	}
	page := must[ApprovalPage](t, "list rejected")(op.ListApprovals(ctx, "rejected", "", 0))
	if len(page.Items) != 1 || page.Items[0].DecisionReason != "wrong region" {
		t.Fatalf("rejected items: %+v", page.Items)
	}

	p := must[Principal](t, "set trust")(op.SetAgentTrust(ctx, "intern", "standard"))
	if p.Trust != "standard" || p.Name != "intern" {
		t.Fatalf("after SetAgentTrust: %+v", p)
	}
	if w := must[WriteResult](t, "write")(c.Write(ctx, WriteRequest{Type: TypeBelief, Content: "Deploys happen on Tuesdays"})); w.ApprovalID != "" {
		t.Fatalf("a standard agent's plain write was queued: %+v", w)
	}
	var e *Error
	if _, err := op.SetAgentTrust(ctx, "intern", "boss"); !errors.As(err, &e) || e.Code != CodeInvalidArgument || e.Field() != "trust" {
		t.Fatalf("bad trust: %v", err)
	}
	if _, err := c.SetAgentTrust(ctx, "intern", "trusted"); !errors.As(err, &e) || e.Code != CodePermissionDenied {
		t.Fatalf("an agent raised its own trust: %v", err)
	}

	audit := must[AuditPage](t, "audit")(op.AuditWhere(ctx, AuditQuery{Action: "agent.trust"}))
	if len(audit.Entries) != 1 || field(t, audit.Entries[0].Payload, "to") != "standard" || field(t, audit.Entries[0].Payload, "from") != "restricted" {
		t.Fatalf("agent.trust entries: %+v", audit.Entries)
	}
	agents := must[AuditPage](t, "audit")(op.AuditWhere(ctx, AuditQuery{Actor: "agent", Limit: 500}))
	for _, en := range agents.Entries {
		if en.ActorKind != "agent" {
			t.Fatalf("actor=agent returned an entry of a %s", en.ActorKind)
		}
	}
	if len(agents.Entries) < 2 {
		t.Fatalf("actor=agent returned %d entries, want the two writes", len(agents.Entries))
	}

	jobs := must[JobPage](t, "jobs")(op.ListJobs(ctx, JobQuery{}))
	for _, j := range jobs.Jobs {
		if j.ID == "" || j.Kind == "" {
			t.Fatalf("job %+v", j)
		}
	}
	if _, err := op.ListJobs(ctx, JobQuery{State: "sleeping"}); !errors.As(err, &e) || e.Field() != "state" {
		t.Fatalf("bad state: %v", err)
	}
}
