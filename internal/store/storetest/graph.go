package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func graphTests() []struct {
	name string
	fn   func(t *testing.T, s store.Store)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Nodes", testNodes},
		{"EnsureNode", testEnsureNode},
		{"EnsureNodeConcurrent", testEnsureNodeConcurrent},
		{"EnsureEdge", testEnsureEdge},
		{"Edges", testEdges},
		{"ScanGraph", testScanGraph},
		{"MentioningRecords", testMentioningRecords},
		{"GraphChanges", testGraphChanges},
		{"GraphAccess", testGraphAccess},
	}
}

// testGraphAccess: a node's own grant and its record grants, and an
// edge's own grant, are stored and read back as written; grants that
// were never computed (nil) stay distinguishable from none ([]).
func testGraphAccess(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	plain, owned := NewNode("person", "plain"), NewNode("person", "owned")
	owned.Access, owned.Writer = memory.AgentOnly, "claude"
	owned.Grants = []memory.Grant{{Access: memory.Sensitive, Writer: "op"}, {Access: memory.AgentOnly, Writer: "bob"}}
	empty := NewNode("person", "empty")
	empty.Grants = []memory.Grant{}
	mustNodes(t, s, "a", plain, owned, empty)
	for _, want := range []memory.Node{plain, owned, empty} {
		got, err := s.GetNode(ctx, store.NodeFind{Workspace: "a", ID: want.ID})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("GetNode = %+v, %v; want %+v", got, err, want)
		}
	}
	plain.Access, plain.Writer, plain.Grants = memory.Public, "op", []memory.Grant{{Access: memory.Public, Writer: "x"}}
	owned.Grants = nil
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.UpdateNode(ctx, "a", plain); err != nil {
			return err
		}
		return tx.UpdateNode(ctx, "a", owned)
	})
	for _, want := range []memory.Node{plain, owned} {
		if got, err := s.GetNode(ctx, store.NodeFind{Workspace: "a", Label: want.Label, Key: want.NaturalKey}); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("after update = %+v, %v; want %+v", got, err, want)
		}
	}
	e := NewEdge(plain.ID, owned.ID, "KNOWS")
	e.Access, e.Writer = memory.AgentOnly, "claude"
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertEdge(ctx, "a", e) })
	if got, err := s.GetEdge(ctx, "a", e.ID); err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("GetEdge = %+v, %v; want %+v", got, err, e)
	}
	e.Access, e.Writer = memory.Public, ""
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.UpdateEdge(ctx, "a", e) })
	if got, err := s.GetEdge(ctx, "a", e.ID); err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("GetEdge after update = %+v, %v; want %+v", got, err, e)
	}
	var scanned []memory.Node
	if err := s.ScanGraph(ctx, func(ws string, n *memory.Node, _ *memory.Edge) error {
		if n != nil {
			scanned = append(scanned, *n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range scanned {
		if n.ID == owned.ID && n.Grants != nil {
			t.Fatalf("ScanGraph: uncomputed grants read as %v", n.Grants)
		}
		if n.ID == empty.ID && (n.Grants == nil || len(n.Grants) != 0) {
			t.Fatalf("ScanGraph: empty grants read as %v", n.Grants)
		}
	}
}

// NewNode returns a valid active node.
func NewNode(label, key string) memory.Node {
	return memory.Node{ID: memory.NewID(), Label: label, NaturalKey: key, Properties: json.RawMessage(`{"name":"` + key + `"}`),
		Provenance: memory.ProvOperator, Status: memory.NodeActive, CreatedAt: T0, UpdatedAt: T0}
}

// NewEdge returns a valid live edge.
func NewEdge(from, to, relation string) memory.Edge {
	return memory.Edge{ID: memory.NewID(), From: from, To: to, Relation: relation, Weight: 1, Properties: json.RawMessage(`{}`),
		ObservedAt: T0, CreatedAt: T0, UpdatedAt: T0}
}

func mustNodes(t *testing.T, s store.Store, ws string, ns ...memory.Node) {
	t.Helper()
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, n := range ns {
			if err := tx.InsertNode(ctx, ws, n); err != nil {
				return err
			}
		}
		return nil
	})
}

func testNodes(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	alice, bob, sys := NewNode("person", "alice"), NewNode("person", "bob"), NewNode("system", "alice")
	mustNodes(t, s, "a", alice, bob, sys)
	got, err := s.GetNode(ctx, store.NodeFind{Workspace: "a", ID: alice.ID})
	if err != nil || !reflect.DeepEqual(got, alice) {
		t.Fatalf("GetNode = %+v, %v; want %+v", got, err, alice)
	}
	if got, err := s.GetNode(ctx, store.NodeFind{Workspace: "a", Label: "system", Key: "alice"}); err != nil || got.ID != sys.ID {
		t.Fatalf("GetNodeByKey = %+v, %v", got, err)
	}
	for _, f := range []store.NodeFind{
		{Workspace: "b", ID: alice.ID},
		{Workspace: "b", Label: "person", Key: "alice"},
		{Workspace: "a", Label: "person", Key: "carol"},
	} {
		if _, err := s.GetNode(ctx, f); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("lookup across workspaces or of a missing key = %v, want ErrNotFound", err)
		}
	}
	// A find that names no node, or one two ways, is refused rather than
	// read as some other find.
	for _, f := range []store.NodeFind{{Workspace: "a"}, {ID: alice.ID}, {Workspace: "a", ID: alice.ID, Label: "person", Key: "alice"}} {
		if _, err := s.GetNode(ctx, f); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetNode(%+v) = %v, want a refusal", f, err)
		}
	}
	// The natural key is unique per (workspace, label) only.
	dup := NewNode("person", "alice")
	if err := s.Tx(ctx, func(tx store.Tx) error { return tx.InsertNode(ctx, "a", dup) }); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate key = %v, want ErrExists", err)
	}
	mustNodes(t, s, "b", dup)

	ids := func(ns []memory.Node) []string {
		out := []string{}
		for _, n := range ns {
			out = append(out, n.ID)
		}
		return out
	}
	list := func(q store.NodeQuery) []string {
		t.Helper()
		ns, err := s.ListNodes(ctx, "a", q)
		if err != nil {
			t.Fatal(err)
		}
		return ids(ns)
	}
	sorted := sortedIDs(alice.ID, bob.ID, sys.ID)
	if got := list(store.NodeQuery{}); !reflect.DeepEqual(got, sorted) {
		t.Fatalf("ListNodes = %v, want %v", got, sorted)
	}
	if got := list(store.NodeQuery{Labels: []string{"person"}}); !reflect.DeepEqual(got, sortedIDs(alice.ID, bob.ID)) {
		t.Fatalf("ListNodes(person) = %v", got)
	}
	if got := list(store.NodeQuery{After: sorted[0], Limit: 1}); !reflect.DeepEqual(got, sorted[1:2]) {
		t.Fatalf("ListNodes page = %v, want %v", got, sorted[1:2])
	}

	// Update: archive bob, rename sys; a taken key is ErrExists.
	bob.Status, bob.UpdatedAt = memory.NodeArchived, T0.Add(time.Hour)
	sys.NaturalKey = "sso"
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.UpdateNode(ctx, "a", bob); err != nil {
			return err
		}
		return tx.UpdateNode(ctx, "a", sys)
	})
	if got := list(store.NodeQuery{Statuses: []memory.NodeStatus{memory.NodeArchived}}); !reflect.DeepEqual(got, []string{bob.ID}) {
		t.Fatalf("archived = %v", got)
	}
	if got, _ := s.GetNode(ctx, store.NodeFind{Workspace: "a", ID: bob.ID}); !reflect.DeepEqual(got, bob) {
		t.Fatalf("updated node %+v", got)
	}
	clash := bob
	clash.NaturalKey = "alice"
	if err := s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateNode(ctx, "a", clash) }); !errors.Is(err, store.ErrExists) {
		t.Fatalf("update onto a taken key = %v, want ErrExists", err)
	}
	if err := s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateNode(ctx, "b", bob) }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update in another workspace = %v, want ErrNotFound", err)
	}
}

