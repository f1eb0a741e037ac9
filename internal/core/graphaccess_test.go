package core

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// graphAccessService is a service over st with an operator and one agent
// of each trust level (two standard ones).
func graphAccessService(t *testing.T, st store.Store) (*Service, map[string]memory.Principal) {
	t.Helper()
	ctx := context.Background()
	ix := svctest.Index(t, st)
	pol := gate.Default()
	pol.RateLimit.Operator, pol.RateLimit.Agent = gate.Bucket{}, gate.Bucket{}
	s := New(Options{Store: st, Policy: pol, Index: ix})
	if _, _, err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	op := LocalOperator(memory.DefaultWorkspace)
	ps := map[string]memory.Principal{"op": op}
	for name, trust := range map[string]memory.Trust{"trusted": memory.Trusted, "std": memory.Standard, "std2": memory.Standard,
		"restricted": memory.Restricted, "ro": memory.ReadOnly} {
		cp, err := s.CreateAgent(ctx, op, name, trust)
		if err != nil {
			t.Fatal(err)
		}
		ps[name] = cp.Principal
	}
	return s, ps
}

// eachBackend runs fn on a fresh SQLite store and a fresh PostgreSQL
// database.
func eachBackend(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		u := pgtest.URL(t)
		st, err := postgres.Open(t.Context(), u, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
}

// graphFixture writes records at each access level and status, naming
// one node each, a public hub (person:alice) joined to every one of them,
// and returns who must see each node key, by the README's access rules.
func graphFixture(t *testing.T, s *Service, ps map[string]memory.Principal) map[string][]string {
	t.Helper()
	ctx := context.Background()
	write := func(who string, req WriteRequest) WriteResult {
		t.Helper()
		res, err := s.Write(ctx, ps[who], req)
		if err != nil {
			t.Fatalf("%s write: %v", who, err)
		}
		return res
	}
	write("op", WriteRequest{Type: memory.Belief, Content: "Jane Doe has an open HR case", Access: memory.Sensitive,
		Entities: []string{"person:jane-doe-hr-case-4411"}})
	write("std", WriteRequest{Type: memory.Belief, Content: "the std agent's own project", Access: memory.AgentOnly,
		Entities: []string{"project:std-private"}})
	write("op", WriteRequest{Type: memory.Belief, Content: "a user-level note", Access: memory.UserOnly,
		Entities: []string{"person:user-level"}})
	if res := write("restricted", WriteRequest{Type: memory.Belief, Content: "a proposal waiting for review",
		Entities: []string{"project:pending"}}); res.Record.Status != memory.Provisional {
		t.Fatalf("restricted write is %s, want provisional", res.Record.Status)
	}
	// A drop-in entity named only by a sensitive record.
	write("op", WriteRequest{Type: memory.Entity, Category: "observation", Content: "Secret Person: salary 1", Access: memory.Sensitive,
		Entities: []string{"entity:Secret_Person"}})
	write("std", WriteRequest{Type: memory.Belief, Content: "alice leads the platform team", Entities: []string{"person:alice"}})
	for _, to := range []string{"person:jane-doe-hr-case-4411", "project:std-private", "person:user-level", "project:pending", "entity:Secret_Person"} {
		if _, err := s.UpsertEdge(ctx, ps["op"], EdgeInput{From: "person:alice", To: to, Relation: "WORKS_WITH"}); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{"op", "trusted", "std", "std2", "restricted", "ro"}
	return map[string][]string{
		"person:alice":                 all,
		"person:jane-doe-hr-case-4411": {"op"},
		"project:std-private":          {"op", "std"},
		"person:user-level":            {"op"},
		"project:pending":              {"op", "restricted"},
		"entity:Secret_Person":         {"op"},
	}
}

// TestGraphVisibility: a node derived only from records a principal may
// not read is invisible to it on every graph read path of the service —
// get, list by label, neighbors, path, the drop-in's read_graph,
// search_nodes and open_nodes (kgcompat's TestKGGraphVisibility) — and so are the edges to it; on both
// backends.
func TestGraphVisibility(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		s, ps := graphAccessService(t, st)
		want := graphFixture(t, s, ps)
		for who, p := range ps {
			var neigh []string
			ns, err := s.Neighbors(ctx, p, NeighborRequest{Node: "person:alice"})
			if err != nil {
				t.Fatalf("%s neighbors: %v", who, err)
			}
			for _, n := range ns {
				neigh = append(neigh, n.Node.EntityKey())
			}
			page, err := s.NodesByLabels(ctx, p, nil, false, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			var listed []string
			for _, n := range page.Nodes {
				listed = append(listed, n.EntityKey())
			}
			for key, seers := range want {
				sees := slices.Contains(seers, who)
				_, gerr := s.GetNode(ctx, p, key, false)
				if (gerr == nil) != sees || (gerr != nil && fault.CodeOf(gerr) != fault.NotFound) {
					t.Errorf("%s get %s: err %v, want visible=%v", who, key, gerr, sees)
				}
				if key != "person:alice" && slices.Contains(neigh, key) != sees {
					t.Errorf("%s neighbors of alice hold %s = %v, want %v", who, key, !sees, sees)
				}
				if slices.Contains(listed, key) != sees {
					t.Errorf("%s nodes list holds %s = %v, want %v", who, key, !sees, sees)
				}
				pr, err := s.Path(ctx, p, "person:alice", key, 0, nil)
				if sees && (err != nil || !pr.Found) {
					t.Errorf("%s path to %s: %+v %v, want found", who, key, pr, err)
				}
				if !sees && (err == nil || fault.CodeOf(err) != fault.NotFound) {
					t.Errorf("%s path to %s: %+v %v, want not found", who, key, pr, err)
				}
			}
		}
		// Every path agrees with the one visibility function the
		// access-matrix test calls.
		for who, p := range ps {
			for key, seers := range want {
				n, err := s.store.GetNode(ctx, store.NodeFind{Workspace: p.Workspace, Label: strings.Split(key, ":")[0], Key: strings.SplitN(key, ":", 2)[1]})
				if err != nil {
					t.Fatal(err)
				}
				if got, err := s.NodeVisible(ctx, p, n); err != nil || got != slices.Contains(seers, who) {
					t.Errorf("NodeVisible(%s, %s) = %v %v", who, key, got, err)
				}
			}
		}
	})
}

// TestGraphVisibilityFollowsRecords: a node's visibility changes with the
// records that name it — approval, patching access, forgetting — in the
// store and in the traversal index alike.
func TestGraphVisibilityFollowsRecords(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		s, ps := graphAccessService(t, st)
		op, ro, std := ps["op"], ps["ro"], ps["std"]
		sees := func(p memory.Principal, key string) bool {
			t.Helper()
			_, err := s.GetNode(ctx, p, key, false)
			ns, nerr := s.Neighbors(ctx, p, NeighborRequest{Node: "person:hub"})
			if nerr != nil {
				t.Fatal(nerr)
			}
			inIndex := slices.ContainsFunc(ns, func(n Neighbor) bool { return n.Node.EntityKey() == key })
			if (err == nil) != inIndex {
				t.Fatalf("%s: store says visible=%v, index %v", key, err == nil, inIndex)
			}
			return err == nil
		}
		if _, err := s.UpsertNode(ctx, op, NodeInput{Label: "person", NaturalKey: "hub"}); err != nil {
			t.Fatal(err)
		}
		link := func(key string) {
			if _, err := s.UpsertEdge(ctx, op, EdgeInput{From: "person:hub", To: key, Relation: "WORKS_WITH"}); err != nil {
				t.Fatal(err)
			}
		}
		// Pending, then approved.
		res, err := s.Write(ctx, ps["restricted"], WriteRequest{Type: memory.Belief, Content: "pending fact", Entities: []string{"project:p"}})
		if err != nil {
			t.Fatal(err)
		}
		link("project:p")
		if sees(ro, "project:p") || !sees(op, "project:p") {
			t.Fatal("a pending record's node must be seen by operators and its writer only")
		}
		if _, err := s.Approve(ctx, op, res.ApprovalID, nil); err != nil {
			t.Fatal(err)
		}
		if !sees(ro, "project:p") {
			t.Fatal("an approved record's node is public")
		}
		// Public, then patched to agent-level: the grant shrinks.
		w, err := s.Write(ctx, std, WriteRequest{Type: memory.Belief, Content: "std's fact", Entities: []string{"project:q"}})
		if err != nil {
			t.Fatal(err)
		}
		link("project:q")
		if !sees(ro, "project:q") {
			t.Fatal("public record's node")
		}
		v := 1
		agent := memory.AgentOnly
		if _, err := s.Patch(ctx, std, w.Record.ID, PatchRequest{ExpectedVersion: &v, Access: &agent}); err != nil {
			t.Fatal(err)
		}
		if sees(ro, "project:q") || !sees(std, "project:q") || sees(ps["std2"], "project:q") {
			t.Fatal("after patching to agent, only the writer and operators see the node")
		}
		// Forgotten: nothing grants the node any more. A node that holds
		// only what the record gave it is erased with it (erase.go); one
		// an operator gave properties of its own stays, for operators
		// only (an update without access gives it no grant of its own).
		if _, err := s.UpsertNode(ctx, op, NodeInput{Label: "project", NaturalKey: "q", Properties: json.RawMessage(`{"name":"Q","team":"core"}`)}); err != nil {
			t.Fatal(err)
		}
		if sees(ro, "project:q") {
			t.Fatal("an operator's update without access must not widen who sees the node")
		}
		if _, err := s.Forget(ctx, std, w.Record.ID); err != nil {
			t.Fatal(err)
		}
		if sees(std, "project:q") || !sees(op, "project:q") {
			t.Fatal("a node no live record names is seen by operators only")
		}
		// A second, public record names it again.
		if _, err := s.Write(ctx, ps["std2"], WriteRequest{Type: memory.Belief, Content: "q again", Entities: []string{"project:q"}}); err != nil {
			t.Fatal(err)
		}
		if !sees(ro, "project:q") {
			t.Fatal("a public record names the node again")
		}
	})
}

