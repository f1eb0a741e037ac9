package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// A store that tells whether any record head names an entity
// (store.EntityNamer) answers as the entity filter of ListRecords does,
// in a transaction and outside one: a new graph node's grants skip the
// listing when it says no (core's recordGrants). Stores that do not
// implement it skip.
func testNamesEntity(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	namer, ok := store.Reader(s).(store.EntityNamer)
	if !ok {
		t.Skip("the store does not implement store.EntityNamer")
	}
	named := func(ws, entity string) bool {
		t.Helper()
		got, err := namer.NamesEntity(ctx, ws, entity)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	r := NewRecord("alice moved to the platform team", func(r *memory.Record) { r.Entities = []string{"person:alice", "team:platform"} })
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.InsertRecord(ctx, "a", r); err != nil {
			return err
		}
		n, ok := tx.(store.EntityNamer)
		if !ok {
			t.Error("the store's reads implement store.EntityNamer, its transactions do not")
			return nil
		}
		if got, err := n.NamesEntity(ctx, "a", "person:alice"); err != nil || !got {
			t.Errorf("in the transaction that wrote it: NamesEntity = %v, %v; want true", got, err)
		}
		return nil
	})
	if !named("a", "person:alice") || !named("a", "team:platform") {
		t.Fatal("an entity a record head names is not named")
	}
	if named("a", "person:bob") || named("b", "person:alice") || named("a", "person:ali") {
		t.Fatal("an entity no record head of the workspace names is named")
	}
	next := NextVersion(r, T0.Add(time.Hour), func(r *memory.Record) { r.Entities = []string{"team:platform"} })
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.UpdateRecord(ctx, "a", next, 1) })
	if named("a", "person:alice") {
		t.Fatal("an entity only an older version names is still named")
	}
	if !named("a", "team:platform") {
		t.Fatal("an entity the new head names is not named")
	}
}