func testEnsureNode(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	alice := NewNode("person", "alice")
	var got memory.Node
	var created bool
	mustTx(t, s, func(ctx context.Context, tx store.Tx) (err error) {
		got, created, err = tx.EnsureNode(ctx, "a", alice)
		return err
	})
	if !created || !reflect.DeepEqual(got, alice) {
		t.Fatalf("EnsureNode of a new key = %+v, %v; want %+v, created", got, created, alice)
	}
	// The same key again, under another id: the stored node, untouched.
	again := NewNode("person", "alice")
	again.Properties = json.RawMessage(`{"name":"other"}`)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) (err error) {
		got, created, err = tx.EnsureNode(ctx, "a", again)
		return err
	})
	if created || !reflect.DeepEqual(got, alice) {
		t.Fatalf("EnsureNode of a taken key = %+v, %v; want the stored %+v", got, created, alice)
	}
	if _, err := s.GetNode(ctx, store.NodeFind{Workspace: "a", ID: again.ID}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the second id was stored: %v", err)
	}
	// Keys are per workspace; the change log names only inserted nodes.
	head, err := s.GraphChangeHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) (err error) {
		got, created, err = tx.EnsureNode(ctx, "b", again)
		return err
	})
	if !created || got.ID != again.ID {
		t.Fatalf("EnsureNode in another workspace = %+v, %v", got, created)
	}
	chs, err := s.ListGraphChanges(ctx, head, 10)
	if err != nil || len(chs) != 1 || chs[0].ID != again.ID || chs[0].Workspace != "b" {
		t.Fatalf("graph changes after EnsureNode = %+v, %v; want one, for the inserted node", chs, err)
	}
}

