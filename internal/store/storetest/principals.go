package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func testWorkspaces(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := memory.Workspace{ID: "alpha", Settings: json.RawMessage(`{"ttl": "24h", "n": 3}`), CreatedAt: T0}
	b := memory.Workspace{ID: "beta", Settings: json.RawMessage(`{}`), CreatedAt: T0.Add(time.Hour)}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.CreateWorkspace(ctx, a); err != nil {
			return err
		}
		// Visible inside the transaction that wrote it.
		if _, err := tx.GetWorkspace(ctx, a.ID); err != nil {
			return err
		}
		return tx.CreateWorkspace(ctx, b)
	})

	got, err := s.GetWorkspace(ctx, "alpha")
	if err != nil {
		t.Fatalf("GetWorkspace: %v", err)
	}
	assertWorkspace(t, got, a)

	_, err = s.GetWorkspace(ctx, "gamma")
	assertNotFound(t, "GetWorkspace(missing)", err)

	err = s.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: "alpha", CreatedAt: T0})
	})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("CreateWorkspace(existing): got %v, want ErrExists", err)
	}

	all, err := s.ListWorkspaces(ctx)
	if err != nil {
		t.Fatalf("ListWorkspaces: %v", err)
	}
	found := map[string]memory.Workspace{}
	for _, w := range all {
		if _, dup := found[w.ID]; dup {
			t.Fatalf("ListWorkspaces: %s listed twice", w.ID)
		}
		found[w.ID] = w
	}
	if len(found) != 2 {
		t.Fatalf("ListWorkspaces: got %d workspaces, want 2", len(found))
	}
	assertWorkspace(t, found["alpha"], a)
	assertWorkspace(t, found["beta"], b)
}

func assertWorkspace(t *testing.T, got, want memory.Workspace) {
	t.Helper()
	got.Settings = canonJSON(got.Settings)
	want.Settings = canonJSON(want.Settings)
	want.CreatedAt = memory.Canon(want.CreatedAt)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("workspace mismatch\n got: %s\nwant: %s", dump(got), dump(want))
	}
}

func newPrincipal(ws, name string, kind memory.PrincipalKind) memory.Principal {
	return memory.Principal{
		ID:        memory.NewID(),
		Workspace: ws,
		Kind:      kind,
		Name:      name,
		Trust:     memory.Standard,
		TokenHash: []byte(memory.SHA256Hex(name))[:32],
		CreatedAt: memory.Canon(time.Now()),
	}
}

func assertPrincipal(t *testing.T, what string, got, want memory.Principal) {
	t.Helper()
	want.CreatedAt = memory.Canon(want.CreatedAt)
	want.RevokedAt = memory.CanonPtr(want.RevokedAt)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: principal mismatch\n got: %+v\nwant: %+v", what, got, want)
	}
}

// principalFixture is the principals testPrincipals inserts: in
// workspace a an operator, a restricted agent and a revoked one; in b an
// agent.
type principalFixture struct {
	op, ag, revoked, other memory.Principal
}

func testPrincipals(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a", "b")
	var f principalFixture
	f.op = newPrincipal("a", "admin", memory.KindOperator)
	f.op.Trust = ""
	f.ag = newPrincipal("a", "coder", memory.KindAgent)
	f.ag.Trust = memory.Restricted
	f.revoked = newPrincipal("a", "old", memory.KindAgent)
	f.revoked.RevokedAt = ptr(T0)
	f.other = newPrincipal("b", "coder-b", memory.KindAgent)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, p := range []memory.Principal{f.op, f.ag, f.revoked, f.other} {
			if err := tx.InsertPrincipal(ctx, p); err != nil {
				return err
			}
		}
		return nil
	})
	testPrincipalReads(t, s, f)
	testPrincipalLists(t, s, f)
	testRevokePrincipal(t, s, f)
	testSetCredential(t, s, f)
}

// testPrincipalReads: GetPrincipal by id and by name, scoped to a
// workspace except by id alone; malformed finds are refused.
func testPrincipalReads(t *testing.T, s store.Store, f principalFixture) {
	ctx := t.Context()
	ag, revoked, other := f.ag, f.revoked, f.other
	got, err := s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "a", ID: ag.ID})
	if err != nil {
		t.Fatalf("GetPrincipal: %v", err)
	}
	assertPrincipal(t, "GetPrincipal", got, ag)

	got, err = s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "a", Name: "coder"})
	if err != nil {
		t.Fatalf("GetPrincipalByName: %v", err)
	}
	assertPrincipal(t, "GetPrincipalByName", got, ag)

	got, err = s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "a", ID: revoked.ID})
	if err != nil {
		t.Fatalf("GetPrincipal(revoked): %v", err)
	}
	assertPrincipal(t, "GetPrincipal(revoked)", got, revoked)
	if !got.Revoked() {
		t.Fatal("revoked principal reads back unrevoked")
	}

	// By id alone is the one read across workspaces.
	got, err = s.GetPrincipal(ctx, store.PrincipalFind{ID: other.ID})
	if err != nil {
		t.Fatalf("FindPrincipal: %v", err)
	}
	assertPrincipal(t, "FindPrincipal", got, other)
	_, err = s.GetPrincipal(ctx, store.PrincipalFind{ID: memory.NewID()})
	assertNotFound(t, "FindPrincipal(missing)", err)

	// Every other read is scoped.
	_, err = s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "a", ID: other.ID})
	assertNotFound(t, "GetPrincipal(other workspace)", err)
	_, err = s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "a", Name: "coder-b"})
	assertNotFound(t, "GetPrincipalByName(other workspace)", err)
	_, err = s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "a", ID: memory.NewID()})
	assertNotFound(t, "GetPrincipal(missing)", err)
	// A find that names no principal, or one two ways, or a name with no
	// workspace, is refused rather than read as some other find.
	for _, f := range []store.PrincipalFind{{}, {Workspace: "a"}, {Workspace: "a", ID: ag.ID, Name: "coder"}, {Name: "coder"}} {
		if _, err := s.GetPrincipal(ctx, f); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetPrincipal(%+v) = %v, want a refusal", f, err)
		}
	}
}

