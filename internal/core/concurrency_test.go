package core

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// Concurrent writes that introduce the same new entity all succeed and
// share one node, and so do concurrent upserts of one new node or edge, on
// both backends (on PostgreSQL a lookup-then-insert lost the race on the
// unique key and answered 409).
func TestConcurrentWritesCreateGraphItemsOnce(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"sqlite", func(t *testing.T) store.Store {
			st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"postgres", func(t *testing.T) store.Store {
			st, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			s, _ := portableServiceOn(t, b.open(t), true)
			op := LocalOperator(memory.DefaultWorkspace)
			const writers, each = 16, 20
			var wg sync.WaitGroup
			errs := make(chan error, writers*each)
			start := make(chan struct{})
			for w := range writers {
				wg.Go(func() {
					<-start
					for i := range each {
						// Each round introduces a new entity that every
						// writer names at about the same time; the texts
						// share no word, so the gate's similarity checks
						// stay out of the way.
						_, err := s.Write(context.Background(), op, WriteRequest{Type: memory.Belief,
							Content:  fmt.Sprintf("w%d-%d %s", w, i, memory.NewID()),
							Entities: []string{fmt.Sprintf("service:new_service_%d", i), "technology:shared_engine"}})
						if err != nil {
							errs <- err
						}
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			n := 0
			for err := range errs {
				if n++; n <= 3 {
					t.Errorf("write: %v", err)
				}
			}
			if n > 0 {
				t.Fatalf("%d of %d concurrent writes failed", n, writers*each)
			}
			nodes, err := s.store.ListNodes(t.Context(), memory.DefaultWorkspace, store.NodeQuery{Limit: store.MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			if len(nodes) != each+1 {
				t.Fatalf("%d nodes, want %d (one per entity)", len(nodes), each+1)
			}

			// The same for explicit node upserts of one new key: one
			// creates it, the others update it, none conflicts.
			var created sync.Map
			errs = make(chan error, writers)
			start = make(chan struct{})
			for w := range writers {
				wg.Go(func() {
					<-start
					res, err := s.UpsertNode(context.Background(), op, NodeInput{Label: "project", NaturalKey: "fresh"})
					if err != nil {
						errs <- err
						return
					}
					created.Store(w, res.Created)
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("concurrent upsert of one new node: %v", err)
			}
			c := 0
			created.Range(func(_, v any) bool {
				if v.(bool) {
					c++
				}
				return true
			})
			if c != 1 {
				t.Fatalf("%d upserts report created, want 1", c)
			}

			// And for edge upserts: every writer joins the same new pairs
			// of nodes by one relation, at about the same time.
			var mu sync.Mutex
			createdEdges, edgeIDs := map[string]int{}, map[string]map[string]bool{}
			errs = make(chan error, writers*each)
			start = make(chan struct{})
			for range writers {
				wg.Go(func() {
					<-start
					for i := range each {
						to := fmt.Sprintf("service:new_service_%d", i)
						res, err := s.UpsertEdge(context.Background(), op, EdgeInput{From: "project:fresh", To: to, Relation: "DEPENDS_ON"})
						if err != nil {
							errs <- err
							continue
						}
						mu.Lock()
						if res.Created {
							createdEdges[to]++
						}
						if edgeIDs[to] == nil {
							edgeIDs[to] = map[string]bool{}
						}
						edgeIDs[to][res.Edge.ID] = true
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			n = 0
			for err := range errs {
				if n++; n <= 3 {
					t.Errorf("edge upsert: %v", err)
				}
			}
			if n > 0 {
				t.Fatalf("%d of %d concurrent edge upserts failed", n, writers*each)
			}
			for i := range each {
				to := fmt.Sprintf("service:new_service_%d", i)
				if createdEdges[to] != 1 || len(edgeIDs[to]) != 1 {
					t.Fatalf("edge to %s: %d upserts report created, %d edge ids; want 1 and 1", to, createdEdges[to], len(edgeIDs[to]))
				}
			}
		})
	}
}
