package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/console"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/metrics"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
)

// TestConsoleSessionsInTheDatabase: a console session signed in on one
// replica is accepted by another process's service over the same
// database (as after a restart, or behind a load balancer); the
// database holds the hash of the session id, never the id; signing out
// on the second replica deletes it for both; an expired session is
// refused by every replica and deleted by the next sign-in.
func TestConsoleSessionsInTheDatabase(t *testing.T) {
	e := newConsoleEnv(t, false)
	// The second replica: its own service, index and server, the same
	// database and clock.
	ix := retrieve.New(retrieve.Options{})
	if _, err := ix.Load(context.Background(), e.store); err != nil {
		t.Fatal(err)
	}
	svc2 := core.New(core.Options{Store: e.store, Policy: gate.Default(), Metrics: metrics.New(), Now: e.clock.Now, Index: ix})
	rest2 := api.New(svc2, nil, nil, "test")
	rest2.EnableConsole(console.Options{TTL: consoleTTL})
	srv2 := httptest.NewServer(rest2.Handler())
	t.Cleanup(srv2.Close)
	e2 := &consoleEnv{harness: e.harness, url: srv2.URL, c: srv2.Client()}

	_, s := e.signIn(e.tokens["op"])
	if s.cookie == nil {
		t.Fatalf("sign-in: %s", s.raw)
	}
	if resp, _ := e2.send("GET", "/v1/whoami", s.cookie.Value, "", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the other replica refuses the session: %d", resp.StatusCode)
	}
	if resp, _ := e2.send("POST", "/v1/agents", s.cookie.Value, s.csrf, map[string]string{"name": "via-replica"}, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("the other replica refuses a write with cookie and CSRF: %d", resp.StatusCode)
	}
	if _, err := e.store.GetSession(t.Context(), s.cookie.Value); err == nil {
		t.Fatal("the database holds the session id itself")
	}
	row, err := e.store.GetSession(t.Context(), memory.SHA256Hex(s.cookie.Value))
	if err != nil || row.CSRF != s.csrf || !row.ExpiresAt.Equal(e.clock.Now().Add(consoleTTL)) {
		t.Fatalf("stored session %+v, %v", row, err)
	}
	// Sign-out on the second replica ends the session on the first.
	if resp, _ := e2.send("DELETE", "/console/session", s.cookie.Value, s.csrf, nil, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("sign-out on the replica: %d", resp.StatusCode)
	}
	if resp, _ := e.send("GET", "/v1/whoami", s.cookie.Value, "", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a session signed out on one replica answers %d on the other", resp.StatusCode)
	}
	if _, err := e.store.GetSession(t.Context(), memory.SHA256Hex(s.cookie.Value)); err == nil {
		t.Fatal("sign-out left the session in the database")
	}

	// Expiry follows the (injected) clock, on every replica.
	_, old := e.signIn(e.tokens["op"])
	e.clock.Advance(consoleTTL)
	for _, env := range []*consoleEnv{e, e2} {
		if resp, _ := env.send("GET", "/v1/whoami", old.cookie.Value, "", nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("an expired session answers %d", resp.StatusCode)
		}
	}
	// The next sign-in deletes it.
	_, _ = e2.signIn(e.tokens["op"])
	if _, err := e.store.GetSession(t.Context(), memory.SHA256Hex(old.cookie.Value)); err == nil || !isNotFound(err) {
		t.Fatalf("the expired session is still stored after a sign-in: %v", err)
	}
}

func isNotFound(err error) bool { return err != nil && errors.Is(err, store.ErrNotFound) }
