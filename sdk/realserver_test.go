package sdk

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
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
	ix := retrieve.New(retrieve.Options{})
	if _, err := ix.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
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
