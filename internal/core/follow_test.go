package core

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
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

// readCounter is a store that counts the record heads read outside
// transactions, and can hide the change log.
type readCounter struct {
	store.Store
	hidden atomic.Bool
	heads  atomic.Int64
}

func (c *readCounter) ListChanges(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	if c.hidden.Load() {
		return nil, nil
	}
	return c.Store.ListChanges(ctx, after, limit)
}

func (c *readCounter) GetRecord(ctx context.Context, ws, id string) (memory.Record, error) {
	c.heads.Add(1)
	return c.Store.GetRecord(ctx, ws, id)
}

func (c *readCounter) GetRecords(ctx context.Context, ws string, ids []string) (map[string]memory.Record, error) {
	c.heads.Add(int64(len(ids)))
	return c.Store.GetRecords(ctx, ws, ids)
}

// handOffService is a service over rc with the wall clock (times to the
// nanosecond, which the store keeps to the microsecond).
func handOffService(t *testing.T, rc store.Store, bootstrap bool) *Service {
	t.Helper()
	ix := retrieve.New(retrieve.Options{})
	if _, err := ix.Load(t.Context(), rc); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: rc, Policy: gate.Default(), Index: ix})
	if bootstrap {
		if _, _, err := s.Bootstrap(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// A write's own records reach the search index without being read back
// (the hand-off), and are what a read from the store returns; another
// process's writes, and a later change by another process of a record
// this one wrote, are read from the store, so the index holds the
// record's latest version.
func TestCatchUpTakesOwnWritesFromTheHandOff(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "memgate.db")
	open := func() *sqlite.Store {
		st, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	rc := &readCounter{Store: open()}
	a := handOffService(t, rc, true)
	b := handOffService(t, open(), false) // another process on the same file
	op := LocalOperator(memory.DefaultWorkspace)
	found := func(q string) []string {
		t.Helper()
		res, err := a.Search(ctx, op, SearchRequest{Query: q, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range res.Results {
			ids = append(ids, h.Record.ID)
		}
		return ids
	}

	// A's own writes, by Write and in a graph transaction: searchable when
	// the call returns, no head read back.
	before := rc.heads.Load()
	w1, err := a.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: "the lighthouse keeper paints the railings teal", Entities: []string{"person:ada"}})
	if err != nil {
		t.Fatal(err)
	}
	err = a.InGraphTx(ctx, op, func(g *GraphTx) error {
		_, err := g.WriteRecord(ctx, WriteRequest{Type: memory.Entity, Content: "the lighthouse keeper rows to the island"}, RecordOptions{ExactByCaller: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := rc.heads.Load() - before; n != 0 {
		t.Fatalf("the catch-ups after this process's own writes read %d heads from the store, want 0", n)
	}
	if got := found("lighthouse keeper"); len(got) != 2 {
		t.Fatalf("%d of this process's 2 writes are searchable when their calls return", len(got))
	}

	// The handed record is the head the store reads back.
	rc.hidden.Store(true)
	w2, err := a.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: "the ferry timetable changes in october",
		Metadata: json.RawMessage(`{"k": 1}`), Entities: []string{"place:harbour"}})
	if err != nil {
		t.Fatal(err)
	}
	a.handed.mu.Lock()
	h, ok := a.handed.recs[store.Change{Workspace: op.Workspace, RecordID: w2.Record.ID}]
	a.handed.mu.Unlock()
	if !ok {
		t.Fatal("a committed write is not in the hand-off")
	}
	stored, err := rc.Store.GetRecord(ctx, op.Workspace, w2.Record.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*h.r, stored) {
		t.Fatalf("the handed record differs from the head the store reads back:\nhanded %+v\nstored %+v", *h.r, stored)
	}

	// Another process changes w1 after this process wrote it, before this
	// process's index has caught up: the index must take the other
	// process's version from the store, not this process's hand-off.
	v := 1
	c := "the lighthouse keeper retired to a glacier village"
	if _, err := b.Patch(ctx, op, w1.Record.ID, PatchRequest{ExpectedVersion: &v, Content: &c}); err != nil {
		t.Fatal(err)
	}
	// As if this process's write of w1 were still waiting in the hand-off,
	// at a seq before the other process's change.
	a.handed.put(txWrites{{ws: op.Workspace, handedRecord: handedRecord{seq: h.seq, r: &w1.Record}}})
	if _, err := b.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: "the mountain hut serves barley soup"}); err != nil {
		t.Fatal(err)
	}
	rc.hidden.Store(false)
	before = rc.heads.Load()
	if _, err := a.index.CatchUp(ctx, &handedSource{Source: a.store, h: &a.handed}); err != nil {
		t.Fatal(err)
	}
	if n := rc.heads.Load() - before; n != 2 {
		t.Fatalf("the catch-up read %d heads from the store, want 2 (the other process's write and its change of w1)", n)
	}
	if got := found("glacier village"); len(got) != 1 || got[0] != w1.Record.ID {
		t.Fatalf("the other process's version of w1 is not what the index holds: search finds %v", got)
	}
	if got := found("teal railings"); len(got) != 0 {
		t.Fatalf("this process's older version of w1 is searchable: %v", got)
	}
	if got := found("barley soup"); len(got) != 1 {
		t.Fatalf("the other process's write is found by %d results, want 1", len(got))
	}
	if got := found("ferry timetable"); len(got) != 1 {
		t.Fatalf("this process's write made while the log was hidden is found by %d results, want 1", len(got))
	}
	a.handed.mu.Lock()
	left := len(a.handed.recs)
	a.handed.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d records left in the hand-off after the catch-up passed them", left)
	}
}
