package embed

import "context"

type workersKey struct{}

// WithWorkers returns a context under which an embedder that computes in
// this process uses at most n goroutines for one Embed call (n < 1: no
// limit). Background work uses it to leave cores to the requests it runs
// beside (core's embedding job while requests are in flight).
func WithWorkers(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, workersKey{}, n)
}

// workerLimit returns the goroutines an Embed call under ctx may use, out of
// max.
func workerLimit(ctx context.Context, max int) int {
	if n, ok := ctx.Value(workersKey{}).(int); ok && n > 0 && n < max {
		return n
	}
	return max
}

// Workers returns the limit WithWorkers put on ctx, or 0 for none.
func Workers(ctx context.Context) int {
	if n, ok := ctx.Value(workersKey{}).(int); ok && n > 0 {
		return n
	}
	return 0
}
