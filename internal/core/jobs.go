package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/backoff"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// The durable job queue (SPEC §6, §13): jobs live in the database, are
// claimed atomically under a lease, retried with exponential backoff and
// jitter, and end done or dead with their last error. A job's effects
// commit in the same transaction that marks it done, and only while its
// worker still holds the lease, so every job's effects happen once even
// when a worker dies or a lease runs out mid-attempt.

// JobOptions tune the queue; zero values take the defaults.
type JobOptions struct {
	Workers     int           // default 2
	MaxAttempts int           // default 5
	Lease       time.Duration // default 2m: how long an attempt may run before another worker may take the job
	BackoffBase time.Duration // default 2s, doubled per attempt, with jitter
	BackoffMax  time.Duration // default 5m
	Poll        time.Duration // default 1s: how often idle workers look for jobs queued elsewhere or due for retry
}

func (o JobOptions) withDefaults() JobOptions {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	def(&o.Lease, 2*time.Minute)
	def(&o.BackoffBase, 2*time.Second)
	def(&o.BackoffMax, 5*time.Minute)
	def(&o.Poll, time.Second)
	return o
}

// jobCommitTimeout bounds the transaction that commits a job's effects,
// counted from when its handler returns, not from the attempt's start.
const jobCommitTimeout = 30 * time.Second

// jobCommit applies a job's effects inside the transaction that ends it
// and returns the job's result (the indexes read its writes from the
// change log after commit). It may be
// run more than once, each time in a new transaction after the last one
// rolled back (see commitJob), so it must not change state outside tx.
type jobCommit func(ctx context.Context, tx store.Tx) (jobEffects, error)

// jobEffects are a committed job's result. The indexes learn of its
// writes from the change logs (follow.go).
type jobEffects struct {
	result any
}

// jobHandler does a job's slow work outside any transaction (model
// calls) and returns the writes to commit. It must be idempotent in the
// sense that matters here: running it again after a failed attempt
// produces the same intended effects, which are committed at most once.
type jobHandler func(ctx context.Context, j store.Job) (jobCommit, error)

// jobQueue is the Service's queue state.
type jobQueue struct {
	opts        JobOptions
	maxAttempts int
	owner       string // lease owner id of this process
	wake        chan struct{}
	handlers    map[string]jobHandler

	mu   sync.Mutex
	done chan struct{} // closed and replaced whenever a job ends here
}

func newJobQueue(o JobOptions) *jobQueue {
	o = o.withDefaults()
	return &jobQueue{opts: o, maxAttempts: o.MaxAttempts, owner: "worker-" + memory.NewID(), wake: make(chan struct{}, 1),
		handlers: map[string]jobHandler{}, done: make(chan struct{})}
}

func (s *Service) wakeJobs() {
	select {
	case s.jobs.wake <- struct{}{}:
	default:
	}
}

func (q *jobQueue) ended() {
	q.mu.Lock()
	close(q.done)
	q.done = make(chan struct{})
	q.mu.Unlock()
}

func (q *jobQueue) endedChan() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.done
}

