package core

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/memgate/memgate/internal/store"
)

// Readiness must say when the server cannot write (a full disk answers
// every write with 503 while reads and pings still work). The service
// watches its own write transactions: one that fails for want of the
// database (store.ErrUnavailable) marks writes as failing, and from then
// on WriteReady runs a small probe write until one commits. Nothing is
// probed while writes succeed, so readiness costs nothing then.

// writeWatch is the service's store: every write transaction passes
// through it.
type writeWatch struct {
	store.Store
	failing atomic.Bool
}

func (w *writeWatch) Tx(ctx context.Context, fn func(store.Tx) error) error {
	err := w.Store.Tx(ctx, fn)
	if err != nil && errors.Is(err, store.ErrUnavailable) && ctx.Err() == nil {
		w.failing.Store(true)
	}
	return err
}

// probeModel names the cache row the write probe rewrites: no embedder
// has this model, so the row is never read.
const probeModel = "memgate.write-probe"

// WriteReady reports whether the database takes writes: nil unless a
// write failed for want of the database and no probe write has committed
// since. While failing, each call tries one probe write.
func (s *Service) WriteReady(ctx context.Context) error {
	if !s.watch.failing.Load() {
		return nil
	}
	err := s.watch.Store.Tx(ctx, func(tx store.Tx) error {
		return tx.PutCachedEmbeddings(ctx, probeModel, map[string][]float32{"probe": {0}})
	})
	if err != nil {
		return storeErr(err, "write probe")
	}
	s.watch.failing.Store(false)
	return nil
}
