package core

import (
	"context"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/svctest"
)

// listingStore records where each read of the embedding work list began.
type listingStore struct {
	store.Store
	mu     sync.Mutex
	afters []string
}

func (l *listingStore) ListMissingVectors(ctx context.Context, model, after string, limit int) ([]store.VectorTask, error) {
	l.mu.Lock()
	l.afters = append(l.afters, after)
	l.mu.Unlock()
	return l.Store.ListMissingVectors(ctx, model, after, limit)
}

func (l *listingStore) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.afters
	l.afters = nil
	return out
}

// TestEmbedJobCursor: the embedding job reads its work list on from where
// it stopped, so a round after new writes does not walk past every record
// embedded already (issue 14); a sweep still wraps around to find a record
// before the cursor that lost its vector.
func TestEmbedJobCursor(t *testing.T) {
	ctx := context.Background()
	st := svctest.SQLite(t)
	ix := retrieve.New(retrieve.Options{Embedder: &hashEmbedder{}})
	if _, err := ix.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	ls := &listingStore{Store: st}
	s := New(Options{Store: ls, Policy: gate.Default(), Index: ix})
	if _, _, err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	first := writeBelief(t, s, "the staging cluster runs in Frankfurt")
	writeBelief(t, s, "deploys happen on Tuesdays")
	last := writeBelief(t, s, "the on-call rotation is weekly")
	if n, err := s.EmbedPending(ctx, 100); err != nil || n != 3 {
		t.Fatalf("EmbedPending: %d, %v; want 3", n, err)
	}
	ls.take()
	writeBelief(t, s, "the VPN needs a hardware key")
	if n, err := s.embedRound(ctx, false); err != nil || n != 1 {
		t.Fatalf("round after a write: %d, %v; want 1", n, err)
	}
	if afters := ls.take(); len(afters) == 0 || afters[0] != last.ID {
		t.Fatalf("the round read the work list from %q, want from the cursor %s (the last record embedded)", afters, last.ID)
	}
	// A record before the cursor whose content changed has no current
	// vector: a sweep (EmbedPending) wraps around and embeds it.
	v := first.Version
	content := "the staging cluster moved to Dublin"
	if _, err := s.Patch(ctx, LocalOperator(memory.DefaultWorkspace), first.ID, PatchRequest{ExpectedVersion: &v, Content: &content}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.EmbedPending(ctx, 100); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v; want the patched record embedded", n, err)
	}
	if have, total, err := st.CountVectors(ctx, "test-hash"); err != nil || have != total {
		t.Fatalf("vectors %d of %d (%v), want all", have, total, err)
	}
}
