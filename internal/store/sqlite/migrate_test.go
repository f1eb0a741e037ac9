package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func TestMigrationsFresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memgate.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SchemaVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if v != len(migrations) {
		t.Fatalf("SchemaVersion = %d, want %d", v, len(migrations))
	}
	before := appliedAt(t, s.r)
	if len(before) != len(migrations) {
		t.Fatalf("schema_migrations has %d rows, want %d", len(before), len(migrations))
	}
	s.Close()

	// Reopening applies nothing.
	s, err = Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	after := appliedAt(t, s.r)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("reopen changed schema_migrations: %v -> %v", before, after)
	}
}

func appliedAt(t *testing.T, db *sql.DB) map[int]int64 {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT version, applied_at FROM schema_migrations")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]int64{}
	for rows.Next() {
		var v int
		var at int64
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		out[v] = at
	}
	return out
}

// openAt creates a database with migrations 1..version applied, as an
// older memgate would have left it.
func openAt(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, Options{}, roleWriter))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if err := migrate(t.Context(), db, version); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestMigrationsUpgrade starts from every older schema version with data
// written at schema version 1, then opens the store, which must upgrade it
// and keep the data readable. With a single migration it checks the
// reopen of a populated database.
func TestMigrationsUpgrade(t *testing.T) {
	for from := 1; from <= max(1, len(migrations)-1); from++ {
		t.Run(fmt.Sprintf("from_%d", from), func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "memgate.db")
			db := openAt(t, path, 1)
			id := memory.NewID()
			if err := insertV1Fixture(ctx, db, id); err != nil {
				t.Fatal(err)
			}
			if err := migrate(ctx, db, from); err != nil {
				t.Fatal(err)
			}
			if v, err := schemaVersion(ctx, db); err != nil || v != from {
				t.Fatalf("schema version %d (err %v), want %d", v, err, from)
			}
			db.Close()

			s, err := Open(ctx, path, Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			if v, err := s.SchemaVersion(ctx); err != nil || v != len(migrations) {
				t.Fatalf("schema version after Open %d (err %v), want %d", v, err, len(migrations))
			}
			checkV1Fixture(t, s, id)
		})
	}
}

