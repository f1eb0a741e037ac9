package core

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// logValve is a store whose change logs can be hidden from the indexes,
// and which counts their reads.
type logValve struct {
	store.Store
	hidden       atomic.Bool
	reads, graph atomic.Int64
}

func (v *logValve) ListChanges(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	v.reads.Add(1)
	if v.hidden.Load() {
		return nil, nil
	}
	return v.Store.ListChanges(ctx, after, limit)
}

func (v *logValve) ListGraphChanges(ctx context.Context, after int64, limit int) ([]store.GraphChange, error) {
	v.graph.Add(1)
	if v.hidden.Load() {
		return nil, nil
	}
	return v.Store.ListGraphChanges(ctx, after, limit)
}

// The search and graph indexes have one input after they are loaded: the
// store's change logs, read before a write returns. With the logs hidden
// a committed write is neither searchable nor traversable (nothing hands
// it to the indexes on the side); once the logs show it, the next write
// makes it so.
func TestIndexesFollowOnlyTheChangeLog(t *testing.T) {
	_, st, _ := newPortableService(t, false)
	ctx := t.Context()
	v := &logValve{Store: st}
	s, _ := portableServiceOn(t, v, true)
	if err := s.LoadGraph(ctx); err != nil {
		t.Fatal(err)
	}
	op := LocalOperator(memory.DefaultWorkspace)
	write := func(content string, entities ...string) {
		t.Helper()
		if _, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: content, Entities: entities}); err != nil {
			t.Fatal(err)
		}
	}
	found := func(q string) int {
		t.Helper()
		res, err := s.Search(ctx, op, SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Results)
	}
	neighbors := func() int {
		t.Helper()
		ns, err := s.Neighbors(ctx, op, NeighborRequest{Node: "person:alice"})
		if err != nil {
			t.Fatal(err)
		}
		return len(ns)
	}

	reads := v.reads.Load()
	write("alice works with bob on the ledger", "person:alice", "person:bob")
	if v.reads.Load() == reads {
		t.Fatal("a write returned without reading the change log")
	}
	if n := found("ledger"); n != 1 {
		t.Fatalf("a write is found by %d results when its call returns, want 1", n)
	}

	v.hidden.Store(true)
	write("the zebra crossing by the harbour is repainted")
	if _, err := s.UpsertEdge(ctx, op, EdgeInput{From: "person:alice", To: "person:bob", Relation: "WORKS_WITH"}); err != nil {
		t.Fatal(err)
	}
	if n := found("zebra harbour"); n != 0 {
		t.Fatalf("with the change log hidden a write is found (%d results): the index was fed another way", n)
	}
	if n := neighbors(); n != 0 {
		t.Fatalf("with the graph change log hidden an edge is traversable (%d neighbours): the graph was fed another way", n)
	}

	v.hidden.Store(false)
	write("a second zebra note about the harbour")
	if n := found("zebra harbour"); n != 2 {
		t.Fatalf("after the log shows them, %d zebra records are found, want 2", n)
	}
	if n := neighbors(); n != 1 {
		t.Fatalf("after the graph log shows it, alice has %d neighbours, want 1", n)
	}
}

// Concurrent writers share catch-ups, and when they are done the index
// holds every record's latest version (a searchable patch, not an older
// read applied after it).
func TestConcurrentWritesIndexLatest(t *testing.T) {
	s, _, _ := newPortableService(t, true)
	ctx := t.Context()
	op := LocalOperator(memory.DefaultWorkspace)
	const writers, patches = 4, 8
	topics := []string{"the kitchen sink leaks on mondays", "quarterly tax filing is due in april",
		"the cat prefers salmon over chicken", "our train to vienna leaves at noon"}
	ids := make([]string, writers)
	for i := range ids {
		res, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: topics[i]})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.Record.ID
	}
	words := []string{"amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor"}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			for k, w := range words[:patches] {
				v := k + 1
				c := w + ": " + topics[i]
				if _, err := s.Patch(ctx, op, id, PatchRequest{ExpectedVersion: &v, Content: &c}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	res, err := s.Search(ctx, op, SearchRequest{Query: words[patches-1], K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != writers {
		t.Fatalf("%d records found by their latest content, want %d", len(res.Results), writers)
	}
	for _, old := range words[:patches-1] {
		res, err := s.Search(ctx, op, SearchRequest{Query: old, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Results) != 0 {
			t.Fatalf("%d records found by an older version's word %q", len(res.Results), old)
		}
	}
}
