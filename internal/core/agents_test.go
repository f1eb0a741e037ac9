package core

import (
	"context"
	"testing"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/svctest"
)

// agentService is a service over a fresh SQLite store, without rate
// limits, with an operator ("op") and an agent of each trust level but
// trusted ("std", "restricted", "ro"); tweak, when not nil, changes the
// policy first.
func agentService(t *testing.T, tweak func(*gate.Policy)) (*Service, map[string]memory.Principal) {
	t.Helper()
	ctx := context.Background()
	st := svctest.SQLite(t)
	ix := svctest.Index(t, st)
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