// testEnsureNodeConcurrent: transactions that introduce the same new key
// at once all succeed and agree on one node.
func testEnsureNodeConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	const writers = 16
	ids := make([]string, writers)
	var created atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			err := s.Tx(ctx, func(tx store.Tx) error {
				n, ok, err := tx.EnsureNode(ctx, "a", NewNode("technology", "postgresql"))
				if err != nil {
					return err
				}
				if ok {
					created.Add(1)
				}
				ids[w] = n.ID
				// Go on writing in the same transaction, as a record
				// write does after linking its entities.
				_, err = tx.AppendAudit(ctx, "a", NewAuditEntry("test", `{}`))
				return err
			})
			if err != nil {
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent EnsureNode: %v", err)
	}
	ns, err := s.ListNodes(ctx, "a", store.NodeQuery{})
	if err != nil || len(ns) != 1 || created.Load() != 1 {
		t.Fatalf("%d nodes (%v), %d created; want 1 and 1", len(ns), err, created.Load())
	}
	for w, id := range ids {
		if id != ns[0].ID {
			t.Fatalf("writer %d got node %s, want %s", w, id, ns[0].ID)
		}
	}
}

// testEnsureEdge: a live edge is inserted once; the same nodes and
// relation again, at once from many transactions too, give the live one.
func testEnsureEdge(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	a, b := NewNode("person", "alice"), NewNode("person", "bob")
	mustNodes(t, s, "a", a, b)
	first := NewEdge(a.ID, b.ID, "KNOWS")
	var got memory.Edge
	var created bool
	mustTx(t, s, func(ctx context.Context, tx store.Tx) (err error) {
		got, created, err = tx.EnsureEdge(ctx, "a", first)
		return err
	})
	if !created || !reflect.DeepEqual(got, first) {
		t.Fatalf("EnsureEdge of a new edge = %+v, %v", got, created)
	}
	// Invalidated, the edge no longer counts: a new one is inserted.
	first.InvalidatedAt = &T0
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.UpdateEdge(ctx, "a", first) })

	const writers = 16
	var wg sync.WaitGroup
	var inserted atomic.Int32
	ids := make([]string, writers)
	errs := make(chan error, writers)
	start := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			<-start
			err := s.Tx(ctx, func(tx store.Tx) error {
				e, ok, err := tx.EnsureEdge(ctx, "a", NewEdge(a.ID, b.ID, "KNOWS"))
				if ok {
					inserted.Add(1)
				}
				ids[w] = e.ID
				return err
			})
			if err != nil {
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent EnsureEdge: %v", err)
	}
	live, err := s.FindLiveEdge(ctx, "a", a.ID, b.ID, "KNOWS")
	if err != nil || live.ID == first.ID || inserted.Load() != 1 {
		t.Fatalf("live edge %+v (%v), %d inserted; want one new edge", live, err, inserted.Load())
	}
	for w, id := range ids {
		if id != live.ID {
			t.Fatalf("writer %d got edge %s, want %s", w, id, live.ID)
		}
	}
}

