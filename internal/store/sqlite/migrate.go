package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered schema change, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are the embedded migrations in order; migration i has
// version i+1.
var migrations = mustLoadMigrations(migrationFS)

func mustLoadMigrations(fsys fs.FS) []migration {
	ms, err := loadMigrations(fsys)
	if err != nil {
		panic(err)
	}
	return ms
}

func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("sqlite: migration %s: name must be NNNN_description.sql", base)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("sqlite: migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

const createSchemaMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at INTEGER NOT NULL
)`

// migrate applies migrations 1..upTo that the database lacks, each in its
// own transaction. It refuses a database whose schema is newer than this
// binary knows.
func migrate(ctx context.Context, db *sql.DB, upTo int) error {
	if _, err := db.ExecContext(ctx, createSchemaMigrations); err != nil {
		return mapErr("sqlite: migrate", err)
	}
	current, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("sqlite: database schema version %d is newer than this memgate (%d)", current, len(migrations))
	}
	for _, m := range migrations[:upTo] {
		if m.version <= current {
			continue
		}
		if err := applyMigration(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m migration) error {
	op := "sqlite: migration " + m.name
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(op, err)
	}
	defer tx.Rollback()
	// Another process may have applied it while this one waited for the
	// write lock.
	var done int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&done); err != nil {
		return mapErr(op, err)
	}
	if done > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return mapErr(op, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		m.version, time.Now().UnixMicro()); err != nil {
		return mapErr(op, err)
	}
	return mapErr(op, tx.Commit())
}

func schemaVersion(ctx context.Context, db queryer) (int, error) {
	var v int
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, mapErr("sqlite: schema version", err)
	}
	return v, nil
}
