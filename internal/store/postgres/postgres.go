// Package postgres is memgate's PostgreSQL storage backend, for many
// stateless `memgate serve` replicas sharing one database (SPEC §13). It
// implements the same store contract as the embedded SQLite backend and
// passes the same contract suite (storetest).
//
// A Store holds two pgx connection pools: one for write transactions and
// one for reads outside them, so that reads never queue behind writers
// (and a transaction that reads through the Store cannot starve itself of
// connections). Transactions run at READ COMMITTED; the places where the
// contract needs more take row locks: the head of a record being updated
// (SELECT ... FOR UPDATE, so stale writers get ErrVersionConflict), the
// audit chain head of a workspace, and job claims (FOR UPDATE SKIP LOCKED,
// so concurrent claimers take different jobs without waiting). The change
// logs are appended at commit under a transaction-scoped advisory lock so
// that their rows become visible in sequence order (changes.go).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/memgate/memgate/internal/dburl"
	"github.com/memgate/memgate/internal/store"
)

// Options tunes a Store. The zero value is the default configuration.
type Options struct {
	// ReadConns is the size of the read pool; zero means max(4, NumCPU).
	ReadConns int
	// WriteConns bounds concurrent write transactions; zero means 8.
	WriteConns int
}

// Store is the PostgreSQL implementation of store.Store.
type Store struct {
	conn // reads outside transactions: the read pool

	w *pgxpool.Pool // write transactions
	r *pgxpool.Pool // reads

	redacted string // the database URL without its password
	schema   string // the schema the tables live in (current_schema())
	// changeLock is the advisory lock key that orders appends to the
	// change logs of this schema (changes.go).
	changeLock int64

	// beforeCommit, when set (tests only), runs after the change logs
	// were appended and before COMMIT.
	beforeCommit func()

	closeOnce sync.Once
	closed    atomic.Bool
}

var _ store.Store = (*Store)(nil)

// IsURL reports whether s is a PostgreSQL database URL (postgres:// or
// postgresql://), the form that selects this backend.
func IsURL(s string) bool { return dburl.IsURL(s) }

// IsDSN reports whether s selects this backend: a URL (IsURL) or a
// libpq keyword/value connection string ("host=db dbname=memgate ...").
func IsDSN(s string) bool { return dburl.IsDSN(s) }

// IsKeywordDSN reports whether s is a libpq keyword/value connection
// string.
func IsKeywordDSN(s string) bool { return dburl.IsKeywordDSN(s) }

// Redact returns the URL with its password replaced by "xxxxx", for logs
// and error messages (dburl.Redact).
func Redact(rawURL string) string { return dburl.Redact(rawURL) }

// secrets returns the passwords a URL carries, in the forms they may take
// in a message.
func secrets(rawURL string) []string { return dburl.Secrets(rawURL) }

// redactedError hides secrets in an error's message and keeps the error
// chain for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactErr wraps err so that its message holds none of secrets.
func redactErr(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, "xxxxx")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// Open connects to the database at rawURL, applies any pending
// migrations and prepares the store for use. Its errors never contain the
// URL's password.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	s, err := open(ctx, rawURL, opts)
	return s, redactErr(err, secrets(rawURL))
}

func open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	redacted := Redact(rawURL)
	if !IsDSN(rawURL) {
		return nil, fmt.Errorf("postgres: open %s: want a postgres:// or postgresql:// URL or a keyword/value connection string", redacted)
	}
	nr := opts.ReadConns
	if nr <= 0 {
		nr = max(4, runtime.NumCPU())
	}
	nw := opts.WriteConns
	if nw <= 0 {
		nw = 8
	}
	w, err := newPool(ctx, rawURL, nw, "memgate-writer")
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", redacted, err)
	}
	s := &Store{w: w, redacted: redacted}
	if err := w.Ping(ctx); err != nil {
		w.Close()
		return nil, mapErr("postgres: connect to "+redacted, err)
	}
	if err := w.QueryRow(ctx, "SELECT coalesce(current_schema(), '')").Scan(&s.schema); err != nil {
		w.Close()
		return nil, mapErr("postgres: open "+redacted, err)
	}
	if s.schema == "" {
		w.Close()
		return nil, fmt.Errorf("postgres: open %s: no schema of the search_path exists to hold memgate's tables", redacted)
	}
	s.changeLock = lockKey("memgate.changes", s.schema)
	if err := migrate(ctx, w, s.schema, len(migrations)); err != nil {
		w.Close()
		return nil, err
	}
	r, err := newPool(ctx, rawURL, nr, "memgate-reader")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", redacted, err)
	}
	s.r = r
	if err := r.Ping(ctx); err != nil {
		s.Close()
		return nil, mapErr("postgres: connect to "+redacted, err)
	}
	s.conn = conn{q: r}
	return s, nil
}

