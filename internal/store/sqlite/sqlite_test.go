package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/storetest"
)

func openTest(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "memgate.db"), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openTest(t, Options{}) })
}

func pragma(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v string
	if err := db.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestPragmas(t *testing.T) {
	for _, c := range []struct {
		opts Options
		sync string
	}{{Options{}, "1"}, {Options{SyncFull: true}, "2"}} {
		s := openTest(t, c.opts)
		// Hold several read connections at once so more than one is checked.
		var conns []*sql.Conn
		for range 3 {
			cn, err := s.r.Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, cn)
		}
		for _, cn := range conns {
			cn.Close()
		}
		for _, p := range []struct {
			db     *sql.DB
			name   string
			pragma string
			want   string
		}{
			{s.w, "writer", "journal_mode", "wal"},
			{s.w, "writer", "foreign_keys", "1"},
			{s.w, "writer", "busy_timeout", "10000"},
			{s.w, "writer", "synchronous", c.sync},
			{s.w, "writer", "secure_delete", "1"},
			{s.w, "writer", "query_only", "0"},
			{s.r, "readers", "journal_mode", "wal"},
			{s.r, "readers", "foreign_keys", "1"},
			{s.r, "readers", "busy_timeout", "10000"},
			{s.r, "readers", "synchronous", c.sync},
			{s.r, "readers", "query_only", "1"},
		} {
			for range 3 {
				if got := pragma(t, p.db, p.pragma); got != p.want {
					t.Errorf("%s: PRAGMA %s = %s, want %s", p.name, p.pragma, got, p.want)
				}
			}
		}
		// Readers cannot write.
		if _, err := s.r.ExecContext(t.Context(), "INSERT INTO workspaces (id, created_at) VALUES ('x', 0)"); err == nil {
			t.Error("read pool accepted a write")
		}
		if got := s.w.Stats().MaxOpenConnections; got != 1 {
			t.Errorf("writer pool allows %d connections, want 1", got)
		}
	}
}

