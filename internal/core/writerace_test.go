package core

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// racingStore makes the next UpdateRecords fail with a version conflict,
// as a concurrent transaction that moved the head first makes them fail
// on PostgreSQL.
type racingStore struct {
	store.Store
	conflicts atomic.Int32
}

type racingTx struct {
	store.Tx
	s *racingStore
}

func (s *racingStore) Tx(ctx context.Context, fn func(store.Tx) error) error {
	return s.Store.Tx(ctx, func(tx store.Tx) error { return fn(racingTx{tx, s}) })
}

func (t racingTx) UpdateRecord(ctx context.Context, ws string, r memory.Record, expected int) error {
	if t.s.conflicts.Add(-1) >= 0 {
		return fmt.Errorf("racing store: head moved: %w", store.ErrVersionConflict)
	}
	return t.Tx.UpdateRecord(ctx, ws, r, expected)
}

// TestWriteRetriesSupersedeRace: a write that supersedes a record another
// transaction changed first is run again against the new head, not
// answered with a version conflict — a create has no expected version to
// be wrong about (seen with two replicas on PostgreSQL, issue 14).
func TestWriteRetriesSupersedeRace(t *testing.T) {
	base, ps := agentService(t, nil)
	rs := &racingStore{Store: base.Store()}
	s := New(Options{Store: rs, Policy: base.policy, Index: base.index})
	var pair nearPair
	for _, p := range loadNearPairs(t) {
		if p.Want == "conflict" {
			pair = p
			break
		}
	}
	if pair.Name == "" {
		t.Fatal("no conflict pair in testdata/near_duplicates.json")
	}
	ctx := t.Context()
	scope := memory.Scope{UserID: "racer"}
	first, err := s.Write(ctx, ps["std"], WriteRequest{Type: memory.Belief, Content: pair.First, Entities: pair.FirstEntities, Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	rs.conflicts.Store(1)
	second, err := s.Write(ctx, ps["std"], WriteRequest{Type: memory.Belief, Content: pair.Second, Entities: pair.SecondEntities, Scope: scope})
	if err != nil {
		t.Fatalf("the superseding write failed on a race it should retry: %v", err)
	}
	checkNearPair(t, pair, first.Record.ID, second.Decision, second.Reason, second.Record.ID, second.Record.Supersedes)
	if rs.conflicts.Load() >= 0 {
		t.Fatalf("the racing update was never attempted: the pair did not supersede")
	}
}
