package events_test

import (
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/events"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// outbox returns the workspace's events.
func (e *env) outbox(t *testing.T) []store.Event {
	evs, err := e.st.ListEvents(e.ctx, e.op.Workspace, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func kindsOf(evs []store.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// TestCoreEmits: the changes that matter append their events, naming ids
// only: a quarantined write, its rejection, a forgotten record and
// subject, a memory file's versions, a job given up on, a broken audit
// chain (once, however often it is checked). No event holds any text the
// records held.
func TestCoreEmits(t *testing.T) {
	e := newEnv(t, events.Options{})
	const secret = "sk-proj-4fQx9LmN2pR7tV3wZ8yB6cD1eG5hJ0kM"
	texts := []string{"deploy key " + secret, "alice prefers tea", "notes about the launch", "alice"}

	w, err := e.svc.Write(e.ctx, e.op, core.WriteRequest{Type: memory.Belief, Content: texts[0]})
	if err != nil || w.Decision != memory.DecisionQuarantined {
		t.Fatalf("write = %v, %v; want quarantined", w.Decision, err)
	}
	got := kindsOf(e.outbox(t))
	if strings.Join(got, ",") != "approval.pending,record.quarantined" {
		t.Fatalf("after a quarantined write: %v", got)
	}
	if _, err := e.svc.Reject(e.ctx, e.op, w.ApprovalID, ""); err != nil {
		t.Fatal(err)
	}
	r, err := e.svc.Write(e.ctx, e.op, core.WriteRequest{Type: memory.Belief, Content: texts[1], Entities: []string{"person:alice"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Forget(e.ctx, e.op, r.Record.ID); err != nil {
		t.Fatal(err)
	}
	f, err := e.svc.Write(e.ctx, e.op, core.WriteRequest{Type: memory.Resource, Category: "file", Content: texts[2],
		Metadata: json.RawMessage(`{"file_path":"/notes.md"}`)})
	if err != nil {
		t.Fatal(err)
	}
	content := texts[2] + " v2"
	v := f.Record.Version
	if _, err := e.svc.Patch(e.ctx, e.op, f.Record.ID, core.PatchRequest{ExpectedVersion: &v, Content: &content}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ForgetSubject(e.ctx, e.op, "person:alice"); err != nil {
		t.Fatal(err)
	}
	// A job whose worker died during its last attempt.
	now := e.clk.Now()
	err = e.st.Tx(e.ctx, func(tx store.Tx) error {
		if err := tx.InsertJob(e.ctx, store.Job{ID: memory.NewID(), Workspace: e.op.Workspace, Kind: "flush", Status: store.JobQueued,
			MaxAttempts: 1, RunAfter: now, CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		_, _, err := tx.ClaimJob(e.ctx, []string{"flush"}, "worker-1", now, time.Second)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = e.st.Tx(e.ctx, func(tx store.Tx) error {
		_, _, err := tx.ClaimJob(e.ctx, []string{"flush"}, "worker-2", now.Add(time.Minute), time.Second)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tamperAudit(t, e)
	e.svc.CheckAllAudit(e.ctx)
	e.svc.CheckAllAudit(e.ctx)

	evs := e.outbox(t)
	want := "approval.pending,record.quarantined,approval.decided,forget.completed,memory_file.changed,memory_file.changed," +
		"forget.completed,job.dead,audit.broken"
	if got := strings.Join(kindsOf(evs), ","); got != want {
		t.Fatalf("outbox kinds:\n got %s\nwant %s", got, want)
	}
	for _, ev := range evs {
		var subject map[string]any
		if err := json.Unmarshal(ev.Subject, &subject); err != nil || len(subject) == 0 {
			t.Errorf("%s: subject %s", ev.Kind, ev.Subject)
		}
		raw, _ := json.Marshal(ev)
		for _, s := range append(texts, "notes.md", "tea") {
			if strings.Contains(string(raw), s) {
				t.Errorf("event %s holds text %q: %s", ev.Kind, s, raw)
			}
		}
	}
}

// tamperAudit rewrites an audit entry behind memgate's back.
func tamperAudit(t *testing.T, e *env) {
	t.Helper()
	type pather interface{ Path() string }
	db, err := sql.Open("sqlite", e.st.(pather).Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, n := range []string{"audit_log_no_update"} {
		if _, err := db.Exec(`DROP TRIGGER IF EXISTS "` + n + `"`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`UPDATE audit_log SET actor_id = 'someone-else' WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
}
