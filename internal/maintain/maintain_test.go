package maintain

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/postgres"
	"github.com/memgate/memgate/internal/store/postgres/pgtest"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// clock is the injectable time every test drives by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type env struct {
	svc *core.Service
	st  store.Store
	clk *clock
	op  memory.Principal
}

// backends runs a test on SQLite and PostgreSQL.
func backends(t *testing.T, fn func(t *testing.T, open func(t *testing.T, pol gate.Policy, loops core.Loops) env)) {
	t.Run("sqlite", func(t *testing.T) {
		fn(t, func(t *testing.T, pol gate.Policy, loops core.Loops) env {
			st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return newEnv(t, st, pol, loops)
		})
	})
	t.Run("postgres", func(t *testing.T) {
		fn(t, func(t *testing.T, pol gate.Policy, loops core.Loops) env {
			st, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return newEnv(t, st, pol, loops)
		})
	})
}

func newEnv(t *testing.T, st store.Store, pol gate.Policy, loops core.Loops) env {
	t.Helper()
	t.Cleanup(func() { st.Close() })
	clk := &clock{t: t0}
	ix := svctest.Index(t, st)
	svc := core.New(core.Options{Store: st, Policy: pol, Index: ix, Now: clk.Now, Loops: loops})
	if _, _, err := svc.Bootstrap(t.Context()); err != nil {
		t.Fatal(err)
	}
	return env{svc: svc, st: st, clk: clk, op: core.LocalOperator(memory.DefaultWorkspace)}
}

