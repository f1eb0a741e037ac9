package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// RedactVersion drops what derives from the redacted text: the cached
// embedding of its content and the record's vector computed while it was
// the head (not yet replaced by the embedding job). The vector row is
// observed by making the head hold that text again: a vector that
// survived the redaction would then count as the head's.
func testRedactVersionDerived(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	v1 := NewRecord("the code word is swordfish")
	mustInsert(t, s, "a", v1)
	vec := []float32{0.25, -0.5, 0.75}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.PutCachedEmbeddings(ctx, "m", map[string][]float32{v1.ContentSHA256: vec}); err != nil {
			return err
		}
		return tx.PutVectors(ctx, "m", []store.Vector{{Workspace: "a", RecordID: v1.ID, ContentSHA256: v1.ContentSHA256, Vec: vec}})
	})
	v2 := NextVersion(v1, T0.Add(time.Hour), func(r *memory.Record) {
		r.Content = "the code word changed"
		r.ContentSHA256 = memory.SHA256Hex(r.Content)
	})
	mustUpdate(t, s, "a", v2)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.RedactVersion(ctx, "a", v1.ID, 1) })

	cached, err := s.GetCachedEmbeddings(ctx, "m", []string{v1.ContentSHA256})
	if err != nil {
		t.Fatal(err)
	}
	if len(cached) != 0 {
		t.Fatalf("the cached embedding of the redacted text survived")
	}
	v3 := NextVersion(v2, T0.Add(2*time.Hour), func(r *memory.Record) {
		r.Content = v1.Content
		r.ContentSHA256 = v1.ContentSHA256
	})
	mustUpdate(t, s, "a", v3)
	have, _, err := s.CountVectors(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if have != 0 {
		t.Fatalf("a vector computed from the redacted version survived the redaction (%d)", have)
	}
}