func newPool(ctx context.Context, rawURL string, size int, appName string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(size)
	cfg.MinConns = 0
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// An unreachable host fails in seconds rather than at the
		// operating system's TCP timeout; connect_timeout overrides.
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = appName
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// lockKey derives an advisory lock key from a purpose and the schema, so
// that stores of different schemas in one database do not contend.
func lockKey(purpose, schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte(purpose))
	h.Write([]byte{0})
	h.Write([]byte(schema))
	return int64(h.Sum64())
}

// URL returns the database URL the store was opened with, password
// redacted.
func (s *Store) URL() string { return s.redacted }

// Ping reports whether both pools answer.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.Ping(ctx); err != nil {
		return mapErr("postgres: ping writer pool", err)
	}
	if err := s.r.Ping(ctx); err != nil {
		return mapErr("postgres: ping reader pool", err)
	}
	return nil
}

// scrubTables hold text (or vectors of it) that erasure removes
// (approvals: operators' decision reasons).
const scrubTables = "records, record_versions, record_entities, record_vectors, embedding_cache, messages, nodes, edges, approvals"

// Scrub rewrites the tables that held erased data (VACUUM FULL), so the
// dead row versions the erasing transaction left are gone from the
// relation files, their TOAST and their indexes. A plain VACUUM is not
// enough: it frees a dead tuple's line pointer but leaves its bytes in the
// page's free space until it is reused, where a read of the file finds
// them (PostgreSQL has no equivalent of SQLite's secure_delete). The
// rewrite holds an ACCESS EXCLUSIVE lock on each table while it copies
// the live rows (docs/erasure.md gives the cost). ANALYZE replaces the
// planner statistics, whose sampled column values may quote erased rows.
// WAL segments, archives, backups and replicas follow the operator's
// retention.
//
// The rewrite copies a dead row version, bytes and all, unless its
// deleting transaction precedes the database's xmin horizon: the oldest
// xid or snapshot xmin of this database's sessions (the rewrite's own
// included) and of replication slots. So Scrub first waits (until ctx
// ends) for the horizon to pass every transaction that had begun when it
// was called, the erasures among them (scrubHorizon). Waiting for the
// transactions that had started by then is not enough: a snapshot taken
// later still has an xmin before the erasure while any older transaction,
// in any database of the cluster, runs.
func (s *Store) Scrub(ctx context.Context) error {
	var next string
	if err := s.w.QueryRow(ctx, "SELECT pg_snapshot_xmax(pg_current_snapshot())::text").Scan(&next); err != nil {
		return mapErr("postgres: scrub", err)
	}
	full, err := strconv.ParseUint(next, 10, 64)
	if err != nil {
		return fmt.Errorf("postgres: scrub: next transaction id %q: %w", next, err)
	}
	for {
		var running bool
		var sessions, slots int
		err := s.w.QueryRow(ctx, sqlScrubHorizon, next, int64(full%(1<<32))).Scan(&running, &sessions, &slots)
		if err != nil {
			return mapErr("postgres: scrub", err)
		}
		if !running && sessions == 0 && slots == 0 {
			break
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("postgres: scrub: the erasure is not older than every open snapshot yet (transactions of the cluster older than it still run: %t; sessions of the database with an older snapshot: %d; replication slots holding an older xmin: %d): %w (%w)",
				running, sessions, slots, store.ErrUnavailable, ctx.Err())
		case <-t.C:
		}
	}
	_, err = s.w.Exec(ctx, "VACUUM (FULL, ANALYZE) "+scrubTables, pgx.QueryExecModeSimpleProtocol)
	return mapErr("postgres: scrub (vacuum full)", err)
}

