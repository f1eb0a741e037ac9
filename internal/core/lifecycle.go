package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/fault"
)

// The Service owns its background work. A process that keeps the service
// open (serve, mcp) calls Run, which starts every loop Options.Loops
// enables and stops them all when its context ends or Close is called; a
// one-shot command never calls Run, and its Close settles what the
// command started that no loop will finish (see docs/lifecycle.md).
//
// Always, under Run:
//   - usage: retrieval counters, batched;
//   - embedding: vectors for this process's writes (woken at once), for
//     other processes' records the change follower applied (woken by it),
//     and a sweep every Loops.EmbedSweep for the rest;
//   - follow: the change logs of records and graph, polled every
//     Loops.Follow, so other processes' writes become searchable.
//
// When enabled: approvals expiry, audit re-check, durable job workers,
// index snapshots, scheduled maintenance.

// Loops select and pace the background work Run does.
type Loops struct {
	// Jobs runs the durable job workers. serve enables it: only the
	// gateway queues jobs, and their handlers use serve's extraction
	// configuration.
	Jobs bool
	// Expiry runs approval expiry this often; 0 disables it.
	Expiry time.Duration
	// AuditCheck re-verifies every audit chain this often (what /readyz
	// reports); 0 disables it.
	AuditCheck time.Duration
	// SnapshotPath is where the search index snapshot is saved: when
	// changed, at most every snapshotEvery, and at shutdown. "" disables
	// snapshots.
	SnapshotPath string
	// SaveSnapshot, when set, saves the snapshot instead of the index's
	// own SaveSnapshot: serve checks each save against erasures other
	// processes committed meanwhile, and answers ErrSnapshotStale to skip
	// one (it is retried once the index has caught up).
	SaveSnapshot func(path string) error
	// Follow is how often the change logs are polled; 0 is 250ms.
	Follow time.Duration
	// EmbedSweep is how often the embedding loop looks for records
	// without a vector nobody told it about; 0 is 30s.
	EmbedSweep time.Duration
	// Usage is how often retrieval counters are written; 0 is 1s.
	Usage time.Duration
	// Webhooks runs webhook delivery from the event outbox
	// (internal/events). serve enables it.
	Webhooks bool
	// Maintenance, when set, is the scheduled maintenance loop
	// (internal/maintain builds it; serve enables it). Run starts it with
	// the others and stops it with them; it must return when ctx ends.
	Maintenance func(ctx context.Context, s *Service)
	// Settle bounds the work Close does: the final catch-up and snapshot
	// after Run, and embedding this process's writes; 0 is 15s.
	Settle time.Duration
}

func (l Loops) withDefaults() Loops {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&l.Follow, 250*time.Millisecond)
	def(&l.EmbedSweep, 30*time.Second)
	def(&l.Usage, time.Second)
	def(&l.Settle, 15*time.Second)
	return l
}

// lifecycle is the Service's record of its running loops.
type lifecycle struct {
	mu      sync.Mutex
	running bool
	closed  bool
	stop    context.CancelFunc
	done    chan struct{}
}

// Run starts the background loops and blocks until ctx ends or Close is
// called. It then stops every loop, waits for them, and does the shutdown
// work: a last catch-up of the change log and, when snapshots are
// enabled, a snapshot of the search index. It returns an error only when
// the service is already running or closed.
func (s *Service) Run(ctx context.Context) error {
	lc := &s.life
	lc.mu.Lock()
	if lc.running || lc.closed {
		lc.mu.Unlock()
		return fault.New(fault.Conflict, "the service is already running or closed")
	}
	ctx, cancel := context.WithCancel(ctx)
	lc.running, lc.stop, lc.done = true, cancel, make(chan struct{})
	done := lc.done
	lc.mu.Unlock()
	defer close(done)
	defer cancel()

	l := s.loops
	var wg sync.WaitGroup
	wg.Go(func() { s.RunUsage(ctx, l.Usage) })
	wg.Go(func() { s.RunEmbedder(ctx, l.EmbedSweep) })
	wg.Go(func() { s.follow(ctx, l.Follow) })
	if l.Expiry > 0 {
		wg.Go(func() { s.RunExpiry(ctx, l.Expiry) })
	}
	if l.AuditCheck > 0 {
		wg.Go(func() { s.RunAuditChecks(ctx, l.AuditCheck) })
	}
	if l.Jobs {
		wg.Go(func() { s.RunJobs(ctx) })
	}
	if l.Webhooks {
		wg.Go(func() { s.deliverer.Run(ctx) })
	}
	if l.Maintenance != nil {
		wg.Go(func() { l.Maintenance(ctx, s) })
	}
	if l.SnapshotPath != "" && s.index != nil {
		wg.Go(func() { s.saveSnapshots(ctx, l.SnapshotPath) })
	}
	<-ctx.Done()
	wg.Wait()

	// The loops have stopped: apply the last changes (other processes'
	// too) and save the index for a fast next start.
	if s.index != nil && l.SnapshotPath != "" {
		sctx, cancel := context.WithTimeout(context.Background(), l.Settle)
		if _, err := s.index.CatchUp(sctx, s.store); err != nil {
			s.log.Warn("index catch-up before the snapshot failed", "err", err)
		}
		cancel()
		if s.index.Dirty() {
			s.saveSnapshot(l.SnapshotPath, "shutdown")
		}
	}
	return nil
}