func testEdges(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	alice, pg, proj := NewNode("person", "alice"), NewNode("system", "postgresql"), NewNode("project", "atlas")
	mustNodes(t, s, "a", alice, pg, proj)
	other := NewNode("person", "zed")
	mustNodes(t, s, "b", other)
	prefers, works := NewEdge(alice.ID, pg.ID, "PREFERS"), NewEdge(alice.ID, proj.ID, "WORKS_WITH")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.InsertEdge(ctx, "a", prefers); err != nil {
			return err
		}
		return tx.InsertEdge(ctx, "a", works)
	})
	if got, err := s.GetEdge(ctx, "a", prefers.ID); err != nil || !reflect.DeepEqual(got, prefers) {
		t.Fatalf("GetEdge = %+v, %v; want %+v", got, err, prefers)
	}
	if got, err := s.FindLiveEdge(ctx, "a", alice.ID, pg.ID, "PREFERS"); err != nil || got.ID != prefers.ID {
		t.Fatalf("FindLiveEdge = %+v, %v", got, err)
	}
	if _, err := s.FindLiveEdge(ctx, "a", pg.ID, alice.ID, "PREFERS"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("reverse FindLiveEdge = %v", err)
	}
	// One live edge per (from, to, relation); endpoints must be nodes of
	// the workspace.
	for name, e := range map[string]memory.Edge{
		"duplicate live edge": NewEdge(alice.ID, pg.ID, "PREFERS"),
	} {
		if err := s.Tx(ctx, func(tx store.Tx) error { return tx.InsertEdge(ctx, "a", e) }); !errors.Is(err, store.ErrExists) {
			t.Fatalf("%s = %v, want ErrExists", name, err)
		}
	}
	for name, e := range map[string]memory.Edge{
		"missing endpoint":         NewEdge(alice.ID, memory.NewID(), "USES"),
		"endpoint in another ws":   NewEdge(alice.ID, other.ID, "USES"),
		"edge written to other ws": NewEdge(alice.ID, pg.ID, "USES"),
	} {
		ws := "a"
		if name == "edge written to other ws" {
			ws = "b"
		}
		if err := s.Tx(ctx, func(tx store.Tx) error { return tx.InsertEdge(ctx, ws, e) }); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s = %v, want ErrNotFound", name, err)
		}
	}

	// Invalidation keeps history; a new live edge may then be added.
	inv := prefers
	at := T0.Add(time.Hour)
	inv.InvalidatedAt, inv.UpdatedAt = &at, at
	again := NewEdge(alice.ID, pg.ID, "PREFERS")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.UpdateEdge(ctx, "a", inv); err != nil {
			return err
		}
		return tx.InsertEdge(ctx, "a", again)
	})
	edgeIDs := func(q store.EdgeQuery) []string {
		t.Helper()
		es, err := s.ListEdges(ctx, "a", q)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, e := range es {
			out = append(out, e.ID)
		}
		return out
	}
	if got := edgeIDs(store.EdgeQuery{Node: pg.ID}); !reflect.DeepEqual(got, []string{again.ID}) {
		t.Fatalf("live edges of pg = %v, want only the new one", got)
	}
	if got := edgeIDs(store.EdgeQuery{Node: pg.ID, IncludeInvalidated: true}); !reflect.DeepEqual(got, sortedIDs(prefers.ID, again.ID)) {
		t.Fatalf("all edges of pg = %v", got)
	}
	if got := edgeIDs(store.EdgeQuery{}); !reflect.DeepEqual(got, sortedIDs(works.ID, again.ID)) {
		t.Fatalf("live edges of the workspace = %v", got)
	}
	if es, _ := s.ListEdges(ctx, "b", store.EdgeQuery{IncludeInvalidated: true}); len(es) != 0 {
		t.Fatalf("edges leak across workspaces: %v", es)
	}
	if got, _ := s.GetEdge(ctx, "a", prefers.ID); got.InvalidatedAt == nil || !got.InvalidatedAt.Equal(at) {
		t.Fatalf("invalidated edge %+v", got)
	}

	// Delete is for good.
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.DeleteEdge(ctx, "a", works.ID) })
	if _, err := s.GetEdge(ctx, "a", works.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted edge = %v", err)
	}
	if err := s.Tx(ctx, func(tx store.Tx) error { return tx.DeleteEdge(ctx, "a", works.ID) }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting twice = %v, want ErrNotFound", err)
	}
}

