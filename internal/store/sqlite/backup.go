package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"modernc.org/sqlite"

	"github.com/memgate/memgate/internal/store"
)

var _ store.Backuper = (*Store)(nil)

// Backend names the backend in backup manifests.
func (s *Store) Backend() string { return "sqlite" }

// LatestSchema is the schema version this binary migrates databases to.
func LatestSchema() int { return len(migrations) }

// BackupTo writes a consistent copy of the database to dest, a new file,
// with SQLite's online backup API on a connection of its own. That
// connection first opens a read transaction, so every step copies pages
// of one WAL snapshot: the copy holds exactly the transactions committed
// before it began, while the writer goes on committing (in WAL mode a
// reader never blocks the writer; the WAL grows until the copy ends and a
// checkpoint can pass it). Copying pages costs little CPU, unlike VACUUM
// INTO, which rebuilds every index. progress, if not nil, is called after
// each step with the bytes copied and the bytes to copy.
func (s *Store) BackupTo(ctx context.Context, dest string, progress func(done, total int64)) (err error) {
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("sqlite: backup: %s exists", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(s.path, Options{}, roleReader))
	if err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err != nil {
		return mapErr("sqlite: backup", err)
	}
	defer c.Close()
	var pageSize int64
	if err := c.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return mapErr("sqlite: backup: page size", err)
	}
	// The snapshot: a read transaction held across every step.
	if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
		return mapErr("sqlite: backup: begin", err)
	}
	defer c.ExecContext(context.Background(), "ROLLBACK")
	var n int
	if err := c.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		return mapErr("sqlite: backup: snapshot", err)
	}
	defer func() {
		if err != nil {
			os.Remove(dest)
			os.Remove(dest + "-journal")
		}
	}()
	err = c.Raw(func(dc any) error {
		bc, ok := dc.(interface {
			NewBackup(string) (*sqlite.Backup, error)
		})
		if !ok {
			return errors.New("the driver has no online backup")
		}
		b, err := bc.NewBackup(dest)
		if err != nil {
			return err
		}
		for {
			if err := ctx.Err(); err != nil {
				b.Finish()
				return err
			}
			more, err := b.Step(backupStepPages)
			if err != nil {
				b.Finish()
				return err
			}
			if progress != nil {
				total := int64(b.PageCount()) * pageSize
				done := total - int64(b.Remaining())*pageSize
				if !more {
					done = total
				}
				progress(done, total)
			}
			if !more {
				return b.Finish()
			}
		}
	})
	if err != nil {
		return mapErr("sqlite: backup", err)
	}
	if err := os.Chmod(dest, 0o600); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	return nil
}

// backupStepPages is how many pages one backup step copies (4 MiB of 4 KiB
// pages): small enough to report progress and notice cancellation.
const backupStepPages = 1024

// OpenCopy opens a database file made by BackupTo (or one being
// restored), migrating it if its schema is older than this binary's.
func (s *Store) OpenCopy(ctx context.Context, path string) (store.Store, error) {
	return OpenCopy(ctx, path)
}

// OpenCopy opens a copy of a database for verification: a small read
// pool, and on Close the file is left whole, without a write-ahead log
// beside it.
func OpenCopy(ctx context.Context, path string) (*Store, error) {
	return Open(ctx, path, Options{ReadConns: 2})
}

// FileSchemaVersion reads the schema version of the database file at
// path without migrating or otherwise changing it.
func FileSchemaVersion(ctx context.Context, path string) (int, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, err
	}
	// immutable: no locks, no -wal or -shm files created beside a copy
	// that must stay byte for byte what its checksum says.
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil {
		return 0, mapErr("sqlite: schema version", err)
	}
	if n == 0 {
		return 0, nil
	}
	return schemaVersion(ctx, db)
}

// RecordCounts counts the record heads of every workspace, forgotten
// tombstones included: what a backup manifest records, without reading
// the records.
func (s *Store) RecordCounts(ctx context.Context) (map[string]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT workspace_id, count(*) FROM records GROUP BY workspace_id`)
	if err != nil {
		return nil, mapErr("sqlite: count records", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var ws string
		var n int64
		if err := rows.Scan(&ws, &n); err != nil {
			return nil, mapErr("sqlite: count records", err)
		}
		out[ws] = n
	}
	return out, mapErr("sqlite: count records", rows.Err())
}
