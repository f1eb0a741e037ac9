package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func ingestTests() []struct {
	name string
	fn   func(t *testing.T, s store.Store)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Messages", testMessages},
		{"JobLifecycle", testJobLifecycle},
		{"JobLeaseExpiry", testJobLeaseExpiry},
		{"JobConcurrentClaims", testJobConcurrentClaims},
		{"Gatekeeper", testGatekeeper},
		{"DeleteMessages", testDeleteMessages},
	}
}

func newMessage(ws string, cv store.Conversation, sender string, ts int64, content string) store.Message {
	return store.Message{Workspace: ws, ID: memory.NewID(), Conversation: cv, SenderID: sender, Role: "user",
		Timestamp: ts, Content: content, ContentSHA256: memory.SHA256Hex(content), RecordID: memory.NewID(), CreatedAt: T0}
}

func testMessages(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	cv := store.Conversation{UserID: "u1", AppID: "default", ProjectID: "default", SessionID: "chat:1"}
	other := cv
	other.SessionID = "chat:2"
	m1 := newMessage("a", cv, "u1", 1000, "hello")
	m2 := newMessage("a", cv, "bot", 1001, "hi there")
	m3 := newMessage("a", other, "u1", 1000, "hello")
	mb := newMessage("b", cv, "u1", 1000, "hello")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, m := range []store.Message{m2, m1, m3, mb} {
			if err := tx.InsertMessage(ctx, m); err != nil {
				return err
			}
		}
		return nil
	})

	got, err := s.FindMessage(ctx, "a", m1)
	if err != nil || got != m1 {
		t.Fatalf("FindMessage = %+v, %v; want %+v", got, err, m1)
	}
	for _, probe := range []store.Message{
		{Conversation: cv, SenderID: "u1", Timestamp: 1001, ContentSHA256: m1.ContentSHA256},
		{Conversation: cv, SenderID: "u2", Timestamp: 1000, ContentSHA256: m1.ContentSHA256},
		{Conversation: cv, SenderID: "u1", Timestamp: 1000, ContentSHA256: memory.SHA256Hex("hello!")},
	} {
		if _, err := s.FindMessage(ctx, "a", probe); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("FindMessage(%+v) = %v, want ErrNotFound", probe, err)
		}
	}
	if _, err := s.FindMessage(ctx, "c", m1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("FindMessage in another workspace = %v, want ErrNotFound", err)
	}

	// The same key again is ErrExists and writes nothing.
	dup := newMessage("a", cv, "u1", 1000, "hello")
	err = s.Tx(ctx, func(tx store.Tx) error { return tx.InsertMessage(ctx, dup) })
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("InsertMessage duplicate = %v, want ErrExists", err)
	}

	var took int
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		var err error
		took, err = tx.TakeMessages(ctx, "a", cv, "job-1")
		return err
	})
	if took != 2 {
		t.Fatalf("TakeMessages took %d, want 2", took)
	}
	msgs, err := s.ListJobMessages(ctx, "a", "job-1")
	if err != nil {
		t.Fatal(err)
	}
	m1.JobID, m2.JobID = "job-1", "job-1"
	if len(msgs) != 2 || msgs[0] != m1 || msgs[1] != m2 {
		t.Fatalf("ListJobMessages = %+v, want m1, m2 in timestamp order", msgs)
	}
	// Taken messages are not taken again; the other session and
	// workspace were untouched.
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		var err error
		took, err = tx.TakeMessages(ctx, "a", cv, "job-2")
		return err
	})
	if took != 0 {
		t.Fatalf("second TakeMessages took %d, want 0", took)
	}
	if got, _ := s.FindMessage(ctx, "a", m3); got.JobID != "" {
		t.Fatalf("message of another session taken by %q", got.JobID)
	}
	if got, _ := s.FindMessage(ctx, "b", mb); got.JobID != "" {
		t.Fatalf("message of another workspace taken by %q", got.JobID)
	}
	if msgs, _ := s.ListJobMessages(ctx, "b", "job-1"); len(msgs) != 0 {
		t.Fatalf("ListJobMessages across workspaces = %d messages", len(msgs))
	}
}

