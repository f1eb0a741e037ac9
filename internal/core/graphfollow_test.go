package core

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// TestGraphCatchUp runs two services on one database file, as a server
// and a CLI (or two replicas) do: graph writes of one reach the other's
// in-memory graph index through the graph change log — new nodes and
// edges, an archived node, an invalidated edge and the edges a subject
// forget deletes — without a reload.
func TestGraphCatchUp(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memgate.db")
	open := func(bootstrap bool) *Service {
		st, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		s := New(Options{Store: st, Policy: gate.Default()})
		if bootstrap {
			if _, _, err := s.Bootstrap(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	writer, reader := open(true), open(false)
	op := LocalOperator(memory.DefaultWorkspace)
	node := func(key string) {
		t.Helper()
		props, _ := json.Marshal(map[string]string{"name": key})
		if _, err := writer.UpsertNode(ctx, op, NodeInput{Label: "person", NaturalKey: key, Properties: props}); err != nil {
			t.Fatal(err)
		}
	}
	edge := func(from, to string) memory.Edge {
		t.Helper()
		res, err := writer.UpsertEdge(ctx, op, EdgeInput{From: "person:" + from, To: "person:" + to, Relation: "WORKS_WITH"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Edge
	}
	neighbors := func() []string {
		t.Helper()
		hops, err := reader.Neighbors(ctx, op, NeighborRequest{Node: "person:alice", Depth: 2})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, h := range hops {
			keys = append(keys, h.Node.NaturalKey)
		}
		slices.Sort(keys)
		return keys
	}
	catchUp := func(want int) {
		t.Helper()
		if n, err := reader.CatchUpGraph(ctx); err != nil || n != want {
			t.Fatalf("CatchUpGraph = %d, %v; want %d changes", n, err, want)
		}
	}

	node("alice")
	if n, err := reader.CatchUpGraph(ctx); err != nil || n != 0 {
		t.Fatalf("catch-up before the first load = %d, %v", n, err) // the load reads everything
	}
	if got := neighbors(); len(got) != 0 { // loads the reader's index
		t.Fatalf("neighbors = %v", got)
	}
	node("bob")
	node("carol")
	edge("alice", "bob")
	edge("bob", "carol")
	if got := neighbors(); len(got) != 0 {
		t.Fatalf("the reader saw writes before catching up (test is broken): %v", got)
	}
	catchUp(4)
	if got := neighbors(); !slices.Equal(got, []string{"bob", "carol"}) {
		t.Fatalf("after catch-up: %v", got)
	}
	catchUp(0)

	ac := edge("alice", "carol")
	if _, err := writer.ArchiveNode(ctx, op, "person:bob"); err != nil {
		t.Fatal(err)
	}
	catchUp(2)
	if got := neighbors(); !slices.Equal(got, []string{"carol"}) {
		t.Fatalf("after archiving bob: %v", got)
	}
	if _, err := writer.InvalidateEdge(ctx, op, ac.ID); err != nil {
		t.Fatal(err)
	}
	catchUp(1)
	if got := neighbors(); len(got) != 0 {
		t.Fatalf("after invalidating alice-carol: %v", got)
	}

	// Forgetting carol deletes her edges; the reader drops them too.
	node("dave")
	edge("alice", "dave")
	edge("dave", "carol")
	if _, err := writer.ForgetSubject(ctx, op, "person:carol"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.CatchUpGraph(ctx); err != nil {
		t.Fatal(err)
	}
	if got := neighbors(); !slices.Equal(got, []string{"dave"}) {
		t.Fatalf("after forgetting carol: %v", got)
	}
}
