package mcp_test

import (
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/maintain"
	"github.com/memgate/memgate/internal/mcp"
	"github.com/memgate/memgate/internal/memory"
)

// TestCodingAgentLessonScenario: a coding agent over MCP records a
// decision, logs what it did and a failure in its session, reports
// procedure outcomes; the lessons job proposes a lesson linked to the
// events, an operator approves it, and the agent finds the lesson and
// the better procedure (with its rate) by asking.
func TestCodingAgentLessonScenario(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	var w writeResult
	ok(t, cs, "memory_write", map[string]any{"type": "decision", "content": "Migrations run before the deploy, never after"}, &w)

	type appended struct {
		Record record `json:"record"`
	}
	var act, tool, fail appended
	ok(t, cs, "event_append", map[string]any{"session_id": "s1", "kind": "action", "content": "ran the schema migration after the deploy"}, &act)
	ok(t, cs, "event_append", map[string]any{"session_id": "s1", "kind": "tool_result", "tool": "deploy",
		"content": "deploy returned 500: column users.plan does not exist"}, &tool)
	ok(t, cs, "event_append", map[string]any{"session_id": "s1", "kind": "outcome", "outcome": "failure",
		"content": "the release broke login for ten minutes"}, &fail)
	fails(t, cs, "event_append", map[string]any{"session_id": "s1", "kind": "outcome", "content": "no verdict"}, "invalid_argument")
	// Another agent's session events are its own to read only where access allows; this one reads its log.
	var log struct {
		Events []record `json:"events"`
	}
	ok(t, cs, "event_list", map[string]any{"session_id": "s1"}, &log)
	if len(log.Events) != 3 || log.Events[0].ID != fail.Record.ID || log.Events[2].ID != act.Record.ID {
		t.Fatalf("session log %+v", log.Events)
	}
	ok(t, cs, "event_list", map[string]any{"session_id": "s2"}, &log)
	if len(log.Events) != 0 {
		t.Fatalf("another session's log: %+v", log.Events)
	}

	// Two procedures for one trigger; the failing one sinks.
	var good, bad writeResult
	ok(t, cs, "memory_write", map[string]any{"type": "skill", "content": "apply migrations with the migrate job, then deploy",
		"metadata": map[string]any{"trigger": "releasing a schema change", "steps": []string{"migrate", "deploy"}}}, &good)
	ok(t, cs, "memory_write", map[string]any{"type": "skill", "content": "deploy first and let the app migrate itself",
		"metadata": map[string]any{"trigger": "releasing a schema change"}}, &bad)
	ok(t, cs, "procedure_outcome", map[string]any{"id": bad.Record.ID, "outcome": 0}, nil)
	ok(t, cs, "procedure_outcome", map[string]any{"id": good.Record.ID, "outcome": 1}, nil)

	rep, err := maintain.New(h.svc, maintain.Options{}).Lessons(t.Context())
	if err != nil || rep.Inserted != 1 || len(rep.Approval) != 1 {
		t.Fatalf("lessons %+v %v", rep, err)
	}
	if again, err := maintain.New(h.svc, maintain.Options{}).Lessons(t.Context()); err != nil || again.Inserted != 0 {
		t.Fatalf("second lessons run %+v %v", again, err)
	}
	item, err := h.svc.Approve(t.Context(), h.ps["op"], rep.Approval[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	lesson := item.Record
	if lesson.Type != memory.Reflection || lesson.Status != memory.Active || !strings.Contains(lesson.Content, "ran the schema migration after the deploy") {
		t.Fatalf("lesson %+v", lesson)
	}
	for _, id := range []string{act.Record.ID, tool.Record.ID, fail.Record.ID} {
		if !strings.Contains(strings.Join(lesson.Source.Evidence, ","), id) {
			t.Fatalf("lesson evidence %v lacks event %s", lesson.Source.Evidence, id)
		}
	}

	var q struct {
		Results []struct {
			Record record `json:"record"`
		} `json:"results"`
	}
	ok(t, cs, "memory_query", map[string]any{"query": "schema migration deploy failed"}, &q)
	found := false
	for _, r := range q.Results {
		found = found || r.Record.ID == lesson.ID
	}
	if !found {
		t.Fatalf("the lesson is not found: %+v", q.Results)
	}
	var pq struct {
		Results []struct {
			Record struct {
				ID       string         `json:"id"`
				Metadata map[string]any `json:"metadata"`
			} `json:"record"`
		} `json:"results"`
	}
	ok(t, cs, "memory_query", map[string]any{"query": "releasing a schema change", "types": []string{"skill"}}, &pq)
	if len(pq.Results) != 2 || pq.Results[0].Record.ID != good.Record.ID {
		t.Fatalf("the working procedure does not come first: %+v", pq.Results)
	}
	if pq.Results[0].Record.Metadata["success_rate"] == nil {
		t.Fatalf("the procedure's rate is not shown: %+v", pq.Results[0].Record)
	}
	// Events are append-only.
	fails(t, cs, "memory_write", map[string]any{"type": "episode", "content": "x", "supersedes": act.Record.ID}, "conflict")

	// Before its next release the agent pins a rule of its own and asks
	// for the task's context in one call: the pinned rule leads, the
	// working procedure is the first procedure, and the lesson is there.
	cs2 := h.connectWith("std", mcp.Options{Pinned: files.New(h.svc, files.Options{}).ContextPinned()}, nil)
	ok(t, cs2, "block_append", map[string]any{"name": "AGENTS.md", "text": "- Run migrations before every deploy of a schema change"}, nil)
	var env contextpack.Envelope
	ok(t, cs2, "memory_context", map[string]any{"query": "releasing a schema change: migration and deploy", "budget_tokens": 2000}, &env)
	section := func(name string) []contextpack.Item {
		for _, sec := range env.Sections {
			if sec.Name == name {
				return sec.Items
			}
		}
		t.Fatalf("no %s section: %+v", name, env.Sections)
		return nil
	}
	if c := section("constraints"); len(c) == 0 || !strings.HasSuffix(c[0].Path, "AGENTS.md") {
		t.Fatalf("the pinned rule does not lead the context: %+v", c)
	}
	if p := section("procedures"); len(p) == 0 || p[0].ID != good.Record.ID || p[0].SuccessRate == nil {
		t.Fatalf("the working procedure is not first, with its rate: %+v", p)
	}
	hasLesson := false
	for _, sec := range env.Sections {
		for _, it := range sec.Items {
			hasLesson = hasLesson || it.ID == lesson.ID
		}
	}
	if !hasLesson {
		t.Fatalf("the context lacks the lesson: %s", env.Markdown)
	}
}
