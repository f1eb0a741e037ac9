package core

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// agentService is a service over a fresh SQLite store, without rate
// limits, with an operator ("op") and an agent of each trust level but
// trusted ("std", "restricted", "ro"); tweak, when not nil, changes the
// policy first.
func agentService(t *testing.T, tweak func(*gate.Policy)) (*Service, map[string]memory.Principal) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ix := retrieve.New(retrieve.Options{})
	if _, err := ix.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	pol := gate.Default()
	pol.RateLimit.Operator, pol.RateLimit.Agent = gate.Bucket{}, gate.Bucket{}
	if tweak != nil {
		tweak(&pol)
	}
	s := New(Options{Store: st, Policy: pol, Index: ix})
	if _, _, err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	op := LocalOperator(memory.DefaultWorkspace)
	ps := map[string]memory.Principal{"op": op}
	for name, trust := range map[string]memory.Trust{"std": memory.Standard, "restricted": memory.Restricted, "ro": memory.ReadOnly} {
		cp, err := s.CreateAgent(ctx, op, name, trust)
		if err != nil {
			t.Fatal(err)
		}
		ps[name] = cp.Principal
	}
	return s, ps
}