func testScanGraph(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a", "b")
	n1, n2, n3 := NewNode("person", "a1"), NewNode("person", "a2"), NewNode("person", "b1")
	mustNodes(t, s, "a", n1, n2)
	mustNodes(t, s, "b", n3)
	e := NewEdge(n1.ID, n2.ID, "RELATED_TO")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertEdge(ctx, "a", e) })
	var seen []string
	err := s.ScanGraph(t.Context(), func(ws string, n *memory.Node, e *memory.Edge) error {
		if n != nil {
			seen = append(seen, ws+"/node/"+n.ID)
		} else {
			seen = append(seen, ws+"/edge/"+e.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ns := sortedIDs(n1.ID, n2.ID, n3.ID)
	want := []string{}
	for _, id := range ns {
		ws := "a"
		if id == n3.ID {
			ws = "b"
		}
		want = append(want, ws+"/node/"+id)
	}
	want = append(want, "a/edge/"+e.ID)
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("ScanGraph order %v, want %v", seen, want)
	}
}

func sortedIDs(ids ...string) []string {
	out := append([]string(nil), ids...)
	slices.Sort(out)
	return out
}

func testMentioningRecords(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	r1 := NewRecord("one", func(r *memory.Record) { r.Entities = []string{"person:alice", "project:x"} })
	r2 := NewRecord("two", func(r *memory.Record) { r.Entities = []string{"person:alice"} })
	r3 := NewRecord("three", func(r *memory.Record) { r.Entities = []string{"person:bob"} })
	rb := NewRecord("b", func(r *memory.Record) { r.Entities = []string{"person:alice"} })
	mustInsert(t, s, "a", r1, r2, r3)
	mustInsert(t, s, "b", rb)
	got, err := s.MentioningRecords(ctx, "a", "person:alice", 10)
	if want := sortedIDs(r1.ID, r2.ID); err != nil || len(got) != 2 || got[0] != want[1] || got[1] != want[0] {
		t.Fatalf("MentioningRecords = %v, %v; want %v newest first", got, err, want)
	}
	if got, _ := s.MentioningRecords(ctx, "a", "person:alice", 1); len(got) != 1 {
		t.Fatalf("limit 1 gave %v", got)
	}
	// A head that no longer names the entity no longer links to it.
	mustUpdate(t, s, "a", NextVersion(r1, T0.Add(time.Hour), func(n *memory.Record) { n.Entities = []string{"project:x"} }))
	if got, _ := s.MentioningRecords(ctx, "a", "person:alice", 10); len(got) != 1 || got[0] != r2.ID {
		t.Fatalf("after the update: %v", got)
	}
}

// testGraphChanges: every node and edge write appends one entry to the
// graph's change log in its transaction (a rolled-back one appends
// nothing, a failed update appends nothing), in commit order, pageable.
func testGraphChanges(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	start, err := s.GraphChangeHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob, carol := NewNode("person", "alice"), NewNode("person", "bob"), NewNode("person", "carol")
	mustNodes(t, s, "a", alice, bob)
	mustNodes(t, s, "b", carol)
	knows := NewEdge(alice.ID, bob.ID, "RELATED_TO")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertEdge(ctx, "a", knows) })
	alice.Status, alice.UpdatedAt = memory.NodeArchived, T0.Add(time.Hour)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.UpdateNode(ctx, "a", alice) })
	inv := T0.Add(time.Hour)
	knows.InvalidatedAt, knows.UpdatedAt = &inv, inv
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.UpdateEdge(ctx, "a", knows) })
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.DeleteEdge(ctx, "a", knows.ID) })
	_ = s.Tx(ctx, func(tx store.Tx) error {
		if err := tx.InsertNode(ctx, "a", NewNode("person", "never")); err != nil {
			return err
		}
		return context.Canceled
	})
	if err := s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateNode(ctx, "a", NewNode("person", "ghost")) }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("update of a missing node = %v", err)
	}

	chs, err := s.ListGraphChanges(ctx, start, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a/node/" + alice.ID, "a/node/" + bob.ID, "b/node/" + carol.ID, "a/edge/" + knows.ID,
		"a/node/" + alice.ID, "a/edge/" + knows.ID, "a/edge/" + knows.ID}
	if len(chs) != len(want) {
		t.Fatalf("ListGraphChanges = %+v, want %d entries", chs, len(want))
	}
	for i, ch := range chs {
		if ch.Workspace+"/"+string(ch.Kind)+"/"+ch.ID != want[i] || (i > 0 && ch.Seq <= chs[i-1].Seq) {
			t.Fatalf("change %d = %+v, want %s", i, ch, want[i])
		}
	}
	if head, err := s.GraphChangeHead(ctx); err != nil || head != chs[len(chs)-1].Seq {
		t.Fatalf("GraphChangeHead = %d, %v; want %d", head, err, chs[len(chs)-1].Seq)
	}
	if page, err := s.ListGraphChanges(ctx, chs[2].Seq, 2); err != nil || len(page) != 2 || page[0].Seq != chs[3].Seq || page[1].Seq != chs[4].Seq {
		t.Fatalf("paging = %+v, %v", page, err)
	}
}
