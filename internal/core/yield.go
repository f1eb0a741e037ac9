package core

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/memgate/memgate/internal/embed"
)

// Background embedding yields to requests (issue 14). A USE-Lite vector
// costs about 2 ms of CPU, more than a whole gated write, and the job used
// every core: on a two-core machine it starved the requests beside it
// (16 clients' acknowledged writes fell from ~2,100/s to ~680/s, the
// drop-in's search_nodes p95 rose from ~5 ms to ~50 ms while it caught up
// after create_entities). So the job embeds in small chunks, each only
// after requests have paused for fgQuiet, or, under requests that never
// pause, one chunk on one core every fgMaxDefer (a second) so it still makes
// progress. Search ranks a record without a vector lexically meanwhile,
// as it does while the job catches up after a restart; vectors are never
// on a write's path, so durability is unchanged.
const (
	fgQuiet      = 20 * time.Millisecond
	fgMaxDefer   = time.Second
	fgEmbedChunk = 8
)

// foreground counts the requests in flight and when the last one ended.
type foreground struct {
	inflight atomic.Int64
	last     atomic.Int64 // unix nanoseconds
	maxDefer time.Duration
}

// fgBegin marks a request in flight; call the function it returns when
// it ends: defer s.fgBegin()().
func (s *Service) fgBegin() func() {
	s.fg.inflight.Add(1)
	return func() {
		s.fg.last.Store(time.Now().UnixNano())
		s.fg.inflight.Add(-1)
	}
}

// fgPace decides whether a background chunk may run now: with every core
// (workers 0) when requests have paused for fgQuiet, with one core when the
// last chunk ran maxDefer ago, else not (wait says for how long at most).
func fgPace(now time.Time, inflight int64, lastRequest, lastChunk time.Time, maxDefer time.Duration) (run bool, workers int, wait time.Duration) {
	if inflight == 0 && now.Sub(lastRequest) >= fgQuiet {
		return true, 0, 0
	}
	if now.Sub(lastChunk) >= maxDefer {
		return true, 1, 0
	}
	wait = min(fgQuiet, maxDefer-now.Sub(lastChunk))
	if inflight == 0 {
		wait = min(wait, fgQuiet-now.Sub(lastRequest))
	}
	return false, 0, max(wait, time.Millisecond)
}

// embedPaced is emb.Embed(ctx, texts) in chunks of fgEmbedChunk, each
// paced by fgPace.
func (s *Service) embedPaced(ctx context.Context, emb interface {
	Embed(context.Context, []string) ([][]float32, error)
}, texts []string) ([][]float32, error) {
	maxDefer := s.fg.maxDefer
	if maxDefer <= 0 {
		maxDefer = fgMaxDefer
	}
	out := make([][]float32, 0, len(texts))
	lastChunk := time.Now()
	for len(texts) > 0 {
		chunk := texts[:min(fgEmbedChunk, len(texts))]
		texts = texts[len(chunk):]
		for {
			run, workers, wait := fgPace(time.Now(), s.fg.inflight.Load(), time.Unix(0, s.fg.last.Load()), lastChunk, maxDefer)
			if run {
				vecs, err := emb.Embed(embed.WithWorkers(ctx, workers), chunk)
				if err != nil {
					return nil, err
				}
				out = append(out, vecs...)
				lastChunk = time.Now()
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
	}
	return out, nil
}