// insertV1Fixture writes rows with the column set of migration 0001. It
// must keep working against schema version 1 forever; do not update it
// for later migrations.
func insertV1Fixture(ctx context.Context, db *sql.DB, id string) error {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO workspaces (id, settings, created_at) VALUES ('default', '{"k":1}', ?)`, []any{t0}},
		{`INSERT INTO principals (workspace_id, id, kind, name, trust, token_hash, created_at)
			VALUES ('default', 'p1', 'agent', 'coder', 'trusted', x'0102', ?)`, []any{t0}},
		{`INSERT INTO records (workspace_id, id, type, category, content, content_sha256, metadata, entities,
			version, status, source_agent, source_kind, source_confidence, source_evidence,
			scope_user_id, ingested_at, access, created_at, updated_at)
			VALUES ('default', ?, 'belief', 'technology', 'Alice prefers PostgreSQL', 'abc', '{"a":1}', '["person:alice"]',
			1, 'active', 'p1', 'told', 0.75, '[]', 'alice', ?, 'public', ?, ?)`, []any{id, t0, t0, t0}},
		{`INSERT INTO record_versions (workspace_id, id, type, category, content, content_sha256, metadata, entities,
			version, status, source_agent, source_kind, source_confidence, source_evidence,
			scope_user_id, ingested_at, access, created_at, updated_at)
			SELECT workspace_id, id, type, category, content, content_sha256, metadata, entities,
			version, status, source_agent, source_kind, source_confidence, source_evidence,
			scope_user_id, ingested_at, access, created_at, updated_at FROM records`, nil},
		{`INSERT INTO record_entities (workspace_id, entity, record_id) VALUES ('default', 'person:alice', ?)`, []any{id}},
		{`INSERT INTO audit_log (workspace_id, seq, id, ts, actor_kind, actor_id, event, payload, prev_hash, hash)
			VALUES ('default', 1, 'e1', ?, 'agent', 'p1', 'record.write', '{}', ?, ?)`,
			[]any{t0, "0000000000000000000000000000000000000000000000000000000000000000", "1111111111111111111111111111111111111111111111111111111111111111"}},
		{`INSERT INTO audit_heads (workspace_id, seq, hash) VALUES ('default', 1, ?)`,
			[]any{"1111111111111111111111111111111111111111111111111111111111111111"}},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
			return fmt.Errorf("%s: %w", q.sql, err)
		}
	}
	return nil
}

func checkV1Fixture(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := s.GetWorkspace(ctx, "default"); err != nil {
		t.Fatalf("workspace: %v", err)
	}
	if p, err := s.GetPrincipal(ctx, store.PrincipalFind{ID: "p1"}); err != nil || p.Name != "coder" || p.Trust != memory.Trusted {
		t.Fatalf("principal: %+v, %v", p, err)
	}
	r, err := s.GetRecord(ctx, "default", id)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if r.Content != "Alice prefers PostgreSQL" || r.Scope.UserID != "alice" || r.Source.Confidence != 0.75 ||
		len(r.Entities) != 1 || r.Version != 1 {
		t.Fatalf("record after upgrade: %+v", r)
	}
	rs, err := s.ListRecords(ctx, "default", store.RecordQuery{Entity: "person:alice", Access: store.AccessFilter{Levels: []memory.Access{memory.Public}}})
	if err != nil || len(rs) != 1 {
		t.Fatalf("entity query after upgrade: %d records, %v", len(rs), err)
	}
	es, err := s.ListAudit(ctx, "default", 0, 10)
	if err != nil || len(es) != 1 || es[0].ID != "e1" {
		t.Fatalf("audit after upgrade: %+v, %v", es, err)
	}
	// The store writes on top of the old data.
	next := r
	next.Version = 2
	next.Content = "Alice prefers SQLite"
	if err := s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateRecord(ctx, "default", next, 1) }); err != nil {
		t.Fatalf("update after upgrade: %v", err)
	}
}

func TestMigrationsNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memgate.db")
	db := openAt(t, path, len(migrations))
	if _, err := db.ExecContext(t.Context(), "INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)", len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if s, err := Open(t.Context(), path, Options{}); err == nil {
		s.Close()
		t.Fatal("Open accepted a schema newer than the binary")
	}
}

func TestLoadMigrations(t *testing.T) {
	if len(migrations) == 0 || migrations[0].Version != 1 {
		t.Fatalf("embedded migrations: %+v", migrations)
	}
	for _, bad := range []fstest.MapFS{
		{"migrations/0001_a.sql": {}, "migrations/0003_c.sql": {}},
		{"migrations/init.sql": {}},
		{"migrations/0000_zero.sql": {}},
	} {
		if _, err := store.LoadMigrations(bad); err == nil {
			t.Errorf("loadMigrations accepted %v", bad)
		}
	}
}

// The record_principals migration gives existing records their writer's
// principal id by name, in the same workspace, and none to the CLI's old
// pseudo-writer "cli" even where an agent took that name.
func TestMigrationRecordPrincipalsBackfill(t *testing.T) {
	ctx := t.Context()
	at := 0
	for _, m := range migrations {
		if strings.Contains(m.Name, "record_principals") {
			at = m.Version
		}
	}
	if at == 0 {
		t.Fatal("no record_principals migration")
	}
	path := filepath.Join(t.TempDir(), "memgate.db")
	db := openAt(t, path, at-1)
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).UnixMicro()
	coder, cli := memory.NewID(), memory.NewID()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO workspaces (id, settings, created_at) VALUES ('default', '{}', ?), ('other', '{}', ?)`, []any{t0, t0}},
		{`INSERT INTO principals (workspace_id, id, kind, name, trust, token_hash, created_at)
			VALUES ('default', 'p1', 'agent', 'coder', 'standard', x'01', ?), ('default', 'p2', 'agent', 'cli', 'read_only', x'02', ?),
			('other', 'p3', 'agent', 'coder', 'standard', x'03', ?)`, []any{t0, t0, t0}},
		{`INSERT INTO records (workspace_id, id, type, content, content_sha256, version, status, source_agent, ingested_at, access, created_at, updated_at)
			VALUES ('default', ?, 'belief', 'x', 'abc', 1, 'active', 'coder', ?, 'agent', ?, ?),
			('default', ?, 'belief', 'y', 'abd', 1, 'active', 'cli', ?, 'agent', ?, ?)`, []any{coder, t0, t0, t0, cli, t0, t0, t0}},
		{`INSERT INTO record_versions (workspace_id, id, type, content, content_sha256, version, status, source_agent, ingested_at, access, created_at, updated_at)
			SELECT workspace_id, id, type, content, content_sha256, version, status, source_agent, ingested_at, access, created_at, updated_at FROM records`, nil},
	} {
		if _, err := db.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	db.Close()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct{ id, want string }{{coder, "p1"}, {cli, ""}} {
		r, err := s.GetRecord(ctx, "default", c.id)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.GetRecordVersion(ctx, "default", c.id, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Source.PrincipalID != c.want || r.ModifiedBy != c.want || v.Source.PrincipalID != c.want || v.ModifiedBy != c.want {
			t.Fatalf("record by %q: head %q/%q, version %q/%q; want %q", r.Source.Agent, r.Source.PrincipalID, r.ModifiedBy,
				v.Source.PrincipalID, v.ModifiedBy, c.want)
		}
	}
}
