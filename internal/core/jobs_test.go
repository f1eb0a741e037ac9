package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// testClock is a manually advanced clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newJobService(t *testing.T, o JobOptions) (*Service, *testClock) {
	t.Helper()
	return newJobServiceLog(t, o, nil)
}

func newJobServiceLog(t *testing.T, o JobOptions, log *slog.Logger) (*Service, *testClock) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clk := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	if o.Poll == 0 {
		o.Poll = 5 * time.Millisecond
	}
	s := New(Options{Store: st, Policy: gate.Default(), Now: clk.Now, Jobs: o, Logger: log})
	if _, _, err := s.Bootstrap(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func enqueue(t *testing.T, s *Service, kind string) store.Job {
	t.Helper()
	now := s.clock()
	j := store.Job{ID: memory.NewID(), Workspace: memory.DefaultWorkspace, Kind: kind, Payload: json.RawMessage(`{}`),
		MaxAttempts: s.jobs.maxAttempts, RunAfter: now, CreatedAt: now, UpdatedAt: now}
	if err := s.store.Tx(t.Context(), func(tx store.Tx) error { return tx.InsertJob(t.Context(), j) }); err != nil {
		t.Fatal(err)
	}
	s.wakeJobs()
	return j
}

// runWorkers runs the pool until the test ends or stop is called.
func runWorkers(t *testing.T, s *Service) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.RunJobs(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// logSignal is a slog handler that reports each record's message.
type logSignal struct{ msgs chan string }

func (l logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (l logSignal) Handle(_ context.Context, r slog.Record) error {
	select {
	case l.msgs <- r.Message:
	default:
	}
	return nil
}
func (l logSignal) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logSignal) WithGroup(string) slog.Handler      { return l }

// effect is a job commit that appends one gatekeeper row, so tests can
// count how often a job's effects were committed.
func effect(j store.Job) jobCommit {
	return func(ctx context.Context, tx store.Tx) (jobEffects, error) {
		err := tx.InsertGatekeeper(ctx, store.GatekeeperEntry{ID: memory.NewID(), Workspace: j.Workspace, JobID: j.ID,
			MessageID: "m", Decision: "skip", Reason: "test"})
		return jobEffects{result: map[string]int{"n": 1}}, err
	}
}

func effects(t *testing.T, s *Service, j store.Job) int {
	t.Helper()
	es, err := s.store.ListGatekeeper(t.Context(), j.Workspace, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func wait(t *testing.T, s *Service, j store.Job) JobView {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	v, err := s.WaitJob(ctx, j.Workspace, j.ID)
	if err != nil {
		t.Fatalf("waiting for job: %v (last seen %+v)", err, v)
	}
	return v
}

func TestJobRetriesWithBackoffThenSucceeds(t *testing.T) {
	logs := logSignal{msgs: make(chan string, 100)}
	s, clk := newJobServiceLog(t, JobOptions{MaxAttempts: 5, BackoffBase: time.Minute, BackoffMax: time.Hour}, slog.New(logs))
	var attempts atomic.Int32
	s.jobs.handlers["test"] = func(ctx context.Context, j store.Job) (jobCommit, error) {
		if attempts.Add(1) <= 2 {
			return nil, errors.New("upstream said 503")
		}
		return effect(j), nil
	}
	runWorkers(t, s)
	j := enqueue(t, s, "test")
	for i := range 2 {
		// The failure is logged after it is recorded.
		for msg := range logs.msgs {
			if msg == "job attempt failed; will retry" {
				break
			}
		}
		got, err := s.store.GetJob(t.Context(), j.Workspace, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		// The retry waits for its backoff (base·2^(n-1), half of it
		// fixed): with the clock stopped nothing is claimable.
		min := clk.Now().Add(time.Minute << i / 2)
		if got.Status != store.JobQueued || got.Attempts != i+1 || got.RunAfter.Before(min) || got.LastError != "upstream said 503" {
			t.Fatalf("after attempt %d: %+v; want queued, run_after >= %v, the last error", i+1, got, min)
		}
		if n := attempts.Load(); n != int32(i+1) {
			t.Fatalf("attempts before the backoff elapsed = %d, want %d", n, i+1)
		}
		clk.Advance(time.Hour)
		s.wakeJobs()
	}
	v := wait(t, s, j)
	if v.Status != "done" || v.Attempts != 3 || string(v.Result) != `{"n":1}` || effects(t, s, j) != 1 {
		t.Fatalf("job = %+v with %d effects; want done after 3 attempts, 1 effect", v, effects(t, s, j))
	}
}

func TestJobDeadLetter(t *testing.T) {
	s, _ := newJobService(t, JobOptions{MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	s.now = time.Now // backoffs of a millisecond elapse on their own
	var attempts atomic.Int32
	s.jobs.handlers["test"] = func(ctx context.Context, j store.Job) (jobCommit, error) {
		attempts.Add(1)
		if j.Attempts == 2 {
			panic("handler bug")
		}
		return nil, errors.New("permanent failure")
	}
	runWorkers(t, s)
	j := enqueue(t, s, "test")
	v := wait(t, s, j)
	if v.Status != "dead" || v.Attempts != 3 || v.LastError != "permanent failure" || attempts.Load() != 3 {
		t.Fatalf("job = %+v after %d attempts; want dead after 3 with the last error", v, attempts.Load())
	}
}

func TestJobLostLeaseRollsBackEffects(t *testing.T) {
	logs := logSignal{msgs: make(chan string, 100)}
	s, clk := newJobServiceLog(t, JobOptions{Workers: 2, Lease: time.Minute}, slog.New(logs))
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	var calls atomic.Int32
	s.jobs.handlers["test"] = func(ctx context.Context, j store.Job) (jobCommit, error) {
		started <- struct{}{}
		if calls.Add(1) == 1 {
			// The first worker stalls past its lease; meanwhile the
			// second takes the job over and finishes it.
			<-release
		}
		return effect(j), nil
	}
	// The attempt's own deadline is on the wall clock; the lease is on
	// the service clock, which the test moves.
	stop := runWorkers(t, s)
	j := enqueue(t, s, "test")
	<-started
	clk.Advance(2 * time.Minute)
	s.wakeJobs()
	<-started
	v := wait(t, s, j)
	close(release)
	// The stalled worker commits its effects with the job's completion,
	// which fails on the lease check and takes the effects with it.
	for msg := range logs.msgs {
		if msg == "job lease lost; its attempt was rolled back" {
			break
		}
	}
	stop()
	if v.Status != "done" || v.Attempts != 2 || effects(t, s, j) != 1 {
		t.Fatalf("job %+v with %d effects, want done on attempt 2 with exactly 1 effect", v, effects(t, s, j))
	}
}

// A handler that used up its attempt still commits: the commit has a
// deadline of its own, so slow work before it (a model that hangs, then
// the pattern fallback) does not leave it without time.
func TestJobCommitHasItsOwnDeadline(t *testing.T) {
	s, _ := newJobService(t, JobOptions{MaxAttempts: 1, Lease: 200 * time.Millisecond})
	s.jobs.handlers["test"] = func(ctx context.Context, j store.Job) (jobCommit, error) {
		<-ctx.Done() // the attempt's deadline passes
		return effect(j), nil
	}
	runWorkers(t, s)
	j := enqueue(t, s, "test")
	v := wait(t, s, j)
	if v.Status != "done" || effects(t, s, j) != 1 {
		t.Fatalf("job %+v with %d effects; want done with its effect", v, effects(t, s, j))
	}
}

// A job whose commit conflicts with a concurrent write to a record it
// updates is committed again against the new head, in the same attempt;
// it is not taken for a lost lease. On the old code it was: the worker
// left the job running, its effects never committed, until the lease ran
// out (issue 14: flush jobs of two PostgreSQL replicas). The concurrent
// transaction is injected: SQLite runs one writer at a time.
func TestJobCommitConflictIsCommittedAgain(t *testing.T) {
	logs := logSignal{msgs: make(chan string, 100)}
	s, _ := newJobServiceLog(t, JobOptions{}, slog.New(logs))
	ctx := t.Context()
	w, err := s.Write(ctx, LocalOperator(memory.DefaultWorkspace), WriteRequest{Type: memory.Belief, Content: "the sky is green"})
	if err != nil {
		t.Fatal(err)
	}
	var commits atomic.Int32
	s.jobs.handlers["test"] = func(_ context.Context, j store.Job) (jobCommit, error) {
		return func(ctx context.Context, tx store.Tx) (jobEffects, error) {
			head, err := tx.GetRecord(ctx, j.Workspace, w.Record.ID)
			if err != nil {
				return jobEffects{}, err
			}
			if commits.Add(1) == 1 {
				// Another transaction moves the head after this one read it.
				other := head
				other.Version++
				if err := tx.UpdateRecord(ctx, j.Workspace, other, head.Version); err != nil {
					return jobEffects{}, err
				}
			}
			next := head
			next.Version++
			next.Content += " (checked)"
			if err := tx.UpdateRecord(ctx, j.Workspace, next, head.Version); err != nil {
				return jobEffects{}, err
			}
			return effect(j)(ctx, tx)
		}, nil
	}
	runWorkers(t, s)
	j := enqueue(t, s, "test")
	v := wait(t, s, j)
	if v.Status != "done" || v.Attempts != 1 || effects(t, s, j) != 1 || commits.Load() != 2 {
		t.Fatalf("job %+v with %d effects after %d commits; want done on attempt 1, committed on the second try, effect once",
			v, effects(t, s, j), commits.Load())
	}
	for len(logs.msgs) > 0 {
		if msg := <-logs.msgs; msg == "job lease lost; its attempt was rolled back" {
			t.Errorf("logged %q for a version conflict of the job's own write", msg)
		}
	}
}

// A commit that keeps conflicting fails the attempt, which is recorded:
// the job is queued again with its error, not left running.
func TestJobCommitConflictingForeverIsRetriedLater(t *testing.T) {
	s, _ := newJobService(t, JobOptions{BackoffBase: time.Hour})
	s.jobs.handlers["test"] = func(_ context.Context, j store.Job) (jobCommit, error) {
		return func(ctx context.Context, tx store.Tx) (jobEffects, error) {
			return jobEffects{}, fmt.Errorf("test: update record: %w", store.ErrVersionConflict)
		}, nil
	}
	runWorkers(t, s)
	j := enqueue(t, s, "test")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		got, err := s.store.GetJob(ctx, j.Workspace, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == store.JobQueued && got.Attempts == 1 {
			if got.LastError == "" || got.LeaseOwner != "" || !got.RunAfter.After(got.UpdatedAt) {
				t.Fatalf("job after a conflicting attempt: %+v; want queued for later with its error", got)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("job %+v: want queued again after its conflicting attempt", got)
		case <-s.jobs.endedChan():
		case <-time.After(5 * time.Millisecond):
		}
	}
}
