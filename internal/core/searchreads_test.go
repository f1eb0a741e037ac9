package core

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// countingStore counts the record reads a search makes.
type countingStore struct {
	store.Store
	one, many atomic.Int64
}

func (c *countingStore) GetRecord(ctx context.Context, ws, id string) (memory.Record, error) {
	c.one.Add(1)
	return c.Store.GetRecord(ctx, ws, id)
}

func (c *countingStore) GetRecords(ctx context.Context, ws string, ids []string) (map[string]memory.Record, error) {
	c.many.Add(1)
	return c.Store.GetRecords(ctx, ws, ids)
}

// A search reads its hits' records in one batch, not one read a hit (a
// gateway recall over three scopes made up to 3×k reads).
func TestSearchHydratesInOneRead(t *testing.T) {
	_, st, _ := newPortableService(t, false)
	ctx := t.Context()
	cs := &countingStore{Store: st}
	s, _ := portableServiceOn(t, cs, true)
	op := LocalOperator(memory.DefaultWorkspace)
	for _, c := range []string{
		"The billing cluster bills customers nightly at two",
		"Our search cluster indexes product photos with CLIP",
		"Kafka cluster retention is seven days for audit topics",
		"Grafana dashboards for the cluster live in folder ops",
		"The cluster autoscaler caps nodes at forty in Frankfurt",
		"Redis cluster failover was tested in March by Priya",
	} {
		if _, err := s.Write(ctx, op, WriteRequest{Type: memory.Belief, Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	cs.one.Store(0)
	cs.many.Store(0)
	res, err := s.Search(ctx, op, SearchRequest{Query: "which cluster", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) < 5 {
		t.Fatalf("%d results, want at least 5", len(res.Results))
	}
	if one, many := cs.one.Load(), cs.many.Load(); one != 0 || many != 1 {
		t.Fatalf("search of %d hits made %d single and %d batch record reads, want 0 and 1", len(res.Results), one, many)
	}
}
