// Package sqlite is memgate's embedded storage backend: one SQLite file in
// WAL mode, opened through the cgo-free modernc.org/sqlite driver.
//
// A Store holds two connection pools on the same file: a single-connection
// writer, on which every transaction begins IMMEDIATE so that writers queue
// in Go instead of failing with SQLITE_BUSY, and a read-only pool that
// serves reads outside transactions from WAL snapshots, concurrently with
// the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Options tunes a Store. The zero value is the default configuration.
type Options struct {
	// SyncFull sets synchronous=FULL, which makes every commit durable
	// against power loss at the price of an fsync per transaction. The
	// default, synchronous=NORMAL in WAL mode, is durable against a crash
	// of the process but may lose the last commits on power loss.
	SyncFull bool
	// ReadConns is the size of the read pool; zero means max(4, NumCPU).
	ReadConns int
}

// busyTimeoutMS is how long a connection waits for a lock held by another
// process before the operation fails with store.ErrUnavailable.
const busyTimeoutMS = 10000

// Store is the SQLite implementation of store.Store.
type Store struct {
	conn // reads outside transactions: the read pool

	path string
	w    *sql.DB // writer: exactly one connection
	r    *sql.DB // readers: query_only connections

	wstmts []*sql.Stmt // every statement, prepared on the writer
	// The statements built at run time, prepared per text (stmtcache.go).
	wcache, rcache *stmtCache

	closeOnce sync.Once
	closeErr  error

	// Group commit: Tx hands its function to the writer goroutine, which
	// runs whatever has queued up in one SQLite transaction.
	queue   chan *txReq
	closing chan struct{}
	writerD sync.WaitGroup

	// The checkpointer (checkpoint.go), woken after commits.
	ckptWake chan struct{}
	ckptRuns atomic.Int64 // checkpoints run, for tests
	// ckptMu keeps the checkpointer's runs and Checkpoint apart: SQLite
	// answers a checkpoint that meets another one running as blocked, so
	// a truncating Checkpoint (erasure's) would fail now and then merely
	// because this store's own checkpointer had just been woken.
	ckptMu sync.Mutex
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database file at path, applies any
// pending migrations and prepares the store for use.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" || strings.ContainsRune(path, '?') || strings.HasPrefix(path, "file:") || strings.Contains(path, ":memory:") {
		return nil, fmt.Errorf("sqlite: open: path %q must name a database file", path)
	}
	w, err := sql.Open("sqlite", dsn(path, opts, roleWriter))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open writer: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	s := &Store{path: path, w: w}
	// The writer connects first: it creates the file and switches it to
	// WAL, which the read-only connections cannot do.
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, mapErr("sqlite: open "+path, err)
	}
	if err := migrate(ctx, w, len(migrations)); err != nil {
		w.Close()
		return nil, err
	}

	n := opts.ReadConns
	if n <= 0 {
		n = max(4, runtime.NumCPU())
	}
	r, err := sql.Open("sqlite", dsn(path, opts, roleReader))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open readers: %w", err)
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(0)
	s.r = r
	if err := r.PingContext(ctx); err != nil {
		s.Close()
		return nil, mapErr("sqlite: open "+path, err)
	}

	if s.wstmts, err = prepareAll(ctx, w, numStmts); err != nil {
		s.Close()
		return nil, err
	}
	rstmts, err := prepareAll(ctx, r, numReadStmts)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.wcache, s.rcache = newStmtCache(w), newStmtCache(r)
	s.conn = conn{db: cachedPool{db: r, c: s.rcache}, pre: rstmts}
	// The checkpointer's own connection (checkpoint.go).
	ck, err := sql.Open("sqlite", dsn(path, opts, roleCheckpointer))
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: open checkpointer: %w", err)
	}
	ck.SetMaxOpenConns(1)
	ck.SetMaxIdleConns(1)
	ck.SetConnMaxLifetime(0)
	ck.SetConnMaxIdleTime(0)
	s.queue = make(chan *txReq, maxBatch)
	s.closing = make(chan struct{})
	s.ckptWake = make(chan struct{}, 1)
	s.writerD.Go(s.writer)
	s.writerD.Go(func() { s.checkpointer(ck) })
	return s, nil
}

// connRole is what a connection is for; dsn gives each its pragmas.
type connRole int

const (
	roleReader       connRole = iota // query_only
	roleWriter                       // the one writer
	roleCheckpointer                 // copies the log (checkpoint.go)
)

