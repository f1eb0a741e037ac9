package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func batchReadTests() []struct {
	name string
	fn   func(t *testing.T, s store.Store)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"GetRecords", testGetRecords},
	}
}

// testGetRecords: GetRecords is GetRecord for many ids: heads (latest
// version, tombstones included), only the workspace's, missing ids absent,
// repeated ids once, an empty list an empty map; inside a transaction it
// sees the transaction's writes; more ids than one statement holds.
func testGetRecords(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	kept := fullRecord("a decision kept as written")
	changed := NewRecord("changed once")
	gone := NewRecord("forgotten later")
	other := NewRecord("in workspace b")
	mustInsert(t, s, "a", kept, changed, gone)
	mustInsert(t, s, "b", other)
	changed2 := NextVersion(changed, T0.Add(time.Hour), func(r *memory.Record) { r.Content = "changed twice" })
	mustUpdate(t, s, "a", changed2)
	tomb := NextVersion(gone, T0.Add(time.Hour), func(r *memory.Record) { r.Status = memory.Forgotten })
	mustUpdate(t, s, "a", tomb)

	got, err := s.GetRecords(ctx, "a", []string{kept.ID, changed.ID, memory.NewID(), other.ID, kept.ID, gone.ID})
	if err != nil {
		t.Fatalf("GetRecords: %v", err)
	}
	if len(got) != 3 {
		t.Fatalf("GetRecords: %d records, want 3 (kept, changed, tombstone): %v", len(got), dump(got))
	}
	for _, want := range []memory.Record{kept, changed2, tomb} {
		r, ok := got[want.ID]
		if !ok {
			t.Fatalf("GetRecords: %s missing", want.ID)
		}
		assertRecord(t, "GetRecords", r, mustGet(t, s, "a", want.ID))
	}
	if got[changed.ID].Version != 2 || got[changed.ID].Content != "changed twice" || got[gone.ID].Status != memory.Forgotten {
		t.Fatalf("GetRecords did not return heads: %s", dump(got))
	}

	empty, err := s.GetRecords(ctx, "a", nil)
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("GetRecords(nil) = %v, %v; want an empty map", empty, err)
	}

	// Many ids, in a transaction that also wrote some of them.
	var many []memory.Record
	for i := range 600 {
		many = append(many, NewRecord("bulk record "+time.Duration(i).String()))
	}
	mustInsert(t, s, "a", many[:300]...)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, r := range many[300:] {
			if err := tx.InsertRecord(ctx, "a", r); err != nil {
				return err
			}
		}
		ids := make([]string, len(many))
		for i, r := range many {
			ids[i] = r.ID
		}
		got, err := tx.GetRecords(ctx, "a", ids)
		if err != nil {
			return err
		}
		if len(got) != len(many) {
			t.Errorf("tx.GetRecords: %d of %d records", len(got), len(many))
		}
		for _, r := range many {
			if got[r.ID].Content != r.Content {
				t.Errorf("tx.GetRecords: %s has %q, want %q", r.ID, got[r.ID].Content, r.Content)
				break
			}
		}
		return nil
	})
}
