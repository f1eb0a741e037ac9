package core

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// TestForgetReleasesOnlyTheRecordsNodes: forgetting a record erases the
// nodes only it named (key and name hold its words), and keeps a node
// another record still names and a node someone gave properties of its
// own; the record's gateway messages go with it.
func TestForgetReleasesOnlyTheRecordsNodes(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := New(Options{Store: st, Policy: gate.Default()})
	if _, _, err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	op := LocalOperator(memory.DefaultWorkspace)
	if _, err := s.UpsertNode(ctx, op, NodeInput{Label: "project", NaturalKey: "atlas", Properties: json.RawMessage(`{"name":"Atlas","owner":"ops"}`)}); err != nil {
		t.Fatal(err)
	}
	w, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: "Jane's case 4411 touches atlas and bob",
		Entities: []string{"person:jane_doe_case_4411", "project:atlas", "person:bob"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: "Bob runs the VPN", Entities: []string{"person:bob"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forget(ctx, op, w.Record.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetNode(ctx, store.NodeFind{Workspace: memory.DefaultWorkspace, Label: "person", Key: "jane_doe_case_4411"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the node only the forgotten record named is still there: %v", err)
	}
	nodes, err := st.ListNodes(ctx, memory.DefaultWorkspace, store.NodeQuery{Labels: []string{"person"}, Statuses: []memory.NodeStatus{memory.NodeActive, memory.NodeArchived}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	tombs := 0
	for _, n := range nodes {
		if n.Status == memory.NodeArchived && n.NaturalKey == "forgotten-"+n.ID && string(n.Properties) == "{}" {
			tombs++
		}
	}
	if tombs != 1 {
		t.Fatalf("want one node tombstone, got nodes %+v", nodes)
	}
	for _, key := range []string{"bob"} {
		if _, err := st.GetNode(ctx, store.NodeFind{Workspace: memory.DefaultWorkspace, Label: "person", Key: key}); err != nil {
			t.Fatalf("person:%s, still named by another record: %v", key, err)
		}
	}
	if n, err := st.GetNode(ctx, store.NodeFind{Workspace: memory.DefaultWorkspace, Label: "project", Key: "atlas"}); err != nil || n.Status != memory.NodeActive {
		t.Fatalf("project:atlas, with properties of its own: %+v %v", n, err)
	}
}

// blockingScrub is a store whose Scrub waits for release, counting calls
// and reporting whether its context was cancelled.
type blockingScrub struct {
	store.Store
	started   chan struct{}
	release   chan struct{}
	calls     atomic.Int32
	cancelled atomic.Bool
}

func (b *blockingScrub) Scrub(ctx context.Context) error {
	b.calls.Add(1)
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		b.cancelled.Store(true)
		return ctx.Err()
	}
	return b.Store.Scrub(ctx)
}

// TestScrubOutlivesTheWait: a forget whose scrub takes longer than the
// wait answers unavailable without cancelling the scrub; forgetting again
// waits for that scrub instead of starting another, and succeeds once it
// ends.
func TestScrubOutlivesTheWait(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bs := &blockingScrub{Store: st, started: make(chan struct{}, 4), release: make(chan struct{})}
	erasedFiles := 0
	s := New(Options{Store: bs, Policy: gate.Default(), ScrubWait: 10 * time.Millisecond, OnErased: func() { erasedFiles++ }})
	if _, _, err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	op := LocalOperator(memory.DefaultWorkspace)
	w, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: "a passing thought"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forget(ctx, op, w.Record.ID); fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("forget with a slow scrub: %v", err)
	}
	<-bs.started
	s.SetScrubWait(-1)
	again := make(chan error, 1)
	go func() {
		_, err := s.Forget(ctx, op, w.Record.ID)
		again <- err
	}()
	close(bs.release)
	if err := <-again; err != nil {
		t.Fatalf("forgetting again: %v", err)
	}
	if n := bs.calls.Load(); n != 1 || bs.cancelled.Load() || erasedFiles != 1 {
		t.Fatalf("scrubs %d, cancelled %v, derived-file invalidations %d", n, bs.cancelled.Load(), erasedFiles)
	}
	// Nothing left to scrub: a third forget returns at once.
	if _, err := s.Forget(ctx, op, w.Record.ID); err != nil || bs.calls.Load() != 1 {
		t.Fatalf("third forget: %v, scrubs %d", err, bs.calls.Load())
	}
}