// Close stops Run if it is running and waits for it to return. Then it
// settles this process's own work that no loop will finish: queued usage
// counters are written, and records this process wrote get their vectors,
// within Loops.Settle. The error reports records left without a vector
// (search finds them by words until a later serve or mcp embeds them);
// the store is the caller's to close.
func (s *Service) Close() error {
	lc := &s.life
	lc.mu.Lock()
	if lc.closed {
		lc.mu.Unlock()
		return nil
	}
	lc.closed = true
	stop, done, ran := lc.stop, lc.done, lc.running
	lc.mu.Unlock()
	if ran {
		stop()
		<-done
	} else {
		// RunUsage drains the queue and writes it when its context has
		// ended.
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		s.RunUsage(ended, time.Hour)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.loops.Settle)
	defer cancel()
	return s.embedOwnWrites(ctx)
}

// embedOwnWrites embeds the records this process indexed that still lack
// a vector, until none is left or ctx ends.
func (s *Service) embedOwnWrites(ctx context.Context) error {
	if s.index == nil || s.index.Embedder() == nil {
		return nil
	}
	var last error
	for s.index.PendingCount() > 0 {
		n, err := s.embedIndexed(ctx, embedBatch)
		if err != nil {
			last = err
		}
		if err != nil || n == 0 || ctx.Err() != nil {
			break
		}
	}
	if left := s.index.PendingCount(); left > 0 {
		msg := fmt.Sprintf("%d record(s) stored without a vector yet; search finds them by their words until serve or mcp embeds them", left)
		if last == nil {
			last = ctx.Err()
		}
		if last == nil {
			return fault.New(fault.Unavailable, msg)
		}
		return fault.Wrap(fault.Unavailable, last, "%s (%v)", msg, last)
	}
	return nil
}

// PendingVectors is how many records this process indexed without a
// vector of their current content yet.
func (s *Service) PendingVectors() int {
	if s.index == nil {
		return 0
	}
	return s.index.PendingCount()
}

// follow applies the change logs of records and graph every interval
// until ctx ends, so other processes' writes become searchable and
// traversable. Records whose content it changed wake the embedding loop:
// their vectors were computed by the writer (found in the embedding
// cache) or are computed here.
func (s *Service) follow(ctx context.Context, interval time.Duration) {
	every(ctx, interval, func() {
		if s.index != nil {
			n, err := s.index.CatchUp(ctx, s.store)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("index catch-up failed", "err", err)
			}
			if n > 0 && s.index.PendingCount() > 0 {
				s.wakeEmbedder()
			}
		}
		if _, err := s.CatchUpGraph(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("graph catch-up failed", "err", err)
		}
	})
}

// wakeEmbedder nudges the embedding loop without blocking.
func (s *Service) wakeEmbedder() {
	select {
	case s.embedWake <- struct{}{}:
	default:
	}
}

// Snapshot cadence: a changed index is saved every snapshotEvery; one that
// has no snapshot yet, or has forgotten records since the last (whose
// derived data the file still holds), at the next check.
const (
	snapshotCheck = 10 * time.Second
	snapshotEvery = 5 * time.Minute
)

// ErrSnapshotStale is what a Loops.SaveSnapshot answers when it skipped a
// save because a record was forgotten after the state it would write.
var ErrSnapshotStale = errors.New("search index snapshot skipped: a record was forgotten since")

// saveSnapshots saves the index snapshot until ctx ends. It does not catch
// up itself: follow does, and two catch-ups must not run at once.
func (s *Service) saveSnapshots(ctx context.Context, path string) {
	t := time.NewTicker(snapshotCheck)
	defer t.Stop()
	last, failed := time.Now(), false
	for {
		st := s.index.SnapshotStatus()
		urgent := !st.Saved || st.Forgotten > 0
		if st.Dirty && (urgent && !failed || time.Since(last) >= snapshotEvery) {
			why := "periodic"
			switch {
			case st.Forgotten > 0:
				why = "forget"
			case !st.Saved:
				why = "first"
			}
			err := s.saveSnapshot(path, why)
			// A save skipped for an erasure the index has not applied yet
			// is retried once it has (the erasure makes it urgent).
			failed = err != nil && !errors.Is(err, ErrSnapshotStale)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Service) saveSnapshot(path, why string) error {
	start := time.Now()
	save := s.index.SaveSnapshot
	if s.loops.SaveSnapshot != nil {
		save = s.loops.SaveSnapshot
	}
	if err := save(path); err != nil {
		if errors.Is(err, ErrSnapshotStale) {
			s.log.Info("search index snapshot not saved: a record was forgotten since the index's state; retrying after catch-up", "path", path)
		} else {
			s.log.Warn("cannot save the search index snapshot", "path", path, "err", err)
		}
		return err
	}
	var size int64
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	s.log.Info("search index snapshot saved", "reason", why, "bytes", size, "took", time.Since(start).String())
	return nil
}
