package core

import (
	"context"
	"testing"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/store"
)

// The preview of forget_subject erases nothing, audits nothing, and
// counts exactly what the erasure then erases, on both backends.
func TestPreviewForgetSubjectMatchesErasure(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s, ps := graphAccessService(t, st)
		graphFixture(t, s, ps)
		op := ps["op"]
		auditLen := func() int {
			page, err := s.ListAudit(ctx, op, 0, 500)
			if err != nil {
				t.Fatal(err)
			}
			return len(page.Entries)
		}
		before := auditLen()
		pre, err := s.PreviewForgetSubject(ctx, op, "person:alice")
		if err != nil {
			t.Fatal(err)
		}
		if pre.Records != 1 || pre.Nodes < 1 || pre.Edges != 5 {
			t.Fatalf("preview: %+v", pre)
		}
		if _, err := s.GetNode(ctx, op, "person:alice", false); err != nil {
			t.Fatalf("the preview erased the node: %v", err)
		}
		if n := auditLen(); n != before {
			t.Fatalf("the preview wrote %d audit entries", n-before)
		}
		if _, err := s.PreviewForgetSubject(ctx, ps["trusted"], "person:alice"); fault.CodeOf(err) != fault.PermissionDenied {
			t.Fatalf("an agent's preview: %v", err)
		}
		done, err := s.ForgetSubject(ctx, op, "person:alice")
		if err != nil {
			t.Fatal(err)
		}
		if done != pre {
			t.Fatalf("erasure %+v, preview said %+v", done, pre)
		}
	})
}

func TestSessionPrincipalOnlyLiveOperators(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s, ps := graphAccessService(t, st)
		op, err := s.CLIOperator(ctx, ps["op"].Workspace) // the bootstrap operator, a stored principal
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.SessionPrincipal(ctx, op.ID)
		if err != nil || p.ID != op.ID || p.TokenHash != nil {
			t.Fatalf("operator: %+v %v", p, err)
		}
		if _, err := s.SessionPrincipal(ctx, ps["trusted"].ID); fault.CodeOf(err) != fault.Unauthenticated {
			t.Fatalf("agent: %v", err)
		}
		if _, err := s.SessionPrincipal(ctx, "01a00000-0000-7000-8000-000000000000"); fault.CodeOf(err) != fault.Unauthenticated {
			t.Fatalf("unknown principal: %v", err)
		}
	})
}
