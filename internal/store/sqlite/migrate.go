package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/memgate/memgate/internal/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations are the embedded migrations in order; migration i has
// version i+1.
var migrations = mustLoadMigrations(migrationFS)

func mustLoadMigrations(fsys fs.FS) []store.Migration {
	ms, err := store.LoadMigrations(fsys)
	if err != nil {
		panic("sqlite: " + err.Error())
	}
	return ms
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
		if m.Version <= current {
			continue
		}
		if err := applyMigration(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, m store.Migration) error {
	op := "sqlite: migration " + m.Name
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return mapErr(op, err)
	}
	defer tx.Rollback()
	// Another process may have applied it while this one waited for the
	// write lock.
	var done int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&done); err != nil {
		return mapErr(op, err)
	}
	if done > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return mapErr(op, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
		m.Version, time.Now().UnixMicro()); err != nil {
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
