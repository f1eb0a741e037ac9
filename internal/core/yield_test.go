package core

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/svctest"
)

// TestFgPace: a background chunk runs with every core once requests have
// paused for fgQuiet, with one core after maxDefer under requests that
// never pause, and otherwise waits no longer than the first of the two.
func TestFgPace(t *testing.T) {
	t0 := time.Unix(1000, 0)
	max := 250 * time.Millisecond
	for _, c := range []struct {
		name                 string
		inflight             int64
		sinceReq, sinceChunk time.Duration
		run                  bool
		workers              int
		wait                 time.Duration
	}{
		{"idle", 0, time.Second, 0, true, 0, 0},
		{"just ended", 0, 5 * time.Millisecond, 0, false, 0, fgQuiet - 5*time.Millisecond},
		{"in flight", 2, time.Second, 10 * time.Millisecond, false, 0, fgQuiet},
		{"in flight, deferred long", 2, time.Second, max, true, 1, 0},
		{"in flight, deferral nearly over", 1, time.Second, max - 3*time.Millisecond, false, 0, 3 * time.Millisecond},
	} {
		run, workers, wait := fgPace(t0, c.inflight, t0.Add(-c.sinceReq), t0.Add(-c.sinceChunk), max)
		if run != c.run || workers != c.workers || wait != c.wait {
			t.Errorf("%s: run %v workers %d wait %v, want %v %d %v", c.name, run, workers, wait, c.run, c.workers, c.wait)
		}
	}
}

// workersEmbedder records the worker limit of each Embed call.
type workersEmbedder struct {
	hashEmbedder
	mu      sync.Mutex
	limits  []int
	batches []int
}

func (w *workersEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	w.mu.Lock()
	w.limits = append(w.limits, embed.Workers(ctx))
	w.batches = append(w.batches, len(texts))
	w.mu.Unlock()
	return w.hashEmbedder.Embed(ctx, texts)
}

// TestEmbedYieldsToRequests: while a request is in flight the embedding
// job still finishes its work (it is deferred, never starved), in chunks
// on one core; with no request in flight it uses every core.
func TestEmbedYieldsToRequests(t *testing.T) {
	ctx := context.Background()
	st := svctest.SQLite(t)
	emb := &workersEmbedder{}
	ix := retrieve.New(retrieve.Options{Embedder: emb})
	if _, err := ix.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Store: st, Policy: gate.Default(), Index: ix})
	if _, _, err := s.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"} {
		writeBelief(t, s, "the "+c+" cluster runs in Frankfurt")
	}
	s.fg.maxDefer = time.Millisecond
	end := s.fgBegin() // a request that never ends during the job
	n, err := s.EmbedPending(ctx, 100)
	end()
	if err != nil || n != 10 {
		t.Fatalf("EmbedPending under a request in flight: %d, %v; want all 10", n, err)
	}
	for i, l := range emb.limits {
		if l != 1 || emb.batches[i] > fgEmbedChunk {
			t.Fatalf("call %d under a request in flight: %d texts on %d workers, want at most %d on 1", i, emb.batches[i], l, fgEmbedChunk)
		}
	}
	emb.limits, emb.batches = nil, nil
	s.fg.last.Store(time.Now().Add(-time.Second).UnixNano()) // requests paused a second ago
	writeBelief(t, s, "the kilo cluster runs in Paris")
	s.fg.last.Store(time.Now().Add(-time.Second).UnixNano())
	if n, err := s.EmbedPending(ctx, 100); err != nil || n != 1 {
		t.Fatalf("EmbedPending idle: %d, %v", n, err)
	}
	if len(emb.limits) != 1 || emb.limits[0] != 0 {
		t.Fatalf("idle embedding limits %v, want one call without a limit", emb.limits)
	}
}