func newJob(ws, kind string, runAfter time.Time) store.Job {
	return store.Job{ID: memory.NewID(), Workspace: ws, Kind: kind, Payload: json.RawMessage(`{"n":1}`),
		MaxAttempts: 3, RunAfter: runAfter, CreatedAt: T0, UpdatedAt: T0}
}

func claim(t *testing.T, s store.Store, now time.Time, owner string, kinds ...string) (store.Job, error) {
	t.Helper()
	var (
		j  store.Job
		ok bool
	)
	err := s.Tx(t.Context(), func(tx store.Tx) error {
		var err error
		j, ok, err = tx.ClaimJob(t.Context(), kinds, owner, now, time.Minute)
		return err
	})
	if err == nil && !ok {
		err = store.ErrNotFound
	}
	return j, err
}

func finish(s store.Store, ctx context.Context, j store.Job, owner string, u store.JobUpdate) error {
	return s.Tx(ctx, func(tx store.Tx) error { return tx.FinishJob(ctx, j.Workspace, j.ID, owner, u) })
}

func testJobLifecycle(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	early := newJob("a", "flush", T0)
	late := newJob("b", "flush", T0.Add(time.Hour))
	other := newJob("a", "other", T0)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, j := range []store.Job{late, early, other} {
			if err := tx.InsertJob(ctx, j); err != nil {
				return err
			}
		}
		return nil
	})
	got, err := s.GetJob(ctx, "a", early.ID)
	if err != nil || got.Status != store.JobQueued || got.Attempts != 0 || string(got.Payload) != `{"n":1}` || !got.RunAfter.Equal(T0) {
		t.Fatalf("GetJob = %+v, %v", got, err)
	}
	if _, err := s.GetJob(ctx, "b", early.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetJob across workspaces = %v, want ErrNotFound", err)
	}

	j, err := claim(t, s, T0, "w1", "flush")
	if err != nil || j.ID != early.ID || j.Status != store.JobRunning || j.Attempts != 1 || j.LeaseOwner != "w1" {
		t.Fatalf("first claim = %+v, %v; want the due flush job", j, err)
	}
	// The late job is not due and the other kind is not asked for.
	if j, err := claim(t, s, T0, "w2", "flush"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second claim = %+v, %v; want ErrNotFound", j, err)
	}

	// A retry goes back to the queue with a later RunAfter.
	retryAt := T0.Add(10 * time.Second)
	if err := finish(s, ctx, j, "w1", store.JobUpdate{Status: store.JobQueued, RunAfter: retryAt, LastError: "boom", At: T0}); err != nil {
		t.Fatal(err)
	}
	if _, err := claim(t, s, T0.Add(9*time.Second), "w1", "flush"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim before backoff elapsed = %v, want ErrNotFound", err)
	}
	j, err = claim(t, s, retryAt, "w2", "flush")
	if err != nil || j.ID != early.ID || j.Attempts != 2 || j.LastError != "boom" {
		t.Fatalf("claim after backoff = %+v, %v", j, err)
	}
	// The previous owner cannot finish an attempt it no longer holds.
	err = finish(s, ctx, j, "w1", store.JobUpdate{Status: store.JobDone, At: retryAt})
	if !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("FinishJob by a stale owner = %v, want ErrVersionConflict", err)
	}
	err = finish(s, ctx, j, "w2", store.JobUpdate{Status: store.JobDone, Result: json.RawMessage(`{"facts":2}`), At: retryAt})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetJob(ctx, "a", early.ID)
	if got.Status != store.JobDone || string(got.Result) != `{"facts":2}` || got.LeaseOwner != "" || got.LeaseUntil != nil {
		t.Fatalf("done job = %+v", got)
	}
	if err := finish(s, ctx, j, "w2", store.JobUpdate{Status: store.JobDone, At: retryAt}); !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("finishing a done job = %v, want ErrVersionConflict", err)
	}

	// Other kinds and later jobs are claimable by whoever asks for them.
	if j, err := claim(t, s, T0, "w1", "other", "flush"); err != nil || j.ID != other.ID {
		t.Fatalf("claim other = %+v, %v", j, err)
	}
	j, err = claim(t, s, T0.Add(time.Hour), "w1", "flush")
	if err != nil || j.ID != late.ID || j.Workspace != "b" {
		t.Fatalf("claim late = %+v, %v", j, err)
	}
	if err := finish(s, ctx, j, "w1", store.JobUpdate{Status: store.JobDead, LastError: "gave up", At: T0}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetJob(ctx, "b", late.ID); got.Status != store.JobDead || got.LastError != "gave up" {
		t.Fatalf("dead job = %+v", got)
	}
}

