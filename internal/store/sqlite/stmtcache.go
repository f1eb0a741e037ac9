package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// The statement cache (issue 14). Most of the store's queries are built
// at run time (filters, IN lists), and SQLite parsing and planning a
// statement costs about as much as running it: profiled, a batch of 100
// create_entities spent a third of its time in the parser. The pools and
// the write transaction therefore run every query text through a prepared
// statement kept per text, up to stmtCacheMax texts (queries beyond that
// are run unprepared, so a stream of one-off texts cannot grow it).

// stmtCacheMax bounds the distinct query texts kept prepared per pool.
const stmtCacheMax = 512

// stmtCache holds the statements prepared on one pool, by query text.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}}
}

// get returns the statement of query, preparing it on first use; nil when
// the cache is full or the text does not prepare (the caller then runs
// it unprepared, which reports the error as before).
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(ctx, query)
}

// lookup returns the statement of query if it is prepared already.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

// prepare prepares the texts not prepared yet (the writer calls it
// between transactions with the texts a transaction missed).
func (c *stmtCache) prepare(queries []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range queries {
		c.getLocked(context.Background(), q)
	}
}

func (c *stmtCache) getLocked(ctx context.Context, query string) *sql.Stmt {
	if st, ok := c.m[query]; ok {
		return st
	}
	if len(c.m) >= stmtCacheMax {
		return nil
	}
	st, err := c.db.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil
	}
	c.m[query] = st
	return st
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	clear(c.m)
	return errors.Join(errs...)
}

// cachedPool runs queries on a pool through its statement cache.
type cachedPool struct {
	db *sql.DB
	c  *stmtCache
}

func (p cachedPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.c.get(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.db.ExecContext(ctx, query, args...)
}

func (p cachedPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.c.get(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.db.QueryContext(ctx, query, args...)
}

func (p cachedPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.c.get(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.db.QueryRowContext(ctx, query, args...)
}

// cachedTx runs a write transaction's queries through the writer's
// statement cache: the writer pool has one connection, so binding a
// cached statement to the transaction reuses its prepared form. The
// transaction holds that one connection, so a text not in the cache
// cannot be prepared on the pool now: it is prepared on the transaction
// (reused within it) and noted in missed, which the writer prepares on
// the pool once the transaction has ended.
type cachedTx struct {
	tx     *sql.Tx
	c      *stmtCache
	bound  map[string]*sql.Stmt
	missed []string
}

func (t *cachedTx) stmt(ctx context.Context, query string) *sql.Stmt {
	if st, ok := t.bound[query]; ok {
		return st
	}
	var st *sql.Stmt
	if pooled := t.c.lookup(query); pooled != nil {
		st = t.tx.StmtContext(ctx, pooled)
	} else {
		var err error
		if st, err = t.tx.PrepareContext(ctx, query); err != nil {
			return nil
		}
		if len(t.missed) < stmtCacheMax {
			t.missed = append(t.missed, query)
		}
	}
	if t.bound == nil {
		t.bound = map[string]*sql.Stmt{}
	}
	t.bound[query] = st
	return st
}

func (t *cachedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t *cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t *cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}