// sqlScrubHorizon tells, for the transaction id $1 (xid8; $2 is it modulo
// 2^32, as the 32-bit xids of the views are), whether a transaction that
// began before it still runs anywhere in the cluster (then any new
// snapshot's xmin precedes $1: xids are cluster-wide), how many other
// sessions of this database hold an xid or snapshot xmin before it, and
// how many replication slots hold an xmin before it. A 32-bit xid x
// precedes $2 when ($2 - x) mod 2^32 is in [1, 2^31), as PostgreSQL
// compares xids. backend_xid and backend_xmin are shown to every role.
const sqlScrubHorizon = `
	SELECT pg_snapshot_xmin(pg_current_snapshot()) < $1::xid8,
		(SELECT count(DISTINCT a.pid) FROM pg_stat_activity a, LATERAL (VALUES (a.backend_xid), (a.backend_xmin)) AS v(x)
			WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND v.x IS NOT NULL
			AND ($2::bigint - v.x::text::bigint + 4294967296) % 4294967296 BETWEEN 1 AND 2147483647),
		(SELECT count(*) FROM pg_replication_slots r
			WHERE r.xmin IS NOT NULL AND ($2::bigint - r.xmin::text::bigint + 4294967296) % 4294967296 BETWEEN 1 AND 2147483647)`

// Close closes both pools. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.r != nil {
			s.r.Close()
		}
		s.w.Close()
	})
	return nil
}

// SchemaVersion returns the highest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return schemaVersion(ctx, s.r)
}

// querier is what reads need from a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// conn runs queries on either the read pool or inside a write
// transaction. It implements store.Reader for both.
type conn struct {
	q querier
}

// tx is a write transaction; it implements store.Tx.
type tx struct {
	conn
	// Change-log entries written by this transaction, appended at commit
	// (changes.go).
	changes      []pendingChange
	graphChanges []pendingChange
	// Events appended by this transaction, written at commit like the
	// change log so their seqs are in commit order (events.go).
	events []store.Event
}

var _ store.Tx = (*tx)(nil)

// connectTimeout bounds a connection attempt unless the URL's
// connect_timeout says otherwise.
const connectTimeout = 10 * time.Second

// rollbackTimeout bounds the rollback of a failed transaction.
const rollbackTimeout = 10 * time.Second

// errClosed is returned by Tx after Close.
var errClosed = fmt.Errorf("postgres: store closed: %w", store.ErrUnavailable)

// Tx runs fn in a write transaction and commits it if fn returns nil. If
// fn returns an error its writes are rolled back and that error returned
// unchanged; if fn panics its writes are rolled back and the panic
// continues in the caller. Unlike SQLite's, transactions run
// concurrently, each on its own connection; statements honour ctx, so a
// cancelled ctx rolls the transaction back.
func (s *Store) Tx(ctx context.Context, fn func(store.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	if s.closed.Load() {
		return errClosed
	}
	pt, err := s.w.Begin(ctx)
	if err != nil {
		return mapErr("postgres: begin", err)
	}
	done := false
	defer func() {
		if !done {
			// fn failed or panicked, or the commit did not happen: roll
			// back even if ctx is cancelled. A rollback that fails closes
			// the connection, which ends the transaction too.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			_ = pt.Rollback(rctx)
			cancel()
		}
	}()
	t := &tx{conn: conn{q: pt}}
	if err := fn(t); err != nil {
		return err
	}
	if err := t.appendChanges(ctx, s.changeLock); err != nil {
		return err
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	done = true
	if err := pt.Commit(ctx); err != nil {
		if errors.Is(err, pgx.ErrTxCommitRollback) {
			return fmt.Errorf("postgres: commit: a statement of the transaction failed, so it was rolled back: %w", err)
		}
		return mapErr("postgres: commit", err)
	}
	return nil
}