func testJobLeaseExpiry(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	job := newJob("a", "flush", T0)
	job.MaxAttempts = 2
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertJob(ctx, job) })
	if counts, err := s.CountJobs(t.Context()); err != nil || counts[string(store.JobQueued)] < 1 {
		t.Errorf("CountJobs = %v, %v; want a queued job", counts, err)
	}
	if _, err := claim(t, s, T0, "dead-worker", "flush"); err != nil {
		t.Fatal(err)
	}
	// Within the lease nobody else may take it; after it, another may.
	if _, err := claim(t, s, T0.Add(59*time.Second), "w2", "flush"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim within lease = %v, want ErrNotFound", err)
	}
	j, err := claim(t, s, T0.Add(time.Minute), "w2", "flush")
	if err != nil || j.ID != job.ID || j.Attempts != 2 || j.LeaseOwner != "w2" {
		t.Fatalf("claim after lease = %+v, %v", j, err)
	}
	// w2 dies too, on the last allowed attempt: the job is dead, not
	// claimed a third time.
	if j, err := claim(t, s, T0.Add(3*time.Minute), "w3", "flush"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim after the last attempt's lease = %+v, %v; want ErrNotFound", j, err)
	}
	got, _ := s.GetJob(ctx, "a", job.ID)
	if got.Status != store.JobDead || got.LastError == "" {
		t.Fatalf("job after its last worker died = %+v, want dead with an error", got)
	}
}

