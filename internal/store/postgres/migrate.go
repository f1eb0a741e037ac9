package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
		panic("postgres: " + err.Error())
	}
	return ms
}

const createSchemaMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL
)`

// migrate applies migrations 1..upTo that the schema lacks, each in its
// own transaction (PostgreSQL's DDL is transactional, so a failed
// migration leaves nothing behind). Every transaction first takes an
// advisory lock of the schema, so replicas starting at once apply each
// migration exactly once. It refuses a schema newer than this binary.
func migrate(ctx context.Context, db *pgxpool.Pool, schema string, upTo int) error {
	key := lockKey("memgate.migrate", schema)
	err := locked(ctx, db, key, "postgres: migrate", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, createSchemaMigrations); err != nil {
			return mapErr("postgres: migrate", err)
		}
		current, err := schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if current > len(migrations) {
			return fmt.Errorf("postgres: database schema version %d is newer than this memgate (%d)", current, len(migrations))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range migrations[:upTo] {
		op := "postgres: migration " + m.Name
		err := locked(ctx, db, key, op, func(tx pgx.Tx) error {
			// Another process may have applied it while this one waited
			// for the lock.
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE version = $1`, m.Version).Scan(&n); err != nil {
				return mapErr(op, err)
			}
			if n > 0 {
				return nil
			}
			// The simple protocol runs a file of several statements.
			if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
				return mapErr(op, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)`, m.Version, time.Now())
			return mapErr(op, err)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// locked runs fn in a transaction that holds the advisory lock key.
func locked(ctx context.Context, db *pgxpool.Pool, key int64, op string, fn func(pgx.Tx) error) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return mapErr(op, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", key); err != nil {
		return mapErr(op, err)
	}
	if err := fn(tx); err != nil {
		return err
	}
	return mapErr(op, tx.Commit(ctx))
}

func schemaVersion(ctx context.Context, db querier) (int, error) {
	var v int
	if err := db.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, mapErr("postgres: schema version", err)
	}
	return v, nil
}
