package core

import (
	"context"
	"sync"
	"sync/atomic"
)

// The in-memory indexes (search, graph) have one input after they are
// loaded: the store's change logs. A write commits, then calls logMoved,
// which pulls the logs into the indexes before the write returns, so a
// write is searchable (an edge traversable) when its call returns. Other
// processes' writes arrive the same way, by the follow loop (lifecycle.go).
// Nothing hands committed records or graph changes to an index directly.

// catchUps runs the catch-ups of one index one at a time and lets a
// writer skip its own when a catch-up that began after the writer's
// commit has finished: under concurrent writes most of them share one
// read of the log.
type catchUps struct {
	started atomic.Uint64 // catch-ups begun
	mu      sync.Mutex
	covered uint64 // number of the last catch-up that finished; guarded by mu
}

// after runs fn unless a run begun after the call was made has already
// finished. A failed run covers nobody.
func (c *catchUps) after(fn func() error) error {
	t := c.started.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.covered > t {
		return nil
	}
	n := c.started.Add(1)
	if err := fn(); err != nil {
		return err
	}
	c.covered = n
	return nil
}

// logMoved follows a commit: the search index and the graph index (if
// loaded) read the change logs up to at least that commit. A failed read
// is logged; the follow loop applies the change later. It runs even when
// the request's context has ended, since the write has been committed.
func (s *Service) logMoved(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if s.index != nil {
		err := s.indexCatchUps.after(func() error {
			_, err := s.index.CatchUp(ctx, s.store)
			return err
		})
		if err != nil {
			s.log.Warn("index catch-up after a write failed; the follow loop retries", "err", err)
		}
		s.wakeEmbedder()
	}
	err := s.graphCatchUps.after(func() error {
		_, err := s.CatchUpGraph(ctx)
		return err
	})
	if err != nil {
		s.log.Warn("graph catch-up after a write failed; the follow loop retries", "err", err)
	}
}