func TestForeignKeysEnforced(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	err := s.Tx(ctx, func(tx store.Tx) error {
		return tx.InsertRecord(ctx, "no-such-workspace", storetest.NewRecord("orphan"))
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("insert into a missing workspace: got %v, want ErrNotFound", err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := t.Context()
	for _, p := range []string{"", ":memory:", "file:x.db", "a?b.db"} {
		if s, err := Open(ctx, p, Options{}); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
	_, err := Open(ctx, filepath.Join(t.TempDir(), "missing", "dir", "memgate.db"), Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Open in a missing directory: got %v, want ErrUnavailable", err)
	}
}

func TestCloseTwice(t *testing.T) {
	s := openTest(t, Options{})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Ping(t.Context()); err == nil {
		t.Fatal("Ping after Close succeeded")
	}
}

func TestPingPathCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memgate.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Path() != path {
		t.Fatalf("Path() = %q, want %q", s.Path(), path)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := s.Tx(t.Context(), func(tx store.Tx) error {
		return tx.CreateWorkspace(t.Context(), memory.Workspace{ID: "a", CreatedAt: storetest.T0})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(t.Context()); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Fatalf("WAL is %d bytes after a truncating checkpoint", fi.Size())
	}
}

// TestPurgeLeavesNoTrace greps the raw database files for purged content.
func TestPurgeLeavesNoTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memgate.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	secret := "xyzzy-" + strings.Repeat("plugh-", 20)
	r := storetest.NewRecord(secret+" v1", func(r *memory.Record) {
		r.Metadata = []byte(`{"note":"` + secret + `"}`)
		r.Entities = []string{"secret:" + secret}
	})
	err = s.Tx(ctx, func(tx store.Tx) error {
		if err := tx.CreateWorkspace(ctx, memory.Workspace{ID: "a", CreatedAt: storetest.T0}); err != nil {
			return err
		}
		if err := tx.InsertRecord(ctx, "a", r); err != nil {
			return err
		}
		// Version 2 is long enough to spill into overflow pages.
		return tx.UpdateRecord(ctx, "a", storetest.NextVersion(r, storetest.T0, func(n *memory.Record) {
			n.Content = secret + strings.Repeat(" and more", 2000)
		}), 1)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Checkpoint so the content reaches the main file, then purge.
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if !fileContains(t, path, "xyzzy-") {
		t.Fatal("test is broken: content never reached the database file")
	}
	if err := s.Tx(ctx, func(tx store.Tx) error { return tx.PurgeRecord(ctx, "a", r.ID, storetest.T0) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal"} {
		if fileContains(t, f, "xyzzy-") {
			t.Errorf("%s still holds purged content", filepath.Base(f))
		}
	}
}

func fileContains(t *testing.T, path, needle string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(needle))
}

func TestReadsDoNotWaitForWriter(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	if err := s.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: "a", CreatedAt: storetest.T0})
	}); err != nil {
		t.Fatal(err)
	}
	err := s.Tx(ctx, func(tx store.Tx) error {
		if err := tx.InsertRecord(ctx, "a", storetest.NewRecord("pending")); err != nil {
			return err
		}
		// The writer holds its lock; readers still answer from the snapshot.
		_, err := s.ListRecords(ctx, "a", store.RecordQuery{Access: store.AccessFilter{Levels: memory.AccessLevels}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWorkListQueriesUseAnIndex keeps the embedding job's work list linear:
// a temporary sort would re-read every remaining record for each batch.
func TestWorkListQueriesUseAnIndex(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		`SELECT r.workspace_id, r.id, r.content, r.content_sha256 FROM records r
		 WHERE r.id > '' AND r.status <> 'forgotten'
		   AND NOT EXISTS (SELECT 1 FROM record_vectors v WHERE v.workspace_id = r.workspace_id AND v.record_id = r.id
		                   AND v.model = 'm' AND v.content_sha256 = r.content_sha256)
		 ORDER BY r.id LIMIT 64`,
		`SELECT workspace_id, id FROM records ORDER BY id`,
	} {
		rows, err := s.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, d := range plan {
			if strings.Contains(d, "TEMP B-TREE") {
				t.Fatalf("query sorts in a temporary b-tree: %v", plan)
			}
		}
	}
}

// TestScrubWaitsForOlderReaders is PostgreSQL's horizon case
// (TestScrubWaitsForTheHorizon) on SQLite: a reader of another store (as
// serve beside a CLI forget) holds a snapshot from before the erasure, so
// the database file must keep the page that holds the content until it
// ends. Scrub must not report success meanwhile, and succeeds, leaving
// nothing, once it ended.
func TestScrubWaitsForOlderReaders(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memgate.db")
	s, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(t.Context(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := t.Context()
	secret := "xyzzy-reader-" + memory.NewID()
	r := storetest.NewRecord(secret)
	err = s.Tx(ctx, func(tx store.Tx) error {
		if err := tx.CreateWorkspace(ctx, memory.Workspace{ID: "a", CreatedAt: storetest.T0}); err != nil {
			return err
		}
		return tx.InsertRecord(ctx, "a", r)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil || !fileContains(t, path, secret) {
		t.Fatalf("test is broken: the content is not in the database file (checkpoint: %v)", err)
	}
	older, err := other.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer older.Rollback()
	var content string
	if err := older.QueryRowContext(ctx, "SELECT content FROM records WHERE id = ?", r.ID).Scan(&content); err != nil || content != secret {
		t.Fatalf("the older reader read %q, %v", content, err)
	}
	if err := s.Tx(ctx, func(tx store.Tx) error { return tx.PurgeRecord(ctx, "a", r.ID, storetest.T0) }); err != nil {
		t.Fatal(err)
	}
	// The checkpoint reports the reader after 20ms instead of the busy
	// timeout's 10s (the writer pool is one connection): Scrub sees
	// "blocked" and retries until ctx ends, then fails.
	if _, err := s.w.ExecContext(ctx, "PRAGMA busy_timeout = 20"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = s.Scrub(short)
	cancel()
	if err == nil {
		t.Fatalf("Scrub succeeded while a reader older than the erasure is open (file holds the content: %t)", fileContains(t, path, secret))
	}
	if err := older.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := s.Scrub(ctx); err != nil {
		t.Fatalf("Scrub after the older reader ended: %v", err)
	}
	for _, f := range []string{path, path + "-wal"} {
		if fileContains(t, f, secret) {
			t.Errorf("%s still holds purged content", filepath.Base(f))
		}
	}
}

// TestCheckpointsOffTheWriter: the writer checkpoints inside a commit only
// at logRestartPages (the old code left SQLite's 1,000 pages); the Store's
// checkpointer copies the log after commits.
func TestCheckpointsOffTheWriter(t *testing.T) {
	s := openTest(t, Options{})
	ctx := t.Context()
	if got, want := pragma(t, s.w, "wal_autocheckpoint"), fmt.Sprint(logRestartPages); got != want {
		t.Fatalf("writer: PRAGMA wal_autocheckpoint = %s, want %s (the checkpointer copies the log)", got, want)
	}
	if err := s.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: "a", CreatedAt: storetest.T0})
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		err := s.Tx(ctx, func(tx store.Tx) error {
			return tx.InsertRecord(ctx, "a", storetest.NewRecord(fmt.Sprintf("record %d %s", i, strings.Repeat("x", 2000))))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.ckptRuns.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint ran within 10 s of 50 commits")
		}
		runtime.Gosched()
	}
}