// testPrincipalLists: ListPrincipals by kind, within a workspace.
func testPrincipalLists(t *testing.T, s store.Store, f principalFixture) {
	ctx := t.Context()
	agents, err := s.ListPrincipals(ctx, "a", memory.KindAgent)
	if err != nil {
		t.Fatalf("ListPrincipals: %v", err)
	}
	assertPrincipalSet(t, "ListPrincipals(agent)", agents, f.ag, f.revoked)
	everyone, err := s.ListPrincipals(ctx, "a", "")
	if err != nil {
		t.Fatalf("ListPrincipals: %v", err)
	}
	assertPrincipalSet(t, "ListPrincipals(any)", everyone, f.op, f.ag, f.revoked)
	none, err := s.ListPrincipals(ctx, "a", memory.KindUser)
	if err != nil {
		t.Fatalf("ListPrincipals: %v", err)
	}
	assertPrincipalSet(t, "ListPrincipals(user)", none)
}

// testRevokePrincipal: RevokePrincipal within its workspace only.
func testRevokePrincipal(t *testing.T, s store.Store, f principalFixture) {
	ctx := t.Context()
	ag, other := f.ag, f.other
	at := T0.Add(48 * time.Hour)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.RevokePrincipal(ctx, "a", ag.ID, at)
	})
	got, err := s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "a", ID: ag.ID})
	if err != nil {
		t.Fatalf("GetPrincipal: %v", err)
	}
	if got.RevokedAt == nil || !got.RevokedAt.Equal(memory.Canon(at)) {
		t.Fatalf("RevokedAt = %v, want %v", got.RevokedAt, at)
	}
	for _, c := range []struct{ ws, id string }{{"a", memory.NewID()}, {"a", other.ID}, {"b", ag.ID}} {
		err := s.Tx(ctx, func(tx store.Tx) error { return tx.RevokePrincipal(ctx, c.ws, c.id, at) })
		assertNotFound(t, "RevokePrincipal("+c.ws+")", err)
	}
	if got, _ := s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "b", ID: other.ID}); got.Revoked() {
		t.Fatal("RevokePrincipal across workspaces revoked a principal")
	}
}

// testSetCredential: SetCredential replaces the hash and reinstates a
// revoked principal.
func testSetCredential(t *testing.T, s store.Store, f principalFixture) {
	ctx := t.Context()
	ag := f.ag
	hash := []byte("0123456789abcdef0123456789abcdef")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.SetCredential(ctx, "a", ag.ID, hash)
	})
	got, err := s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "a", ID: ag.ID})
	if err != nil {
		t.Fatalf("GetPrincipal: %v", err)
	}
	if got.Revoked() || string(got.TokenHash) != string(hash) {
		t.Fatalf("after SetCredential: revoked %v, hash %q; want active with the new hash", got.RevokedAt, got.TokenHash)
	}
	for _, c := range []struct{ ws, id string }{{"a", memory.NewID()}, {"b", ag.ID}} {
		err := s.Tx(ctx, func(tx store.Tx) error { return tx.SetCredential(ctx, c.ws, c.id, hash) })
		assertNotFound(t, "SetCredential("+c.ws+")", err)
	}
}

func assertPrincipalSet(t *testing.T, what string, got []memory.Principal, want ...memory.Principal) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d principals, want %d", what, len(got), len(want))
	}
	byID := map[string]memory.Principal{}
	for _, p := range got {
		byID[p.ID] = p
	}
	for _, w := range want {
		g, ok := byID[w.ID]
		if !ok {
			t.Fatalf("%s: %s (%s) missing", what, w.ID, w.Name)
		}
		assertPrincipal(t, what, g, w)
	}
}

func testPrincipalNames(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	first := newPrincipal("a", "coder", memory.KindAgent)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertPrincipal(ctx, first) })

	// The same name in the same workspace is taken, whatever the kind.
	for _, kind := range []memory.PrincipalKind{memory.KindAgent, memory.KindOperator} {
		dup := newPrincipal("a", "coder", kind)
		err := s.Tx(ctx, func(tx store.Tx) error { return tx.InsertPrincipal(ctx, dup) })
		if !errors.Is(err, store.ErrExists) {
			t.Fatalf("InsertPrincipal(taken name, %s): got %v, want ErrExists", kind, err)
		}
		_, err = s.GetPrincipal(ctx, store.PrincipalFind{Workspace: "a", ID: dup.ID})
		assertNotFound(t, "GetPrincipal(rejected duplicate)", err)
	}

	// The same name in another workspace is fine.
	second := newPrincipal("b", "coder", memory.KindAgent)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertPrincipal(ctx, second) })
	for _, p := range []memory.Principal{first, second} {
		got, err := s.GetPrincipal(ctx, store.PrincipalFind{Workspace: p.Workspace, Name: "coder"})
		if err != nil {
			t.Fatalf("GetPrincipalByName(%s): %v", p.Workspace, err)
		}
		assertPrincipal(t, "GetPrincipalByName", got, p)
	}
}
