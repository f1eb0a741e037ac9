package postgres

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
)

func appliedAt(t *testing.T, s *Store) map[int]time.Time {
	t.Helper()
	rows, err := s.r.Query(t.Context(), "SELECT version, applied_at FROM schema_migrations")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int]time.Time{}
	for rows.Next() {
		var v int
		var at time.Time
		if err := rows.Scan(&v, &at); err != nil {
			t.Fatal(err)
		}
		out[v] = at
	}
	return out
}

func TestMigrationsFresh(t *testing.T) {
	u := pgtest.URL(t)
	ctx := t.Context()
	s, err := Open(ctx, u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.SchemaVersion(ctx); err != nil || v != len(migrations) {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, len(migrations))
	}
	before := appliedAt(t, s)
	if len(before) != len(migrations) {
		t.Fatalf("schema_migrations has %d rows, want %d", len(before), len(migrations))
	}
	s.Close()
	// Reopening applies nothing.
	s, err = Open(ctx, u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if after := appliedAt(t, s); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("reopen changed schema_migrations: %v -> %v", before, after)
	}
}

// TestMigrationsConcurrentOpen: replicas starting at once on an empty
// database all open it, and each migration is applied once.
func TestMigrationsConcurrentOpen(t *testing.T) {
	u := pgtest.URL(t)
	const n = 4
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = Open(t.Context(), u, Options{ReadConns: 1, WriteConns: 1}) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		defer stores[i].Close()
	}
	if got := appliedAt(t, stores[0]); len(got) != len(migrations) {
		t.Fatalf("schema_migrations has %d rows, want %d", len(got), len(migrations))
	}
}

func TestMigrationsNewerSchema(t *testing.T) {
	u := pgtest.URL(t)
	ctx := t.Context()
	s, err := Open(ctx, u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(ctx, "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, now())", len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(ctx, u, Options{}); err == nil {
		s.Close()
		t.Fatal("Open accepted a schema newer than the binary")
	}
}

// TestMigrationsUpgrade starts from every older schema version with data
// written at schema version 1, then opens the store, which must upgrade
// it and keep the data readable and writable.
func TestMigrationsUpgrade(t *testing.T) {
	for from := 1; from < len(migrations); from++ {
		t.Run(fmt.Sprintf("from_%d", from), func(t *testing.T) {
			ctx := t.Context()
			u := pgtest.URL(t)
			pool, err := pgxpool.New(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if err := migrate(ctx, pool, "public", 1); err != nil {
				t.Fatal(err)
			}
			id := memory.NewID()
			if err := insertV1Fixture(ctx, pool, id); err != nil {
				t.Fatal(err)
			}
			if err := migrate(ctx, pool, "public", from); err != nil {
				t.Fatal(err)
			}
			if v, err := schemaVersion(ctx, pool); err != nil || v != from {
				t.Fatalf("schema version %d (err %v), want %d", v, err, from)
			}
			pool.Close()

			s, err := Open(ctx, u, Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			if v, err := s.SchemaVersion(ctx); err != nil || v != len(migrations) {
				t.Fatalf("schema version after Open %d (err %v), want %d", v, err, len(migrations))
			}
			r, err := s.GetRecord(ctx, "default", id)
			if err != nil || r.Content != "Alice prefers PostgreSQL" || r.Scope.UserID != "alice" || len(r.Entities) != 1 {
				t.Fatalf("record after upgrade: %+v, %v", r, err)
			}
			rs, err := s.ListRecords(ctx, "default", store.RecordQuery{Entity: "person:alice", Access: store.AccessFilter{Levels: []memory.Access{memory.Public}}})
			if err != nil || len(rs) != 1 {
				t.Fatalf("entity query after upgrade: %d records, %v", len(rs), err)
			}
			next := r
			next.Version, next.Content = 2, "Alice prefers SQLite"
			if err := s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateRecord(ctx, "default", next, 1) }); err != nil {
				t.Fatalf("update after upgrade: %v", err)
			}
			if chs, err := s.ListChanges(ctx, 0, 10); err != nil || len(chs) != 1 || chs[0].RecordID != id {
				t.Fatalf("change log after upgrade: %+v, %v", chs, err)
			}
		})
	}
}

// insertV1Fixture writes rows with the column set of migration 0001. It
// must keep working against schema version 1: do not update it for later
// migrations.
func insertV1Fixture(ctx context.Context, db *pgxpool.Pool, id string) error {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO workspaces (id, settings, created_at) VALUES ('default', '{"k":1}', $1)`, []any{t0}},
		{`INSERT INTO principals (workspace_id, id, kind, name, trust, token_hash, created_at)
			VALUES ('default', 'p1', 'agent', 'coder', 'trusted', '\x0102', $1)`, []any{t0}},
		{`INSERT INTO records (workspace_id, id, type, category, content, content_sha256, metadata, entities,
			version, status, source_agent, source_kind, source_confidence, source_evidence,
			scope_user_id, ingested_at, access, created_at, updated_at)
			VALUES ('default', $1, 'belief', 'technology', 'Alice prefers PostgreSQL', 'abc', '{"a":1}', '{person:alice}',
			1, 'active', 'p1', 'told', 0.75, '{}', 'alice', $2, 'public', $2, $2)`, []any{id, t0}},
		{`INSERT INTO record_versions SELECT records.*, NULL FROM records`, nil},
		{`INSERT INTO record_entities (workspace_id, entity, record_id) VALUES ('default', 'person:alice', $1)`, []any{id}},
	} {
		if _, err := db.Exec(ctx, q.sql, q.args...); err != nil {
			return fmt.Errorf("%s: %w", q.sql, err)
		}
	}
	return nil
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

// TestMigrationsMirrorSQLite: the dialects have the same numbered
// migrations, so both describe the same tables at each schema version; a
// migration added to one needs its counterpart in the other.
func TestMigrationsMirrorSQLite(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("..", "sqlite", "migrations"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			want = append(want, e.Name())
		}
	}
	var got []string
	for _, m := range migrations {
		got = append(got, m.Name)
	}
	if len(want) < 7 || !slices.Equal(got, want) {
		t.Fatalf("PostgreSQL migrations %v, SQLite migrations %v: want the same", got, want)
	}
}
