package sdk

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// TestGatewayConformanceRealServer runs the conformance checks against a
// real memgate server: SQLite, the search index, the job workers and the
// HTTP API on a loopback port.
func TestGatewayConformanceRealServer(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := svctest.Index(t, st)
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix,
		Jobs: core.JobOptions{Poll: 20 * time.Millisecond}})
	opTok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, err := svc.CreateUser(ctx, core.LocalOperator(memory.DefaultWorkspace), "alice")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, nil, nil, "test").Handler())
	jobsCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.RunJobs(jobsCtx)
	}()
	t.Cleanup(func() {
		srv.Close()
		stop()
		<-done
		st.Close()
	})
	runGatewayConformance(t, gatewayTarget{BaseURL: srv.URL, UserID: u.UserID, UserKey: u.UserKey, OperatorToken: opTok})
}

// TestContextRealServer: Client.Context against a real server.
func TestContextRealServer(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ix := svctest.Index(t, st)
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix})
	if _, _, err := svc.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	op := core.LocalOperator(memory.DefaultWorkspace)
	a, err := svc.CreateAgent(ctx, op, "coder", memory.Standard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Write(ctx, op, core.WriteRequest{Type: memory.Belief, Category: "rule", Content: "Never skip code review",
		Scope: memory.Scope{ProjectID: "x"}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, nil, nil, "test").Handler())
	t.Cleanup(func() { srv.Close(); st.Close() })
	c, err := NewClient(srv.URL, a.Token)
	if err != nil {
		t.Fatal(err)
	}
	env, err := c.Context(ctx, ContextRequest{Query: "review the change", Scope: Scope{ProjectID: "x"}, BudgetTokens: 100})
	if err != nil || len(env.Sections) != 5 || env.Tokens > 100 || env.Sections[0].Items[0].Kind != "rule" ||
		!strings.HasPrefix(env.Markdown, "## Constraints\n- Never skip code review") {
		t.Fatalf("Context = %+v, %v", env, err)
	}
	var e *Error
	if _, err := c.Context(ctx, ContextRequest{}); !errors.As(err, &e) || e.Status != 400 {
		t.Fatalf("empty query: %v", err)
	}
}
