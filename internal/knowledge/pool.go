package knowledge

import (
	"context"
	"sync"
)

// ingestEach runs ingest on every item with workers goroutines at once (0:
// DefaultWorkers; never more than there are items). Each outcome goes to
// record, one at a time under a lock, in completion order; the first
// error record returns cancels ctx, stops the feed and is returned once
// the workers have finished. IngestPaths and IngestDocs share it: each
// document is its own transaction, and concurrent commits share fsyncs.
func ingestEach[T any](ctx context.Context, items []T, workers int,
	ingest func(ctx context.Context, it T) (Result, error),
	record func(it T, res Result, err error) error) error {
	if workers <= 0 {
		workers = DefaultWorkers
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
		next  = make(chan T)
	)
	for range min(workers, max(len(items), 1)) {
		wg.Go(func() {
			for it := range next {
				res, err := ingest(ctx, it)
				mu.Lock()
				if stop := record(it, res, err); stop != nil && first == nil {
					first = stop
					cancel()
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, it := range items {
		select {
		case next <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return first
}