// WaitJob blocks until job id of workspace ws is done or dead (as seen by
// this process, or found so in the database when another process ran it
// and poll elapses), or ctx ends.
func (s *Service) WaitJob(ctx context.Context, ws, id string) (JobView, error) {
	for {
		ch := s.jobs.endedChan()
		j, err := s.store.GetJob(ctx, ws, id)
		if err != nil {
			return JobView{}, storeErr(err, "job")
		}
		if j.Status == store.JobDone || j.Status == store.JobDead {
			return viewJob(j), nil
		}
		t := time.NewTimer(s.jobs.opts.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return viewJob(j), ctx.Err()
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// RunJobs runs the worker pool until ctx ends, then waits for the
// workers' attempts in flight to be released.
func (s *Service) RunJobs(ctx context.Context) {
	var wg sync.WaitGroup
	for range s.jobs.opts.Workers {
		wg.Go(func() { s.jobWorker(ctx) })
	}
	wg.Wait()
}

func (s *Service) jobWorker(ctx context.Context) {
	kinds := make([]string, 0, len(s.jobs.handlers))
	for k := range s.jobs.handlers {
		kinds = append(kinds, k)
	}
	for ctx.Err() == nil {
		var (
			j  store.Job
			ok bool
		)
		err := s.store.Tx(ctx, func(tx store.Tx) error {
			var err error
			j, ok, err = tx.ClaimJob(ctx, kinds, s.jobs.owner, s.clock(), s.jobs.opts.Lease)
			return err
		})
		if err != nil && ctx.Err() == nil {
			s.log.Error("claiming a job failed", "err", err)
		}
		if err == nil && ok {
			s.runJob(ctx, j)
			continue
		}
		t := time.NewTimer(s.jobs.opts.Poll)
		select {
		case <-ctx.Done():
		case <-s.jobs.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// runJob runs one claimed attempt and records its outcome.
func (s *Service) runJob(ctx context.Context, j store.Job) {
	// The attempt must end before the lease does, or another worker may
	// take the job while this one still works on it.
	actx, cancel := context.WithTimeout(ctx, s.jobs.opts.Lease*9/10)
	defer cancel()
	start := time.Now()
	var err error
	h := s.jobs.handlers[j.Kind]
	if h == nil {
		err = fmt.Errorf("no handler for job kind %q", j.Kind)
	} else {
		var commit jobCommit
		commit, err = safeHandle(actx, h, j)
		if err == nil {
			_, err = s.commitJob(ctx, j, commit)
		}
	}
	s.metrics.ObserveJob(j.Kind, jobOutcome(err), time.Since(start))
	if err == nil {
		s.logMoved(ctx)
		s.jobs.ended()
		return
	}
	if errors.Is(err, errLeaseLost) {
		s.log.Warn("job lease lost; its attempt was rolled back", "job_id", j.ID, "kind", j.Kind)
		return
	}
	u := store.JobUpdate{Status: store.JobQueued, LastError: jobError(err), At: s.clock()}
	if ctx.Err() != nil {
		// Shutting down: hand the job back at once, without a penalty
		// beyond the attempt already counted.
		u.RunAfter = u.At
	} else if j.Attempts >= j.MaxAttempts {
		u.Status = store.JobDead
		u.RunAfter = u.At
	} else {
		u.RunAfter = u.At.Add(s.backoff(j.Attempts))
	}
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer fcancel()
	ferr := s.store.Tx(fctx, func(tx store.Tx) error {
		if err := tx.FinishJob(fctx, j.Workspace, j.ID, s.jobs.owner, u); err != nil {
			return err
		}
		if u.Status == store.JobDead {
			return tx.AppendEvent(fctx, store.JobDeadEvent(j, u.At))
		}
		return nil
	})
	if ferr != nil {
		s.log.Error("recording a job failure failed", "job_id", j.ID, "err", ferr)
	}
	if u.Status == store.JobDead {
		s.log.Error("job dead after its last attempt", "job_id", j.ID, "kind", j.Kind, "attempts", j.Attempts, "err", u.LastError)
		s.jobs.ended()
	} else {
		s.log.Warn("job attempt failed; will retry", "job_id", j.ID, "kind", j.Kind, "attempt", j.Attempts, "err", u.LastError)
	}
}

// errLeaseLost is what commitJob answers when the job's completion found
// its lease gone: another worker took the job over, and this attempt's
// effects were rolled back with the completion. It is told apart from a
// version conflict of the job's own writes, which is no reason to leave
// the job to its new holder: taking one for the other left a job running,
// its extraction never done, until its lease ran out (issue 14).
var errLeaseLost = errors.New("job lease lost")

// jobCommitTries bounds how often commitJob runs a job's commit whose
// writes conflicted with a concurrent transaction.
const jobCommitTries = 4

// commitJob commits a handler's effects together with the job's
// completion. The commit has a deadline of its own: a handler that used
// most of the attempt (a slow model) must not leave its commit, or its
// fallback's, without time. Committing after the lease ran out is safe:
// FinishJob checks the lease, and a job another worker took rolls back
// with it (errLeaseLost).
//
// A version conflict from the effects themselves is a race with another
// transaction (on PostgreSQL, another flush of the same user in this or
// another replica superseding the fact this one read in its
// transaction): the commit re-reads the heads it writes, so it is run
// again, as a write request's transaction is (records.go); after the
// last try the attempt fails and the job is retried later.
func (s *Service) commitJob(ctx context.Context, j store.Job, commit jobCommit) (jobEffects, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jobCommitTimeout)
	defer cancel()
	var fx jobEffects
	for try := 1; ; try++ {
		err := s.store.Tx(cctx, func(tx store.Tx) error {
			var err error
			fx, err = commit(cctx, tx)
			if err != nil {
				return err
			}
			raw, err := json.Marshal(fx.result)
			if err != nil {
				return err
			}
			err = tx.FinishJob(cctx, j.Workspace, j.ID, s.jobs.owner, store.JobUpdate{Status: store.JobDone, Result: raw, At: s.clock()})
			if errors.Is(err, store.ErrVersionConflict) {
				return fmt.Errorf("%w: %w", errLeaseLost, err)
			}
			return err
		})
		if err == nil || errors.Is(err, errLeaseLost) || !errors.Is(err, store.ErrVersionConflict) || try == jobCommitTries {
			return fx, err
		}
		s.log.Debug("job commit conflicted with a concurrent write; committing again", "job_id", j.ID, "kind", j.Kind, "try", try)
	}
}

// safeHandle turns a handler panic into an attempt failure.
func safeHandle(ctx context.Context, h jobHandler, j store.Job) (c jobCommit, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("job handler panicked: %v", r)
		}
	}()
	return h(ctx, j)
}

// backoff is the delay before the retry that follows attempt n (1-based):
// base·2^(n-1), capped, with "equal jitter" (half fixed, half random) so
// that failing jobs do not retry in lockstep.
func (s *Service) backoff(n int) time.Duration {
	return backoff.Delay(s.jobs.opts.BackoffBase, s.jobs.opts.BackoffMax, n-1)
}

func jobOutcome(err error) string {
	if err == nil {
		return "done"
	}
	return "failed"
}

// jobError is the error text stored on a job: the fault message when
// there is one (it is written for users), never a request body.
func jobError(err error) string {
	msg := err.Error()
	if fe := fault.As(err); fe.Code != fault.Internal {
		msg = fe.Message
	}
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	return msg
}