// TestGraphSignalSeesOnlyVisibleNodes: a search naming a node the
// searcher may not see gets nothing through the graph signal, even for
// public records joined to it — the hidden node neither seeds the walk
// nor carries its mass.
func TestGraphSignalSeesOnlyVisibleNodes(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := t.Context()
	s, ps := graphAccessService(t, st)
	graphFixture(t, s, ps)
	search := func(who string) []string {
		t.Helper()
		res, err := s.Search(ctx, ps[who], SearchRequest{Query: "what about jane doe hr case 4411", Signals: []string{"graph"}, Route: "multi_hop"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, h := range res.Results {
			out = append(out, h.Record.Content)
		}
		return out
	}
	got := search("op")
	if !slices.Contains(got, "alice leads the platform team") {
		t.Fatalf("operator: the graph signal finds alice's record through jane's node: %q", got)
	}
	if got := search("ro"); len(got) != 0 {
		t.Fatalf("read-only agent: the graph signal walked a node it may not see: %q", got)
	}
	// A node the searcher sees may be named by records it may not read:
	// those are filtered out of the signal's candidates.
	if _, err := s.Write(ctx, ps["std"], WriteRequest{Type: memory.Belief, Content: "std's private note on alice",
		Access: memory.AgentOnly, Entities: []string{"person:alice"}}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Search(ctx, ps["ro"], SearchRequest{Query: "tell me about alice", Signals: []string{"graph"}, Route: "multi_hop"})
	if err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, h := range res.Results {
		contents = append(contents, h.Record.Content)
	}
	if !slices.Contains(contents, "alice leads the platform team") || slices.Contains(contents, "std's private note on alice") {
		t.Fatalf("read-only agent searching alice through the graph: %q", contents)
	}
}

// TestGraphDirectAccess: nodes and edges written directly carry an access
// level (default public); an agent-level node is seen by its writer and
// operators only, an upsert cannot take over a node its writer may not
// see, and edges to hidden nodes cannot be made.
func TestGraphDirectAccess(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		s, ps := graphAccessService(t, st)
		std, std2, op := ps["std"], ps["std2"], ps["op"]
		if _, err := s.UpsertNode(ctx, std, NodeInput{Label: "project", NaturalKey: "mine", Access: memory.AgentOnly}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpsertNode(ctx, std, NodeInput{Label: "project", NaturalKey: "open"}); err != nil {
			t.Fatal(err)
		}
		for who, want := range map[string]bool{"std": true, "op": true, "std2": false, "ro": false} {
			if _, err := s.GetNode(ctx, ps[who], "project:mine", false); (err == nil) != want {
				t.Errorf("%s get agent-level node: %v, want visible=%v", who, err, want)
			}
		}
		_, err := s.UpsertNode(ctx, std2, NodeInput{Label: "project", NaturalKey: "mine", Properties: json.RawMessage(`{"name":"taken"}`)})
		if fault.CodeOf(err) != fault.Conflict || fault.As(err).Details["field"] != "natural_key" {
			t.Fatalf("upsert over a hidden node = %v, want conflict on natural_key", err)
		}
		if _, err := s.UpsertEdge(ctx, std2, EdgeInput{From: "project:open", To: "project:mine", Relation: "DEPENDS_ON"}); fault.CodeOf(err) != fault.NotFound {
			t.Fatalf("edge to a hidden node = %v, want not_found", err)
		}
		// An agent-level edge between public nodes: hidden from others.
		if _, err := s.UpsertNode(ctx, op, NodeInput{Label: "project", NaturalKey: "other"}); err != nil {
			t.Fatal(err)
		}
		er, err := s.UpsertEdge(ctx, std, EdgeInput{From: "project:open", To: "project:other", Relation: "DEPENDS_ON", Access: memory.AgentOnly})
		if err != nil {
			t.Fatal(err)
		}
		for who, want := range map[string]bool{"std": true, "op": true, "std2": false} {
			ns, err := s.Neighbors(ctx, ps[who], NeighborRequest{Node: "project:open"})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(ns) == 1; got != want {
				t.Errorf("%s neighbors over an agent-level edge: %+v, want visible=%v", who, ns, want)
			}
		}
		if _, err := s.InvalidateEdge(ctx, std2, er.Edge.ID); fault.CodeOf(err) != fault.NotFound {
			t.Fatalf("invalidating a hidden edge = %v, want not_found", err)
		}
		// Access a principal may not give records is refused.
		if _, err := s.UpsertNode(ctx, std, NodeInput{Label: "project", NaturalKey: "s", Access: memory.Sensitive}); fault.CodeOf(err) != fault.PermissionDenied {
			t.Fatalf("standard agent giving sensitive = %v", err)
		}
		if _, err := s.UpsertNode(ctx, op, NodeInput{Label: "project", NaturalKey: "s", Access: "secret"}); fault.CodeOf(err) != fault.InvalidArgument {
			t.Fatalf("unknown access = %v", err)
		}
	})
}

// TestGraphScreen: credentials in a node key, node properties or edge
// properties, and personal data in properties, are refused with 422
// naming the field, never echoing the value, and nothing is stored (the
// drop-in's entity names, types and relation types: kgcompat's
// TestKGScreen). A record
// whose entity is a credential is quarantined and makes no node.
func TestGraphScreen(t *testing.T) {
	ctx := t.Context()
	s, ps := agentService(t, nil)
	op := ps["op"]
	const token = "mg_0190d5c1-7a3b-7c4d-8e5f-0a1b2c3d4e5f_Zq3xV8mN2pL7rT9wK4yH6jB1cF5gD0sA"
	const key = "sk-proj-4fQx9LmN2pR7tV3wZ8yB6cD1eG5hJ0kM"
	if _, err := s.UpsertNode(ctx, op, NodeInput{Label: "person", NaturalKey: "alice"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertNode(ctx, op, NodeInput{Label: "person", NaturalKey: "bob"}); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		call  func() error
		field string
	}{
		"token key": {func() error {
			_, err := s.UpsertNode(ctx, op, NodeInput{Label: "token", NaturalKey: token})
			return err
		}, "natural_key"},
		"key in properties": {func() error {
			_, err := s.UpsertNode(ctx, op, NodeInput{Label: "system", NaturalKey: "openai", Properties: json.RawMessage(`{"api_key":"` + key + `"}`)})
			return err
		}, "properties"},
		"email in properties": {func() error {
			_, err := s.UpsertNode(ctx, op, NodeInput{Label: "person", NaturalKey: "carol", Properties: json.RawMessage(`{"email":"carol.smith@example.com"}`)})
			return err
		}, "properties"},
		"key in edge properties": {func() error {
			_, err := s.UpsertEdge(ctx, op, EdgeInput{From: "person:alice", To: "person:bob", Relation: "WORKS_WITH", Properties: json.RawMessage(`{"note":"` + key + `"}`)})
			return err
		}, "properties"},
	} {
		err := tc.call()
		fe := fault.As(err)
		if fe.Code != fault.GateRejected || fe.Details["field"] != tc.field {
			t.Errorf("%s: %v, want gate_rejected on %s", name, err, tc.field)
			continue
		}
		msg, _ := json.Marshal(fe)
		if strings.Contains(string(msg), key) || strings.Contains(string(msg), token) || strings.Contains(string(msg), "carol.smith") {
			t.Errorf("%s: the refusal echoes the value: %s", name, msg)
		}
	}
	page, err := s.NodesByLabels(ctx, op, nil, true, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range page.Nodes {
		raw, _ := json.Marshal(n)
		if strings.Contains(string(raw), key) || strings.Contains(string(raw), token) || strings.Contains(string(raw), "carol") || n.NaturalKey == "ok" {
			t.Fatalf("a refused graph write left %s", raw)
		}
	}
	res, err := s.Write(ctx, ps["std"], WriteRequest{Type: memory.Belief, Content: "a harmless sentence", Entities: []string{"token:" + token}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Status != memory.Quarantined {
		t.Fatalf("record naming a credential entity: %s, want quarantined", res.Record.Status)
	}
	if _, err := s.store.GetNode(ctx, store.NodeFind{Workspace: op.Workspace, Label: "token", Key: token}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a quarantined record made a node: %v", err)
	}
}

// TestGraphGrantsBackfill: nodes whose grants were never computed (rows
// written before memgate kept them, as the migration leaves them) are
// judged from their records on first read, and the graph index's load
// computes and stores them.
func TestGraphGrantsBackfill(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		s, ps := graphAccessService(t, st)
		graphFixture(t, s, ps)
		// As the migration leaves a database: no grants on any node.
		page, err := s.NodesByLabels(ctx, ps["op"], nil, true, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		err = st.Tx(ctx, func(tx store.Tx) error {
			for _, n := range page.Nodes {
				n.Grants = nil
				if err := tx.UpdateNode(ctx, memory.DefaultWorkspace, n); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// A new service over the same store: nothing loaded yet.
		s2 := New(Options{Store: st, Policy: s.policy})
		if _, err := s2.GetNode(ctx, ps["ro"], "person:jane-doe-hr-case-4411", false); fault.CodeOf(err) != fault.NotFound {
			t.Fatalf("before the backfill: %v, want not_found", err)
		}
		if _, err := s2.GetNode(ctx, ps["ro"], "person:alice", false); err != nil {
			t.Fatalf("before the backfill: %v", err)
		}
		if err := s2.LoadGraph(ctx); err != nil {
			t.Fatal(err)
		}
		n, err := st.GetNode(ctx, store.NodeFind{Workspace: memory.DefaultWorkspace, Label: "person", Key: "jane-doe-hr-case-4411"})
		if err != nil || n.Grants == nil || len(n.Grants) != 1 || n.Grants[0].Access != memory.Sensitive {
			t.Fatalf("after the load the grants are stored: %+v %v", n.Grants, err)
		}
		ns, err := s2.Neighbors(ctx, ps["ro"], NeighborRequest{Node: "person:alice"})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range ns {
			if h.Node.NaturalKey == "jane-doe-hr-case-4411" {
				t.Fatal("the index shows the sensitive node after the backfill")
			}
		}
	})
}
