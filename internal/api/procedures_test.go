package api_test

import (
	"math"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

type outcomeAnswer struct {
	Record    memory.Record    `json:"record"`
	Procedure memory.Procedure `json:"procedure"`
}

type searchAnswer struct {
	Results []struct {
		Record    memory.Record     `json:"record"`
		Score     float64           `json:"score"`
		Procedure *memory.Procedure `json:"procedure"`
	} `json:"results"`
}

// TestProcedures: a skill's typed fields are checked by the gate; a query
// that matches its trigger (not its content) finds it with its rate;
// outcomes move the rate as 0.7*old + 0.3*outcome through the gate, audited;
// a procedure that keeps failing sinks below one that works.
func TestProcedures(t *testing.T) {
	h := newHarness(t, nil)
	skill := func(content, trigger string) memory.Record {
		return h.write("std", map[string]any{"type": "skill", "content": content,
			"metadata": map[string]any{"trigger": trigger, "steps": []string{"build", "push", "tag"}}}, 201).Record
	}
	a := skill("run make deploy from a clean checkout", "shipping a hotfix to the cluster")
	b := skill("use the blue green script", "shipping a hotfix to the cluster")

	// Typed fields.
	for field, v := range map[string]any{"trigger": 7, "steps": "build", "success_rate": 1.5, "use_count": -1} {
		h.wantError("POST", "/v1/records", "std", map[string]any{"type": "skill", "content": "x",
			"metadata": map[string]any{field: v}}, 400, "invalid_argument")
	}

	var res searchAnswer
	h.mustDo("POST", "/v1/search", "std", map[string]any{"query": "hotfix cluster shipping", "signals": []string{"lexical"}}, 200, &res)
	if len(res.Results) != 2 || res.Results[0].Procedure == nil || res.Results[0].Procedure.Trigger != "shipping a hotfix to the cluster" {
		t.Fatalf("trigger query: %+v", res.Results)
	}

	var out outcomeAnswer
	h.mustDo("POST", "/v1/records/"+a.ID+"/outcome", "std", map[string]any{"outcome": 1}, 200, &out)
	if r := *out.Procedure.SuccessRate; math.Abs(r-0.65) > 1e-9 || out.Procedure.UseCount != 1 || out.Record.Version != 2 {
		t.Fatalf("first outcome %+v", out)
	}
	for range 4 {
		h.mustDo("POST", "/v1/records/"+a.ID+"/outcome", "std2", map[string]any{"outcome": 0}, 200, &out)
	}
	want := 0.65
	for range 4 {
		want *= 0.7
	}
	if r := *out.Procedure.SuccessRate; math.Abs(r-want) > 1e-9 || out.Procedure.UseCount != 5 {
		t.Fatalf("after failures %+v, want rate %v", out.Procedure, want)
	}
	h.mustDo("POST", "/v1/records/"+b.ID+"/outcome", "std", map[string]any{"outcome": 1}, 200, &out)
	h.mustDo("POST", "/v1/search", "std", map[string]any{"query": "hotfix cluster shipping", "signals": []string{"lexical"}}, 200, &res)
	if len(res.Results) != 2 || res.Results[0].Record.ID != b.ID || res.Results[1].Record.ID != a.ID {
		t.Fatalf("the failing procedure did not sink: %+v", res.Results)
	}
	if res.Results[1].Procedure.SuccessRate == nil || res.Results[1].Record.Content != a.Content {
		t.Fatalf("hit without its rate: %+v", res.Results[1])
	}
	n := 0
	for _, e := range h.auditLog() {
		if e.Event == "record.outcome" {
			n++
		}
	}
	if n != 6 {
		t.Fatalf("%d outcome audits, want 6", n)
	}

	// Errors.
	belief := h.write("std", map[string]any{"type": "belief", "content": "the cluster is in eu-west"}, 201).Record
	h.wantError("POST", "/v1/records/"+a.ID+"/outcome", "std", map[string]any{"outcome": 2}, 400, "invalid_argument")
	h.wantError("POST", "/v1/records/"+a.ID+"/outcome", "std", map[string]any{}, 400, "invalid_argument")
	h.wantError("POST", "/v1/records/"+belief.ID+"/outcome", "std", map[string]any{"outcome": 1}, 409, "conflict")
	h.wantError("POST", "/v1/records/"+memory.NewID()+"/outcome", "std", map[string]any{"outcome": 1}, 404, "not_found")
	h.wantError("POST", "/v1/records/"+a.ID+"/outcome", "ro", map[string]any{"outcome": 1}, 403, "permission_denied")
	// A skill the reporter may not read is not found, as for any read.
	mine := h.write("std", map[string]any{"type": "skill", "content": "my own trick", "access": "agent",
		"metadata": map[string]any{"trigger": "secret trick"}}, 201).Record
	h.wantError("POST", "/v1/records/"+mine.ID+"/outcome", "std2", map[string]any{"outcome": 1}, 404, "not_found")
}

// TestSessionEventsREST: append to a session's log and read it back;
// bad kinds and outcomes are 400 naming the field; events are not patched.
func TestSessionEventsREST(t *testing.T) {
	h := newHarness(t, nil)
	var w writeResult
	h.mustDo("POST", "/v1/sessions/s9/events", "std", map[string]any{"kind": "action", "content": "opened the PR"}, 201, &w)
	if w.Record.Type != memory.Episode || w.Record.Category != "event" || w.Record.Scope.SessionID != "s9" {
		t.Fatalf("event %+v", w.Record)
	}
	h.mustDo("POST", "/v1/sessions/s9/events", "std", map[string]any{"kind": "outcome", "outcome": "failure", "content": "CI failed"}, 201, nil)
	e := h.wantError("POST", "/v1/sessions/s9/events", "std", map[string]any{"kind": "mood", "content": "x"}, 400, "invalid_argument")
	if e.Error.Details["field"] != "kind" {
		t.Fatalf("error %+v", e)
	}
	h.wantError("POST", "/v1/sessions/s9/events", "std", map[string]any{"kind": "action", "outcome": "failure", "content": "x"}, 400, "invalid_argument")
	var page struct{ Records []memory.Record }
	h.mustDo("GET", "/v1/sessions/s9/events", "std2", nil, 200, &page)
	if len(page.Records) != 2 || page.Records[1].ID != w.Record.ID {
		t.Fatalf("log %+v", page.Records)
	}
	v := 1
	h.wantError("PATCH", "/v1/records/"+w.Record.ID, "std", map[string]any{"expected_version": v, "content": "rewrote history"}, 409, "conflict")
}