// dsn builds the driver data source name. Every connection gets the same
// pragmas; the writer additionally begins transactions IMMEDIATE, zeroes
// freed pages (secure_delete) so that purged content leaves the file, and
// leaves most checkpoints to the checkpointer (checkpoint.go); readers are
// query_only.
func dsn(path string, opts Options, role connRole) string {
	syncMode := "NORMAL"
	if opts.SyncFull {
		syncMode = "FULL"
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous("+syncMode+")")
	switch role {
	case roleWriter:
		q.Add("_pragma", "secure_delete(1)")
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", logRestartPages))
		q.Set("_txlock", "immediate")
	case roleReader:
		q.Set("_query_only", "1")
	}
	return path + "?" + q.Encode()
}

func prepareAll(ctx context.Context, db *sql.DB, n stmtID) ([]*sql.Stmt, error) {
	out := make([]*sql.Stmt, n)
	for i := range n {
		st, err := db.PrepareContext(ctx, stmtSQL[i])
		if err != nil {
			for _, p := range out[:i] {
				p.Close()
			}
			return nil, mapErr(fmt.Sprintf("sqlite: prepare statement %d", i), err)
		}
		out[i] = st
	}
	return out, nil
}

// Path returns the database file path the store was opened with.
func (s *Store) Path() string { return s.path }

// Ping reports whether both pools answer.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return mapErr("sqlite: ping writer", err)
	}
	if err := s.r.PingContext(ctx); err != nil {
		return mapErr("sqlite: ping readers", err)
	}
	return nil
}

// Scrub makes deleted data unrecoverable from the files: secure_delete
// zeroes it in the database, and a truncating checkpoint (Checkpoint)
// removes the write-ahead log that still holds the old pages. A reader
// holding an old snapshot blocks the truncation; Scrub retries until ctx
// ends.
func (s *Store) Scrub(ctx context.Context) error {
	for {
		err := s.Checkpoint(ctx)
		if err == nil || !errors.Is(err, store.ErrUnavailable) {
			return err
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("sqlite: scrub: %w (%w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// Close closes both pools. It is safe to call more than once; later calls
// return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.closing != nil {
			close(s.closing)
			s.writerD.Wait()
		}
		// Let SQLite refresh planner statistics where they went stale, as
		// its documentation advises before closing; failure is harmless.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = s.w.ExecContext(ctx, "PRAGMA analysis_limit = 400")
		_, _ = s.w.ExecContext(ctx, "PRAGMA optimize")
		cancel()

		var errs []error
		for _, st := range s.wstmts {
			errs = append(errs, st.Close())
		}
		for _, st := range s.pre {
			errs = append(errs, st.Close())
		}
		for _, c := range []*stmtCache{s.wcache, s.rcache} {
			if c != nil {
				errs = append(errs, c.close())
			}
		}
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		errs = append(errs, s.w.Close())
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Checkpoint copies the write-ahead log into the database file and
// truncates the log (PRAGMA wal_checkpoint(TRUNCATE)). It fails if readers
// kept the checkpoint from completing.
func (s *Store) Checkpoint(ctx context.Context) error {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	var busy, logPages, done int
	err := s.w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done)
	if err != nil {
		return mapErr("sqlite: checkpoint", err)
	}
	if busy != 0 {
		return fmt.Errorf("sqlite: checkpoint: blocked by readers (%d of %d pages copied): %w", done, logPages, store.ErrUnavailable)
	}
	return nil
}

// SchemaVersion returns the highest migration applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return schemaVersion(ctx, s.r)
}

// queryer is what reads need from a pool or a transaction.
type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// conn runs queries on either the read pool (tx == nil) or inside a write
// transaction. It implements store.Reader for both.
type conn struct {
	db    queryer
	tx    *sql.Tx
	pre   []*sql.Stmt // statements prepared on the pool
	cache []*sql.Stmt // transaction-bound copies of pre, made on first use
}

// stmt returns statement id ready to run on c.
func (c *conn) stmt(ctx context.Context, id stmtID) *sql.Stmt {
	if c.tx == nil {
		return c.pre[id]
	}
	if st := c.cache[id]; st != nil {
		return st
	}
	st := c.tx.StmtContext(ctx, c.pre[id])
	c.cache[id] = st
	return st
}

// tx is a write transaction; it implements store.Tx.
type tx struct {
	conn
	cache [numStmts]*sql.Stmt
	heads map[string]auditHead // audit chain heads of this transaction (AppendAudit)
	// lastChange is the seq of the change-log row written last
	// (logChange); lastWrite, when lastWritten, the record head that
	// row is of, as a read returns it (InsertRecord).
	lastChange  int64
	lastWrite   memory.Record
	lastWritten bool
}

var (
	_ store.Tx              = (*tx)(nil)
	_ store.ChangeSequencer = (*tx)(nil)
)

// LastWrite returns the record inserted last in this write transaction
// and the seq of its change-log row, if that row is the last one written
// (store.ChangeSequencer): the writer holds SQLite's write lock, so the
// seq is the row's for good once the transaction commits.
func (t *tx) LastWrite() (int64, memory.Record, bool) {
	return t.lastChange, t.lastWrite, t.lastWritten && t.lastChange > 0
}

// detach strips cancellation from the context of statements run inside a
// write transaction: SQLite answers an interrupted write by rolling back
// the whole transaction, which under group commit is shared with other
// callers. Reads on the pool stay cancellable.
func (c *conn) detach(ctx context.Context) context.Context {
	if c.tx == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
