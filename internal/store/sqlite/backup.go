package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/memgate/memgate/internal/store"
)

var _ store.Backuper = (*Store)(nil)

// Backend names the backend in backup manifests.
func (s *Store) Backend() string { return "sqlite" }

// LatestSchema is the schema version this binary migrates databases to.
func LatestSchema() int { return len(migrations) }

// BackupTo writes a consistent copy of the database to dest, a new file,
// with VACUUM INTO on a connection of its own: it reads one WAL snapshot,
// so the copy holds exactly the transactions committed before it began,
// while the writer goes on committing (writers never wait for it; the
// WAL grows until it ends and a checkpoint can pass it). progress, if
// not nil, is called about every interval with the bytes written so far
// and the size the copy is expected to reach (the database's used pages).
func (s *Store) BackupTo(ctx context.Context, dest string, progress func(done, total int64)) error {
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("sqlite: backup: %s exists", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(s.path, Options{}, false))
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
	var pages, free, size int64
	for _, q := range []struct {
		pragma string
		v      *int64
	}{{"page_count", &pages}, {"freelist_count", &free}, {"page_size", &size}} {
		if err := c.QueryRowContext(ctx, "PRAGMA "+q.pragma).Scan(q.v); err != nil {
			return mapErr("sqlite: backup: "+q.pragma, err)
		}
	}
	total := (pages - free) * size

	done := make(chan struct{})
	if progress != nil {
		go func() {
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					if fi, err := os.Stat(dest); err == nil {
						progress(min(fi.Size(), total), total)
					}
				}
			}
		}()
	}
	// query_only forbids VACUUM INTO: this connection is its own, and
	// writes nothing to the source.
	if _, err := c.ExecContext(ctx, "PRAGMA query_only = 0"); err != nil {
		close(done)
		return mapErr("sqlite: backup", err)
	}
	_, err = c.ExecContext(ctx, "VACUUM INTO ?", dest)
	close(done)
	if err != nil {
		os.Remove(dest)
		return mapErr("sqlite: backup: vacuum into", err)
	}
	if err := os.Chmod(dest, 0o600); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if progress != nil {
		if fi, err := os.Stat(dest); err == nil {
			progress(fi.Size(), max(total, fi.Size()))
		}
	}
	return nil
}

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
