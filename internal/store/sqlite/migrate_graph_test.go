package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// TestMigrationGraphAccess: migration 0010 leaves nodes that records name
// without an access of their own (they are seen through those records),
// gives public access to nodes nothing names (they were written directly,
// and everyone saw them) and to drop-in entities, and leaves every node's
// record grants to be computed (NULL).
func TestMigrationGraphAccess(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "memgate.db")
	db := openAt(t, path, 9)
	id := memory.NewID()
	if err := insertV1Fixture(ctx, db, id); err != nil { // a record naming person:alice
		t.Fatal(err)
	}
	for _, n := range [][3]string{{"n1", "person", "alice"}, {"n2", "person", "bob"}, {"n3", "entity", "Carol"}} {
		if _, err := db.ExecContext(ctx, `INSERT INTO nodes (workspace_id, id, label, natural_key, properties, provenance, status, created_at, updated_at)
			VALUES ('default', ?, ?, ?, '{}', 'operator', 'active', 1, 1)`, n[0], n[1], n[2]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO record_entities (workspace_id, entity, record_id) VALUES ('default', 'entity:Carol', ?)`, id); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for id, want := range map[string]memory.Access{"n1": "", "n2": memory.Public, "n3": memory.Public} {
		n, err := s.GetNode(ctx, store.NodeFind{Workspace: "default", ID: id})
		if err != nil || n.Access != want || n.Grants != nil || n.Writer != "" {
			t.Errorf("node %s after migration: %+v %v, want access %q and no grants", id, n, err, want)
		}
	}
}
