package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// FindByMeta matches the heads of a category and scope whose metadata
// field holds a string, leaving out invalidated heads, other workspaces,
// other scopes and non-string values; LockKey can be taken twice in one
// transaction and on any key.
func testFindByMeta(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a", "b")
	sc := memory.Scope{UserID: "u1"}
	withMeta := func(content, cat, meta string, sc memory.Scope, f func(*memory.Record)) memory.Record {
		return NewRecord(content, func(r *memory.Record) {
			r.Category, r.Metadata, r.Scope = cat, json.RawMessage(meta), sc
			if f != nil {
				f(r)
			}
		})
	}
	hit := withMeta("hit", "file", `{"file_path":"/memories/a.md","pinned":true}`, sc, nil)
	hit2 := withMeta("hit2", "file", `{"pinned":false,"file_path":"/memories/a.md"}`, sc, nil)
	otherPath := withMeta("other path", "file", `{"file_path":"/memories/b.md"}`, sc, nil)
	otherCat := withMeta("other cat", "note", `{"file_path":"/memories/a.md"}`, sc, nil)
	otherScope := withMeta("other scope", "file", `{"file_path":"/memories/a.md"}`, memory.Scope{}, nil)
	notString := withMeta("number", "file", `{"file_path":1}`, sc, nil)
	gone := withMeta("gone", "file", `{"file_path":"/memories/a.md"}`, sc, func(r *memory.Record) { r.InvalidatedAt = &T0 })
	mustInsert(t, s, "a", hit, hit2, otherPath, otherCat, otherScope, notString, gone)
	mustInsert(t, s, "b", withMeta("elsewhere", "file", `{"file_path":"/memories/a.md"}`, sc, nil))
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, k := range []string{"file\x00a\x00/memories/a.md", "file\x00a\x00/memories/a.md", ""} {
			if err := tx.LockKey(ctx, k); err != nil {
				t.Fatalf("LockKey(%q): %v", k, err)
			}
		}
		got, err := tx.FindByMeta(ctx, "a", "file", "file_path", "/memories/a.md", sc)
		if err != nil {
			t.Fatalf("FindByMeta: %v", err)
		}
		want := []string{hit.ID, hit2.ID}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("FindByMeta = %v, want %v", got, want)
		}
		got, err = tx.FindByMeta(ctx, "a", "file", "file_path", "/memories/none.md", sc)
		if err != nil || len(got) != 0 {
			t.Fatalf("FindByMeta(no match) = %v, %v", got, err)
		}
		return nil
	})
}
