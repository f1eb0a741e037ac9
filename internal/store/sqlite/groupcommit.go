package sqlite

import (
	"context"
	"fmt"
	"maps"

	"github.com/memgate/memgate/internal/store"
)

// Group commit. SQLite has one writer, so concurrent write transactions
// queue for it; what they wait for is mostly the commit (journal frames,
// the checkpoint). The writer goroutine therefore takes every transaction
// that has queued up (at most maxBatch) and runs them in ONE SQLite
// transaction, each inside its own SAVEPOINT: a function that fails rolls
// back to its savepoint and leaves the others intact, and one commit makes
// them all durable. Tx returns only after that commit, so an acknowledged
// write is as durable as before; a failed commit fails every member.
//
// Functions run on the writer goroutine with their caller's context values
// but without its cancellation: cancelling a statement would make SQLite
// roll back the whole shared transaction. A context cancelled before its
// function starts skips it.

const maxBatch = 64

type txReq struct {
	ctx  context.Context
	fn   func(store.Tx) error
	err  error
	pnc  any // a panic raised by fn, re-raised in the caller
	done chan struct{}
}

// errClosed is returned by Tx after Close.
var errClosed = fmt.Errorf("sqlite: store closed: %w", store.ErrUnavailable)

// Tx runs fn in a write transaction and commits it if fn returns nil. If
// fn returns an error its writes are rolled back and that error returned
// unchanged; if fn panics its writes are rolled back and the panic
// continues in the caller. Transactions are serialised in submission
// order, so fn must not call Tx itself.
func (s *Store) Tx(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	req := &txReq{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case s.queue <- req:
	case <-s.closing:
		return errClosed
	case <-ctx.Done():
		return fmt.Errorf("sqlite: begin: %w", ctx.Err())
	}
	<-req.done // once queued, the outcome is waited for: it may commit
	if req.pnc != nil {
		panic(req.pnc)
	}
	return req.err
}

// writer owns the writer connection until Close.
func (s *Store) writer() {
	batch := make([]*txReq, 0, maxBatch)
	for {
		select {
		case req := <-s.queue:
			batch = append(batch[:0], req)
		drain:
			for len(batch) < maxBatch {
				select {
				case r := <-s.queue:
					batch = append(batch, r)
				default:
					break drain
				}
			}
			s.runBatch(batch)
		case <-s.closing:
			for {
				select {
				case r := <-s.queue:
					r.err = errClosed
					close(r.done)
				default:
					return
				}
			}
		}
	}
}

func (s *Store) runBatch(batch []*txReq) {
	finish := func(err error) {
		for _, r := range batch {
			if err != nil && r.err == nil && r.pnc == nil {
				r.err = err
			}
			close(r.done)
		}
	}
	sqlTx, err := s.w.BeginTx(context.Background(), nil)
	if err != nil {
		finish(mapErr("sqlite: begin", err))
		return
	}
	t := &tx{}
	ct := &cachedTx{tx: sqlTx, c: s.wcache}
	// Runs after finish: the callers are answered first, and the
	// transaction has ended, so the writer connection is free.
	defer func() { s.wcache.prepare(ct.missed) }()
	t.conn = conn{db: ct, tx: sqlTx, pre: s.wstmts, cache: t.cache[:]}
	single := len(batch) == 1
	live := 0
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = fmt.Errorf("sqlite: begin: %w", err)
			continue
		}
		sp := fmt.Sprintf("tx%d", i)
		if !single {
			if _, err := sqlTx.Exec("SAVEPOINT " + sp); err != nil {
				_ = sqlTx.Rollback()
				finish(mapErr("sqlite: savepoint", err))
				return
			}
		}
		heads := maps.Clone(t.heads)
		r.err, r.pnc = call(t, r.fn)
		failed := r.err != nil || r.pnc != nil
		switch {
		case single && failed:
			_ = sqlTx.Rollback()
			finish(nil)
			return
		case failed:
			if _, err := sqlTx.Exec("ROLLBACK TO " + sp); err != nil {
				// SQLite rolled the whole transaction back (e.g. disk
				// full): nothing of the batch can commit.
				_ = sqlTx.Rollback()
				finish(mapErr("sqlite: rollback to savepoint", err))
				return
			}
			t.heads = heads // the chain heads as they were before it
			fallthrough
		case !single:
			if _, err := sqlTx.Exec("RELEASE " + sp); err != nil {
				_ = sqlTx.Rollback()
				finish(mapErr("sqlite: release savepoint", err))
				return
			}
		}
		if !failed {
			live++
		}
	}
	if live == 0 {
		_ = sqlTx.Rollback()
		finish(nil)
		return
	}
	if err := t.flushAuditHeads(context.Background()); err != nil {
		_ = sqlTx.Rollback()
		finish(err)
		return
	}
	if err := sqlTx.Commit(); err != nil {
		finish(mapErr("sqlite: commit", err))
		return
	}
	finish(nil)
	s.committed()
}

// call runs fn, turning a panic into a value so the writer survives it.
func call(t *tx, fn func(store.Tx) error) (err error, pnc any) {
	defer func() {
		if v := recover(); v != nil {
			pnc = v
		}
	}()

	return fn(t), nil
}
