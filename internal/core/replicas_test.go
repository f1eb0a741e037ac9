package core

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
)

// TestReplicasFlushOncePostgres runs two replicas (two services, each
// with its own connection pool, index and job workers) on one PostgreSQL
// database, as two `memgate serve` processes do (issue 14). One user's
// conversations are added and flushed through both at once; every flush
// job ends done after one attempt, every message is in the gatekeeper
// log exactly once (no job's messages were extracted twice or not at
// all), and the workspace's audit chain, appended to by both replicas,
// verifies.
func TestReplicasFlushOncePostgres(t *testing.T) {
	url := pgtest.URL(t)
	ctx := context.Background()
	pol := gate.Default()
	pol.RateLimit.User = gate.Bucket{}
	replica := func(bootstrap bool) *Service {
		st, err := postgres.Open(ctx, url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		ix := retrieve.New(retrieve.Options{})
		if _, err := ix.Load(ctx, st); err != nil {
			t.Fatal(err)
		}
		s := New(Options{Store: st, Policy: pol, Index: ix, Jobs: JobOptions{Workers: 2, Poll: 20 * time.Millisecond}})
		if bootstrap {
			if _, _, err := s.Bootstrap(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	a, b := replica(true), replica(false)
	ws := memory.DefaultWorkspace
	u, err := a.CreateUser(ctx, LocalOperator(ws), "dana")
	if err != nil {
		t.Fatal(err)
	}
	users := map[*Service]memory.Principal{}
	for _, s := range []*Service{a, b} {
		if users[s], err = s.AuthenticateUser(ctx, ws, u.UserID, u.UserKey); err != nil {
			t.Fatal(err)
		}
	}
	jctx, stopJobs := context.WithCancel(ctx)
	var workers sync.WaitGroup
	for _, s := range []*Service{a, b} {
		workers.Go(func() { s.RunJobs(jctx) })
	}
	defer func() { stopJobs(); workers.Wait() }()

	const sessions, turns = 12, 3
	facts := []string{"I live in Lisbon", "my favourite colour is green", "I work as a nurse", "I have two cats", "I moved to Oslo in May", "my sister is called Ines"}
	var (
		mu   sync.Mutex
		jobs []string
		sent int
		wg   sync.WaitGroup
	)
	for i := range sessions {
		s := []*Service{a, b}[i%2]
		wg.Go(func() {
			cv := store.Conversation{UserID: u.UserID, AppID: "chat", ProjectID: "p", SessionID: fmt.Sprint("s", i)}
			var msgs []GatewayMessage
			for k := range turns {
				ts := int64(1_760_000_000_000 + i*1000 + k*10)
				msgs = append(msgs, GatewayMessage{SenderID: u.UserID, Role: "user", Timestamp: ts, Content: fmt.Sprintf("%s (session %d, turn %d)", facts[(i+k)%len(facts)], i, k)},
					GatewayMessage{SenderID: "assistant", Role: "assistant", Timestamp: ts + 1, Content: fmt.Sprintf("Noted, turn %d of session %d.", k, i)})
			}
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
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, id := range jobs {
		j, err := a.WaitJob(wctx, ws, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != string(store.JobDone) || j.Attempts != 1 {
			t.Errorf("job %s: %s after %d attempts (%s), want done after one", id, j.Status, j.Attempts, j.LastError)
		}
	}
	seen := map[string]string{}
	q := store.GatekeeperQuery{Limit: store.MaxLimit}
	for {
		page, err := b.store.ListGatekeeperLog(ctx, ws, q)
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
	if len(seen) != sent {
		t.Errorf("gatekeeper log holds %d messages, want each of the %d flushed exactly once", len(seen), sent)
	}
	rep, err := b.VerifyAudit(ctx, ws)
	if err != nil || !rep.OK {
		t.Fatalf("audit chain: %+v, %v", rep, err)
	}
}