func testJobConcurrentClaims(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	const n = 20
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for range n {
			if err := tx.InsertJob(ctx, newJob("a", "flush", T0)); err != nil {
				return err
			}
		}
		return nil
	})
	var (
		mu    sync.Mutex
		seen  = map[string]string{}
		wg    sync.WaitGroup
		fails []error
	)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			for {
				var (
					j  store.Job
					ok bool
				)
				err := s.Tx(ctx, func(tx store.Tx) error {
					var err error
					j, ok, err = tx.ClaimJob(ctx, []string{"flush"}, owner, T0, time.Minute)
					return err
				})
				if err == nil && !ok {
					return
				}
				mu.Lock()
				if err != nil {
					fails = append(fails, err)
				} else if prev, ok := seen[j.ID]; ok {
					fails = append(fails, fmt.Errorf("job %s claimed by %s and %s", j.ID, prev, owner))
				} else {
					seen[j.ID] = owner
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(fails) > 0 || len(seen) != n {
		t.Fatalf("claimed %d distinct jobs of %d; errors: %v", len(seen), n, fails)
	}
}

func testGatekeeper(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	e1 := store.GatekeeperEntry{ID: memory.NewID(), Workspace: "a", JobID: "j1", MessageID: "m1", Decision: "ingest_pattern",
		Reason: "preference", Pattern: "i_prefer", Facts: 2, CreatedAt: T0}
	e2 := store.GatekeeperEntry{ID: memory.NewID(), Workspace: "a", JobID: "j1", MessageID: "m2", Decision: "skip",
		Reason: "no pattern matched", CreatedAt: T0.Add(time.Second)}
	e3 := store.GatekeeperEntry{ID: memory.NewID(), Workspace: "b", JobID: "j1", MessageID: "m3", Decision: "skip", Reason: "x", CreatedAt: T0}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, e := range []store.GatekeeperEntry{e2, e1, e3} {
			if err := tx.InsertGatekeeper(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	got, err := s.ListGatekeeper(ctx, "a", "j1")
	if err != nil || len(got) != 2 || got[0] != e1 || got[1] != e2 {
		t.Fatalf("ListGatekeeper = %+v, %v; want e1, e2", got, err)
	}

	// The workspace-wide log pages by id (time-ordered ids: e2 was
	// created first), filters, and never crosses workspaces.
	e4 := store.GatekeeperEntry{ID: memory.NewID(), Workspace: "a", JobID: "j2", MessageID: "m4", Decision: "skip",
		Reason: "no pattern matched", CreatedAt: T0.Add(2 * time.Second)}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertGatekeeper(ctx, e4) })
	all, err := s.ListGatekeeperLog(ctx, "a", store.GatekeeperQuery{Limit: 10})
	if err != nil || len(all) != 3 || all[0] != e1 || all[1] != e2 || all[2] != e4 {
		t.Fatalf("ListGatekeeperLog = %+v, %v; want e1, e2, e4 by id", all, err)
	}
	page, err := s.ListGatekeeperLog(ctx, "a", store.GatekeeperQuery{After: e1.ID, Limit: 1})
	if err != nil || len(page) != 1 || page[0] != e2 {
		t.Fatalf("page after e1 = %+v, %v; want e2", page, err)
	}
	for name, c := range map[string]struct {
		q    store.GatekeeperQuery
		want []store.GatekeeperEntry
	}{
		"decision": {store.GatekeeperQuery{Decision: "skip"}, []store.GatekeeperEntry{e2, e4}},
		"job":      {store.GatekeeperQuery{JobID: "j2"}, []store.GatekeeperEntry{e4}},
		"since":    {store.GatekeeperQuery{Since: T0.Add(time.Second)}, []store.GatekeeperEntry{e2, e4}},
		"both":     {store.GatekeeperQuery{Decision: "skip", JobID: "j1"}, []store.GatekeeperEntry{e2}},
	} {
		got, err := s.ListGatekeeperLog(ctx, "a", c.q)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: ListGatekeeperLog = %+v, %v; want %+v", name, got, err, c.want)
		}
	}
	if got, err := s.ListGatekeeperLog(ctx, "b", store.GatekeeperQuery{}); err != nil || len(got) != 1 || got[0] != e3 {
		t.Errorf("workspace b = %+v, %v; want e3 only", got, err)
	}
}

func testDeleteMessages(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	u1 := store.Conversation{UserID: "u1", AppID: "x", ProjectID: "y", SessionID: "chat:1"}
	u2 := u1
	u2.UserID = "u2"
	m1, m2 := newMessage("a", u1, "u1", 1, "one"), newMessage("a", u1, "bot", 2, "two")
	m3, m4 := newMessage("a", u2, "u2", 1, "three"), newMessage("a", u2, "u2", 2, "four")
	mb := newMessage("b", u1, "u1", 1, "one")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, m := range []store.Message{m1, m2, m3, m4, mb} {
			if err := tx.InsertMessage(ctx, m); err != nil {
				return err
			}
		}
		return nil
	})
	var n int
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		var err error
		n, err = tx.DeleteMessages(ctx, "a", "u1", []string{m3.RecordID, m1.RecordID})
		return err
	})
	if n != 3 {
		t.Fatalf("DeleteMessages removed %d, want 3 (u1's two and the one of record m3)", n)
	}
	for _, m := range []store.Message{m1, m2, m3} {
		if _, err := s.FindMessage(ctx, "a", m); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("message %q survived: %v", m.Content, err)
		}
	}
	if _, err := s.FindMessage(ctx, "a", m4); err != nil {
		t.Fatalf("u2's other message was removed: %v", err)
	}
	if _, err := s.FindMessage(ctx, "b", mb); err != nil {
		t.Fatalf("a message of another workspace was removed: %v", err)
	}
}
