package core

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/svctest"
)

// replicaSet is two or more services on one PostgreSQL database, each
// with its own connection pool, index and job workers, as `memgate
// serve` processes are (issue 14).
type replicaSet struct {
	url  string
	user CreatedUser
	logs logSignal // every replica's log messages
}

func newReplicaSet(t *testing.T) *replicaSet {
	return &replicaSet{url: pgtest.URL(t), logs: logSignal{msgs: make(chan string, 1000)}}
}

// replica opens one more service on the set's database; the first
// bootstraps the workspace and creates the user dana. now is its clock
// (nil is the wall clock).
func (rs *replicaSet) replica(t *testing.T, now func() time.Time) *Service {
	t.Helper()
	ctx := t.Context()
	pol := gate.Default()
	pol.RateLimit.User = gate.Bucket{}
	st, err := postgres.Open(ctx, rs.url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ix := svctest.Index(t, st)
	s := New(Options{Store: st, Policy: pol, Index: ix, Now: now, Logger: slog.New(rs.logs),
		Jobs: JobOptions{Workers: 2, Poll: 20 * time.Millisecond}})
	if rs.user.UserID == "" {
		if _, _, err := s.Bootstrap(ctx); err != nil {
			t.Fatal(err)
		}
		if rs.user, err = s.CreateUser(ctx, LocalOperator(memory.DefaultWorkspace), "dana"); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// dana is the set's user as authenticated by s.
func (rs *replicaSet) dana(t *testing.T, s *Service) memory.Principal {
	t.Helper()
	p, err := s.AuthenticateUser(t.Context(), memory.DefaultWorkspace, rs.user.UserID, rs.user.UserKey)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// session is a conversation of dana's with turns user turns, each
// answered, stating facts that overlap with other sessions' so that
// concurrent flushes reconcile against the same facts.
func session(userID string, i, turns int) (store.Conversation, []GatewayMessage) {
	facts := []string{"I live in Lisbon", "my favourite colour is green", "I work as a nurse", "I have two cats", "I moved to Oslo in May", "my sister is called Ines"}
	cv := store.Conversation{UserID: userID, AppID: "chat", ProjectID: "p", SessionID: fmt.Sprint("s", i)}
	var msgs []GatewayMessage
	for k := range turns {
		ts := int64(1_760_000_000_000 + i*1000 + k*10)
		msgs = append(msgs, GatewayMessage{SenderID: userID, Role: "user", Timestamp: ts, Content: fmt.Sprintf("%s (session %d, turn %d)", facts[(i+k)%len(facts)], i, k)},
			GatewayMessage{SenderID: "assistant", Role: "assistant", Timestamp: ts + 1, Content: fmt.Sprintf("Noted, turn %d of session %d.", k, i)})
	}
	return cv, msgs
}

// extractedOnce fails the test unless the gatekeeper log holds each of
// want messages exactly once, and the workspace's audit chain, appended
// to by every replica, verifies.
func extractedOnce(t *testing.T, s *Service, want int) {
	t.Helper()
	ctx, ws := t.Context(), memory.DefaultWorkspace
	seen := map[string]string{}
	q := store.GatekeeperQuery{Limit: store.MaxLimit}
	for {
		page, err := s.store.ListGatekeeperLog(ctx, ws, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			if prev, dup := seen[e.MessageID]; dup {
				t.Errorf("message %s extracted twice: by jobs %s and %s", e.MessageID, prev, e.JobID)
			}
			seen[e.MessageID] = e.JobID
		}
		if len(page) < q.Limit {
			break
		}
		q.After = page[len(page)-1].ID
	}
	if len(seen) != want {
		t.Errorf("gatekeeper log holds %d messages, want each of the %d flushed exactly once", len(seen), want)
	}
	rep, err := s.VerifyAudit(ctx, ws)
	if err != nil || !rep.OK {
		t.Fatalf("audit chain: %+v, %v", rep, err)
	}
}

// TestReplicasFlushOncePostgres: one user's conversations are added and
// flushed through two replicas at once; every flush job ends done after
// one attempt, every message is in the gatekeeper log exactly once (no
// job's messages were extracted twice or not at all), and the
// workspace's audit chain, appended to by both replicas, verifies.
//
// On the old code about one run in three left a job running: two flushes
// superseding the same fact raced on PostgreSQL, and the loser's version
// conflict was taken for a lost lease, so its job was abandoned with its
// extraction undone until the lease ran out. -count=10 shows it.
func TestReplicasFlushOncePostgres(t *testing.T) {
	ctx, ws := t.Context(), memory.DefaultWorkspace
	rs := newReplicaSet(t)
	a, b := rs.replica(t, nil), rs.replica(t, nil)
	users := map[*Service]memory.Principal{a: rs.dana(t, a), b: rs.dana(t, b)}
	runWorkers(t, a)
	runWorkers(t, b)

	const sessions, turns = 12, 3
	var (
		mu   sync.Mutex
		jobs []string
		sent int
		wg   sync.WaitGroup
	)
	for i := range sessions {
		s := []*Service{a, b}[i%2]
		wg.Go(func() {
			cv, msgs := session(rs.user.UserID, i, turns)
			if _, err := s.GatewayAdd(ctx, users[s], cv, msgs); err != nil {
				t.Error(err)
				return
			}
			// The other replica flushes: the job is queued on one and may
			// be run by either.
			other := map[*Service]*Service{a: b, b: a}[s]
			fr, err := other.GatewayFlush(ctx, users[other], cv)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			jobs, sent = append(jobs, fr.JobID), sent+fr.Messages
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if sent != sessions*turns*2 {
		t.Fatalf("flushes took %d messages, want %d", sent, sessions*turns*2)
	}
	// The lease is two minutes: a job still running after 30 seconds
	// was abandoned.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, id := range jobs {
		j, err := a.WaitJob(wctx, ws, id)
		if err != nil {
			t.Fatalf("job %s: %s after %d attempts: %v", id, j.Status, j.Attempts, err)
		}
		if j.Status != string(store.JobDone) || j.Attempts != 1 {
			t.Errorf("job %s: %s after %d attempts (%s), want done after one", id, j.Status, j.Attempts, j.LastError)
		}
	}
	for len(rs.logs.msgs) > 0 {
		if msg := <-rs.logs.msgs; msg == "job lease lost; its attempt was rolled back" {
			t.Errorf("a replica logged %q, with no lease run out", msg)
		}
	}
	extractedOnce(t, b, sent)
}

// TestReplicaCrashJobReclaimedPostgres: a replica that claimed a flush
// job and then stopped working on it (a crash, a hung process) holds it
// only until its lease ends; then another replica takes it, on its
// second attempt, and extracts its messages once. When the first comes
// back to life its commit fails on the lease and adds nothing. The lease
// runs out on an injected clock, not by waiting.
func TestReplicaCrashJobReclaimedPostgres(t *testing.T) {
	ctx, ws := t.Context(), memory.DefaultWorkspace
	rs := newReplicaSet(t)
	clkA := &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	clkB := &testClock{t: clkA.Now()}
	a, b := rs.replica(t, clkA.Now), rs.replica(t, clkB.Now)

	claimed, revive := make(chan store.Job, 1), make(chan struct{})
	flush := a.jobs.handlers[FlushJobKind]
	a.jobs.handlers[FlushJobKind] = func(ctx context.Context, j store.Job) (jobCommit, error) {
		claimed <- j
		<-revive // the replica "crashed" holding the job
		return flush(ctx, j)
	}
	runWorkers(t, a)

	dana := rs.dana(t, a)
	cv, msgs := session(rs.user.UserID, 1, 3)
	if _, err := a.GatewayAdd(ctx, dana, cv, msgs); err != nil {
		t.Fatal(err)
	}
	fr, err := a.GatewayFlush(ctx, dana, cv)
	if err != nil {
		t.Fatal(err)
	}
	j := <-claimed
	if j.ID != fr.JobID || j.Attempts != 1 {
		t.Fatalf("replica a claimed %s on attempt %d, want %s on attempt 1", j.ID, j.Attempts, fr.JobID)
	}

	// Within the lease replica b cannot take the job.
	clkB.Advance(time.Minute)
	_ = b.store.Tx(ctx, func(tx store.Tx) error {
		got, ok, err := tx.ClaimJob(ctx, []string{FlushJobKind}, b.jobs.owner, clkB.Now(), b.jobs.opts.Lease)
		if err == nil && ok {
			t.Errorf("replica b claimed %s (attempt %d) within a's lease", got.ID, got.Attempts)
		}
		return fmt.Errorf("roll back: %w", err) // whatever happened, claim nothing
	})
	if t.Failed() {
		t.FailNow()
	}

	// Past it, b takes the job over and finishes it.
	clkB.Advance(time.Minute + time.Second)
	runWorkers(t, b)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := b.WaitJob(wctx, ws, j.ID)
	if err != nil || v.Status != string(store.JobDone) || v.Attempts != 2 {
		t.Fatalf("job after a's lease ran out: %+v, %v; want done by b on attempt 2", v, err)
	}

	// a comes back: its late commit must not extract the messages again.
	close(revive)
	for lost := false; !lost; {
		select {
		case msg := <-rs.logs.msgs:
			lost = msg == "job lease lost; its attempt was rolled back"
		case <-wctx.Done():
			t.Fatal("replica a's late commit did not end on its lost lease")
		}
	}
	extractedOnce(t, b, len(msgs))
}
