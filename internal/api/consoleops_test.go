package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// TestListJobsRoute: GET /v1/jobs pages newest first and filters by
// state and kind; bad filters are a 400 naming the parameter.
func TestListJobsRoute(t *testing.T) {
	h := newHarness(t, nil)
	ws := memory.DefaultWorkspace
	var ids []string
	err := h.store.Tx(t.Context(), func(tx store.Tx) error {
		for i, kind := range []string{"flush", "embed", "flush"} {
			now := h.clock.Now().Add(time.Duration(i) * time.Second)
			j := store.Job{ID: memory.NewID(), Workspace: ws, Kind: kind, Payload: json.RawMessage(`{}`), MaxAttempts: 3,
				RunAfter: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}
			if err := tx.InsertJob(t.Context(), j); err != nil {
				return err
			}
			ids = append(ids, j.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var page core.JobPage
	h.mustDo("GET", "/v1/jobs?kind=flush&state=queued&limit=1", "op", nil, http.StatusOK, &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID != ids[2] || page.NextCursor != ids[2] {
		t.Fatalf("page 1: %+v", page)
	}
	cursor := page.NextCursor
	page = core.JobPage{}
	h.mustDo("GET", "/v1/jobs?kind=flush&state=queued&limit=1&cursor="+cursor, "op", nil, http.StatusOK, &page)
	if len(page.Jobs) != 1 || page.Jobs[0].ID != ids[0] || page.NextCursor != "" {
		t.Fatalf("page 2 (the last): %+v", page)
	}
	h.mustDo("GET", "/v1/jobs?state=done", "op", nil, http.StatusOK, &page)
	if len(page.Jobs) != 0 {
		t.Fatalf("done jobs: %+v", page)
	}
	for _, q := range []string{"state=sleeping", "limit=0", "limit=501", "cursor=nope"} {
		e := h.wantError("GET", "/v1/jobs?"+q, "op", nil, http.StatusBadRequest, "invalid_argument")
		if name := strings.SplitN(q, "=", 2)[0]; e.Error.Details["field"] != name {
			t.Errorf("%s: the error names field %v", q, e.Error.Details["field"])
		}
	}
	h.wantError("GET", "/v1/jobs", "std", nil, http.StatusForbidden, "permission_denied")
}

// TestAuditFilterRoute: GET /v1/audit filters by actor (id or kind) and
// action (name or prefix) in the database, so a page holds only
// matching entries and pages on.
func TestAuditFilterRoute(t *testing.T) {
	h := newHarness(t, nil)
	for i := 0; i < 3; i++ {
		h.write("std", map[string]any{"type": "belief", "content": "Fact number " + itoa(int64(i))}, http.StatusCreated)
	}
	var std struct{ ID string }
	h.mustDo("GET", "/v1/whoami", "std", nil, http.StatusOK, &std)
	var page core.AuditPage
	h.mustDo("GET", "/v1/audit?actor="+std.ID+"&action=record.write&limit=2", "op", nil, http.StatusOK, &page)
	if len(page.Entries) != 2 || page.NextSeq == 0 {
		t.Fatalf("page 1: %d entries, next %d", len(page.Entries), page.NextSeq)
	}
	for _, e := range page.Entries {
		if e.ActorID != std.ID || e.Event != "record.write" {
			t.Fatalf("filtered entry %+v", e)
		}
	}
	h.mustDo("GET", "/v1/audit?actor="+std.ID+"&action=record.write&limit=2&after="+itoa(page.NextSeq), "op", nil, http.StatusOK, &page)
	if len(page.Entries) != 1 {
		t.Fatalf("page 2: %d entries", len(page.Entries))
	}
	h.mustDo("GET", "/v1/audit?actor=operator&action=agent.", "op", nil, http.StatusOK, &page)
	if len(page.Entries) != 5 { // the harness's five agents
		t.Fatalf("operators' agent.* entries: %d", len(page.Entries))
	}
	for _, e := range page.Entries {
		if e.ActorKind != "operator" || !strings.HasPrefix(e.Event, "agent.") {
			t.Fatalf("filtered entry %+v", e)
		}
	}
	e := h.wantError("GET", "/v1/audit?action="+strings.Repeat("x", 129), "op", nil, http.StatusBadRequest, "invalid_argument")
	if e.Error.Details["field"] != "action" {
		t.Fatalf("long action names %v", e.Error.Details["field"])
	}
}

// TestPatchAgentTrust: an operator changes an agent's trust; the next
// write is gated at the new level; the change is audited with both
// levels; bad input is a 400 naming trust, changing nothing.
func TestPatchAgentTrust(t *testing.T) {
	h := newHarness(t, nil)
	if w := h.write("restricted", map[string]any{"type": "belief", "content": "Deploys happen on Fridays"}, http.StatusAccepted); w.ApprovalID == "" {
		t.Fatal("a restricted agent's write was not queued")
	}
	var out struct{ Agent memory.Principal }
	h.mustDo("PATCH", "/v1/agents/restricted", "op", map[string]any{"trust": "standard"}, http.StatusOK, &out)
	if out.Agent.Trust != memory.Standard || out.Agent.Name != "restricted" || out.Agent.TokenHash != nil {
		t.Fatalf("patched agent %+v", out.Agent)
	}
	h.write("restricted", map[string]any{"type": "belief", "content": "Deploys happen on Tuesdays"}, http.StatusCreated)
	var trust int
	for _, e := range h.auditLog() {
		if e.Event == "agent.trust" && e.Payload["from"] == "restricted" && e.Payload["to"] == "standard" && e.ActorKind == "operator" {
			trust++
		}
	}
	if trust != 1 {
		t.Fatalf("%d agent.trust entries", trust)
	}
	for _, body := range []any{map[string]any{"trust": "boss"}, map[string]any{}, map[string]any{"trust": "trusted", "name": "x"}} {
		h.wantError("PATCH", "/v1/agents/restricted", "op", body, http.StatusBadRequest, "invalid_argument")
	}
	h.wantError("PATCH", "/v1/agents/"+memory.NewID(), "op", map[string]any{"trust": "trusted"}, http.StatusNotFound, "not_found")
	h.wantError("PATCH", "/v1/agents/restricted", "std", map[string]any{"trust": "trusted"}, http.StatusForbidden, "permission_denied")
	// Nothing of the refused calls changed the agent.
	var agents struct{ Agents []memory.Principal }
	h.mustDo("GET", "/v1/agents", "op", nil, http.StatusOK, &agents)
	for _, a := range agents.Agents {
		if a.Name == "restricted" && a.Trust != memory.Standard {
			t.Fatalf("after refused patches the agent has trust %s", a.Trust)
		}
	}
}
