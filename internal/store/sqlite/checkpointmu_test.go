package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/storetest"
)

// A truncating Checkpoint right after a commit is not blocked by the
// store's own checkpointer, which every commit wakes (it failed about one
// time in ten, and with it TestPurgeLeavesNoTrace, before the two were
// kept apart).
func TestCheckpointNotBlockedByOwnCheckpointer(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "memgate.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: "a", CreatedAt: storetest.T0})
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := s.Tx(ctx, func(tx store.Tx) error {
			return tx.InsertRecord(ctx, "a", storetest.NewRecord("a commit that wakes the checkpointer"))
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Checkpoint(ctx); err != nil {
			t.Fatalf("checkpoint after commit %d: %v", i, err)
		}
	}
}