func (e env) write(t *testing.T, typ memory.Type, content string) memory.Record {
	t.Helper()
	res, err := e.svc.Write(t.Context(), e.op, core.WriteRequest{Type: typ, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	return res.Record
}

func (e env) get(t *testing.T, id string) memory.Record {
	t.Helper()
	r, err := e.st.GetRecord(t.Context(), memory.DefaultWorkspace, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// auditEvents counts the audit entries per event.
func (e env) auditEvents(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	var after int64
	for {
		es, err := e.st.ListAudit(t.Context(), memory.DefaultWorkspace, after, 500)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			return out
		}
		for _, x := range es {
			out[x.Event]++
			after = x.Seq
		}
	}
}

func TestScore(t *testing.T) {
	hl := gate.Default().Maintenance.HalfLife
	r := memory.Record{Type: memory.Episode, CreatedAt: t0}
	if s := Score(hl, r, t0); s != 1 {
		t.Fatalf("fresh record scores %v", s)
	}
	if s := Score(hl, r, t0.Add(30*24*time.Hour)); s != 0.5 {
		t.Fatalf("one half-life scores %v, want 0.5", s)
	}
	at := t0.Add(60 * 24 * time.Hour)
	r.LastRetrievedAt = &at
	if s := Score(hl, r, at.Add(30*24*time.Hour)); s != 0.5 {
		t.Fatalf("decay runs from the last retrieval: %v", s)
	}
	if s := Score(hl, memory.Record{Type: memory.Entity, CreatedAt: t0}, t0.Add(1e6*time.Hour)); s != 1 {
		t.Fatalf("a type with half-life 0 decays: %v", s)
	}
}

// TestDecayAndArchive: scores follow the clock; records below the
// threshold are archived through the gate (origin maintenance, audited),
// hidden from default reads and search, kept with their history, and an
// operator restores them. A second run at the same time writes nothing.
func TestDecayAndArchive(t *testing.T) {
	backends(t, func(t *testing.T, open func(*testing.T, gate.Policy, core.Loops) env) {
		ctx := t.Context()
		e := open(t, gate.Default(), core.Loops{})
		ep := e.write(t, memory.Episode, "the build failed on the arm runner")
		bel := e.write(t, memory.Belief, "the arm runner is flaky")
		ent := e.write(t, memory.Entity, "arm runner")
		m := New(e.svc, Options{Now: e.clk.Now})

		e.clk.Add(30 * 24 * time.Hour)
		rep, err := m.Decay(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Decayed != 2 || rep.Scanned != 3 {
			t.Fatalf("decay report %+v, want 2 decayed of 3", rep)
		}
		if s := e.get(t, ep.ID).DecayScore; s != 0.5 {
			t.Fatalf("episode after one half-life: %v", s)
		}
		if s := e.get(t, ent.ID).DecayScore; s != 1 {
			t.Fatalf("entity decayed: %v", s)
		}
		if vs, _ := e.st.ListVersions(ctx, memory.DefaultWorkspace, ep.ID); len(vs) != 1 {
			t.Fatalf("decay wrote a version: %d", len(vs))
		}
		before := e.auditEvents(t)
		if before["maintenance.decay"] != 1 {
			t.Fatalf("decay audit entries %d, want 1", before["maintenance.decay"])
		}
		if rep, err := m.Decay(ctx); err != nil || rep.Decayed != 0 {
			t.Fatalf("second decay at the same time: %+v %v", rep, err)
		}

		// 5 half-lives: 1/32 < 0.05; the belief (180 days) is far above.
		e.clk.Add(120 * 24 * time.Hour)
		dry, err := New(e.svc, Options{Now: e.clk.Now, DryRun: true}).Archive(ctx)
		if err != nil || dry.Changed != 1 {
			t.Fatalf("dry run %+v %v", dry, err)
		}
		if got := e.get(t, ep.ID).Status; got != memory.Active {
			t.Fatalf("dry run archived: %s", got)
		}
		rep, err = m.Archive(ctx)
		if err != nil || rep.Changed != 1 {
			t.Fatalf("archive %+v %v", rep, err)
		}
		arch := e.get(t, ep.ID)
		if arch.Status != memory.Archived || arch.Gate.Origin != memory.OriginMaintenance || arch.Version != 2 || arch.ModifiedBy != "system" {
			t.Fatalf("archived head %+v", arch)
		}
		if e.get(t, bel.ID).Status != memory.Active {
			t.Fatal("belief archived")
		}
		list, err := e.svc.List(ctx, e.op, core.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.Records {
			if r.ID == ep.ID {
				t.Fatal("archived record in the default list")
			}
		}
		sr, err := e.svc.Search(ctx, e.op, core.SearchRequest{Query: "build failed arm runner"})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range sr.Results {
			if h.Record.ID == ep.ID {
				t.Fatal("archived record found by default search")
			}
		}
		if got, err := e.svc.Get(ctx, e.op, ep.ID, core.GetOptions{}); err != nil || got.Content != ep.Content {
			t.Fatalf("archived record not kept: %v", err)
		}
		audit := e.auditEvents(t)
		if audit["record.archive"] != 1 {
			t.Fatalf("archive audit entries %d", audit["record.archive"])
		}
		if rep, err := m.Archive(ctx); err != nil || rep.Changed != 0 {
			t.Fatalf("second archive: %+v %v", rep, err)
		}
		if n := e.auditEvents(t)["record.archive"]; n != 1 {
			t.Fatalf("second archive audited: %d", n)
		}

		// Only an operator restores.
		agent, err := e.svc.CreateAgent(ctx, e.op, "helper", memory.Trusted)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Restore(ctx, agent.Principal, ep.ID); fault.CodeOf(err) != fault.PermissionDenied {
			t.Fatalf("agent restore: %v", err)
		}
		back, err := e.svc.Restore(ctx, e.op, ep.ID)
		if err != nil || back.Status != memory.Active || back.Version != 3 || back.DecayScore != 1 {
			t.Fatalf("restore %+v %v", back, err)
		}
		if _, err := e.svc.Restore(ctx, e.op, bel.ID); err != nil {
			t.Fatalf("restoring an active record is a no-op: %v", err)
		}
		if n := e.auditEvents(t)["record.restore"]; n != 1 {
			t.Fatalf("restore audit entries %d", n)
		}
		// Restored: fresh again, not archived by the next sweep.
		if rep, err := m.Archive(ctx); err != nil || rep.Changed != 0 {
			t.Fatalf("archive after restore: %+v %v", rep, err)
		}
		if _, err := e.svc.Restore(ctx, e.op, memory.NewID()); fault.CodeOf(err) != fault.NotFound {
			t.Fatalf("restore unknown id: %v", err)
		}
	})
}

// TestArchiveResumesAfterKill: a job killed after its first page resumes
// after that page; together the two runs archive every record once.
func TestArchiveResumesAfterKill(t *testing.T) {
	backends(t, func(t *testing.T, open func(*testing.T, gate.Policy, core.Loops) env) {
		e := open(t, gate.Default(), core.Loops{})
		for i := range 5 {
			e.write(t, memory.Episode, "episode number "+string(rune('a'+i)))
		}
		e.clk.Add(365 * 24 * time.Hour)
		ctx, kill := context.WithCancel(t.Context())
		var pages []Progress
		m := New(e.svc, Options{Now: e.clk.Now, Batch: 2, Progress: func(p Progress) {
			pages = append(pages, p)
			kill() // the process dies after committing its first page
		}})
		first, err := m.Archive(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("killed run: %v", err)
		}
		if first.Changed != 2 || len(pages) != 1 || pages[0].Total < 5 {
			t.Fatalf("killed run %+v, progress %+v", first, pages)
		}
		cur, err := e.svc.MaintenanceCursor(t.Context(), cursorKey(JobArchive))
		if err != nil || cur == "" {
			t.Fatalf("no cursor after the kill: %q %v", cur, err)
		}
		second, err := New(e.svc, Options{Now: e.clk.Now, Batch: 2}).Archive(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !second.Resumed || second.Scanned != 3 || second.Changed != 3 {
			t.Fatalf("resumed run %+v, want 3 scanned and changed", second)
		}
		if n := e.auditEvents(t)["record.archive"]; n != 5 {
			t.Fatalf("%d archive audits, want 5", n)
		}
		if cur, _ := e.svc.MaintenanceCursor(t.Context(), cursorKey(JobArchive)); cur != "" {
			t.Fatalf("cursor left after a complete run: %q", cur)
		}
	})
}

// TestLoopOwnedByRun: serve's lifecycle owner runs the scheduled sweep
// and stops it with its other loops.
func TestLoopOwnedByRun(t *testing.T) {
	swept := make(chan []Report, 1)
	tick := make(chan time.Time)
	var clk *clock
	loop := Loop(LoopOptions{Tick: tick, Now: func() time.Time { return clk.Now() },
		AfterSweep: func(r []Report, err error) {
			if err != nil {
				t.Error(err)
			}
			swept <- r
		}})
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st, gate.Default(), core.Loops{Maintenance: loop})
	clk = e.clk
	ep := e.write(t, memory.Episode, "a passing remark")
	ctx, stop := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- e.svc.Run(ctx) }()
	e.clk.Add(400 * 24 * time.Hour)
	select {
	case tick <- t0:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never waited for a tick")
	}
	var reps []Report
	select {
	case reps = <-swept:
	case <-time.After(10 * time.Second):
		t.Fatal("no sweep")
	}
	if len(reps) != len(Jobs) {
		t.Fatalf("sweep ran %d jobs", len(reps))
	}
	if e.get(t, ep.ID).Status != memory.Archived {
		t.Fatal("the scheduled sweep did not archive")
	}
	stop()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop the maintenance loop")
	}
	if err := e.svc.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRunUnknownJob(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st, gate.Default(), core.Loops{})
	_, err = New(e.svc, Options{}).Run(t.Context(), "defrag")
	if fault.CodeOf(err) != fault.InvalidArgument {
		t.Fatalf("unknown job: %v", err)
	}
}
