package knowledge_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/knowledge"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

// env is a knowledge service over a real store, with an operator and one
// agent per trust level.
type env struct {
	svc *core.Service
	kn  *knowledge.Service
	st  store.Store
	who map[string]memory.Principal
}

func backends(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, newEnv(t, st, knowledge.Options{}))
	})
	t.Run("postgres", func(t *testing.T) {
		st, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, newEnv(t, st, knowledge.Options{}))
	})
}

func sqliteEnv(t *testing.T, o knowledge.Options) *env {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnv(t, st, o)
}

func sqliteEnvB(b *testing.B) *env {
	st, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return newEnv(b, st, knowledge.Options{})
}

func newEnv(t testing.TB, st store.Store, o knowledge.Options) *env {
	t.Helper()
	ctx := context.Background()
	ix := svctest.Index(t, st)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Now: clk.Now, Index: ix})
	tok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	op, err := svc.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{svc: svc, kn: knowledge.New(svc, o), st: st, who: map[string]memory.Principal{"op": op}}
	for _, a := range []struct {
		name  string
		trust memory.Trust
	}{{"trusted", memory.Trusted}, {"std", memory.Standard}, {"restricted", memory.Restricted}, {"ro", memory.ReadOnly}} {
		c, err := svc.CreateAgent(ctx, op, a.name, a.trust)
		if err != nil {
			t.Fatal(err)
		}
		p, err := svc.Authenticate(ctx, c.Token)
		if err != nil {
			t.Fatal(err)
		}
		e.who[a.name] = p
	}
	return e
}

func wantCode(t *testing.T, err error, code fault.Code) {
	t.Helper()
	if fault.CodeOf(err) != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
}
