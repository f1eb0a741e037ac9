package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/embed"
)

func TestContextREST(t *testing.T) {
	h := newHarness(t, nil)
	rule := h.write("op", map[string]any{"type": "belief", "category": "rule", "content": "Never deploy the shop on Fridays",
		"scope": map[string]any{"project_id": "shop"}}, http.StatusCreated)
	dec := h.write("std", map[string]any{"type": "decision", "content": "The shop deploys with blue-green releases",
		"scope": map[string]any{"project_id": "shop"}}, http.StatusCreated)
	req := map[string]any{"query": "how does the shop deploy", "scope": map[string]any{"project_id": "shop"}, "budget_tokens": 300}
	var env contextpack.Envelope
	h.mustDo("POST", "/v1/context", "std", req, http.StatusOK, &env)
	if env.Tokens > 300 || len(env.Sections) != 5 || env.Sections[0].Items[0].ID != rule.Record.ID ||
		env.Sections[2].Items[0].ID != dec.Record.ID || env.Sections[2].Items[0].Citation != dec.Citation {
		t.Fatalf("envelope %+v", env)
	}
	code, hdr, body := h.do("POST", "/v1/context?format=markdown", "std", req)
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/markdown") || string(body) != env.Markdown {
		t.Fatalf("markdown: %d %s %q, want %q", code, hdr.Get("Content-Type"), body, env.Markdown)
	}
	for field, c := range map[string]struct {
		path string
		body any
	}{
		"format":        {"/v1/context?format=html", req},
		"query":         {"/v1/context", map[string]any{"budget_tokens": 10}},
		"budget_tokens": {"/v1/context", map[string]any{"query": "x", "budget_tokens": 100001}},
		"max_facts":     {"/v1/context", map[string]any{"query": "x", "max_facts": -1}},
	} {
		e := h.wantError("POST", c.path, "std", c.body, http.StatusBadRequest, "invalid_argument")
		if e.Error.Details["field"] != field {
			t.Errorf("%s: error names %v", field, e.Error.Details["field"])
		}
	}
	h.wantError("POST", "/v1/context", "", req, http.StatusUnauthorized, "unauthenticated")
}

// TestGatewaySearchContext: the gateway's search adds a context of the
// user's memory when asked, and only then.
func TestGatewaySearchContext(t *testing.T) {
	h := newHarness(t, nil)
	id := gatewayUser(h, "u1")
	h.write("op", map[string]any{"type": "preference", "content": "u1 prefers short answers about espresso",
		"scope": map[string]any{"user_id": "u1", "app_id": "default", "project_id": "default"}}, http.StatusCreated)
	h.write("op", map[string]any{"type": "preference", "content": "u2 prefers long answers about espresso",
		"scope": map[string]any{"user_id": "u2", "app_id": "default", "project_id": "default"}}, http.StatusCreated)
	var plain map[string]json.RawMessage
	h.mustDo("POST", "/memories/search", "", id(map[string]any{"query": "espresso answers"}), http.StatusOK, &plain)
	if _, ok := plain["context"]; ok {
		t.Fatal("context returned without being asked for")
	}
	var out struct {
		Context contextpack.Envelope `json:"context"`
	}
	h.mustDo("POST", "/memories/search", "", id(map[string]any{"query": "espresso answers", "context": map[string]any{"budget_tokens": 200}}),
		http.StatusOK, &out)
	if out.Context.BudgetTokens != 200 || out.Context.Tokens > 200 || !strings.Contains(out.Context.Markdown, "u1 prefers short answers") ||
		strings.Contains(out.Context.Markdown, "u2") {
		t.Fatalf("gateway context %+v", out.Context)
	}
	e := h.wantError("POST", "/memories/search", "", id(map[string]any{"query": "x", "context": map[string]any{"budget_tokens": -1}}),
		http.StatusBadRequest, "invalid_argument")
	if e.Error.Details["field"] != "context.budget_tokens" {
		t.Errorf("error names %v", e.Error.Details["field"])
	}
}

// TestCodingAgentScenarioOverMCP: a coding agent records a decision, a
// failure and the lesson drawn from it, has procedures with outcomes, and
// before its next task gets one context holding the project's rule first,
// the procedure that works ahead of the one that fails, the lesson, and
// its session's recent activity.
func TestCodingAgentScenarioOverMCP(t *testing.T) {
	enc, err := embed.BuiltinUSELite()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, nil, enc)
	rule := h.write("op", map[string]any{"type": "belief", "category": "rule",
		"content": "Never commit generated protobuf files; CI runs make proto", "scope": map[string]any{"project_id": "shop"}}, http.StatusCreated)
	cs, err := h.mcpClient("std")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func(name string, args map[string]any) (*sdk.CallToolResult, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		return res, m
	}
	recordID := func(m map[string]any) string { return m["record"].(map[string]any)["id"].(string) }
	project := map[string]any{"project_id": "shop"}
	session := map[string]any{"project_id": "shop", "session_id": "task-41"}

	_, dec := call("memory_write", map[string]any{"type": "decision", "content": "Use sqlc for database access in the orders service", "scope": project})
	_, fail := call("memory_write", map[string]any{"type": "episode", "scope": session,
		"content": "Ran go test ./orders: TestCreateOrder failed with a deadlock in the connection pool"})
	_, lesson := call("memory_write", map[string]any{"type": "reflection", "scope": project, "evidence": []string{recordID(fail)},
		"content": "Lesson: the orders tests deadlock when the pool size is 1; set DB_POOL_SIZE=4 before running the orders tests"})
	_, good := call("memory_write", map[string]any{"type": "skill", "scope": project, "metadata": map[string]any{"success_rate": 0.92, "use_count": 7},
		"content": "To run the orders tests: export DB_POOL_SIZE=4, then go test ./orders"})
	_, bad := call("memory_write", map[string]any{"type": "skill", "scope": project, "metadata": map[string]any{"success_rate": 0.15, "use_count": 6},
		"content": "To run the orders tests: go test ./orders with the default pool"})
	_, step := call("memory_write", map[string]any{"type": "episode", "scope": session, "content": "Opened orders/pool.go to look at the pool size"})
	if _, err := h.svc.EmbedPending(ctx, 100); err != nil {
		t.Fatal(err)
	}

	args := map[string]any{"query": "run the orders tests", "scope": session, "budget_tokens": 800}
	res, env := call("memory_context", args)
	var e contextpack.Envelope
	raw, _ := json.Marshal(env)
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if text != e.Markdown || e.Tokens > 800 {
		t.Fatalf("text is not the envelope's Markdown, or over budget (%d):\n%s", e.Tokens, text)
	}
	if !strings.HasPrefix(text, "## Constraints\n- Never commit generated protobuf files; CI runs make proto (mem://"+rule.Record.ID) {
		t.Fatalf("the project's rule is not first:\n%s", text)
	}
	proc := e.Sections[1].Items
	if len(proc) != 2 || proc[0].ID != recordID(good) || proc[1].ID != recordID(bad) || *proc[0].SuccessRate != 0.92 {
		t.Fatalf("procedures %+v, want the one that works first", proc)
	}
	know := map[string]bool{}
	for _, it := range e.Sections[2].Items {
		know[it.ID] = true
	}
	if !know[recordID(lesson)] || !know[recordID(dec)] {
		t.Errorf("knowledge lacks the lesson or the decision:\n%s", text)
	}
	if know[recordID(fail)] || know[recordID(step)] {
		t.Errorf("knowledge repeats the session's recent activity:\n%s", text)
	}
	recent := e.Sections[4].Items
	if len(recent) != 2 || recent[0].ID != recordID(step) || recent[1].ID != recordID(fail) {
		t.Errorf("recent %+v, want the session's two episodes, newest first", recent)
	}
	if !strings.Contains(text, "[success 0.92, used 7]") || !strings.Contains(text, "DB_POOL_SIZE=4 before running") {
		t.Errorf("markdown lacks the procedure's rate or the lesson:\n%s", text)
	}
	t.Logf("context:\n%s", text)
	// The same memory gives the same context (prompt caches hit).
	again, _ := call("memory_context", args)
	if again.Content[0].(*sdk.TextContent).Text != text {
		t.Fatal("a second call gave a different context")
	}
	// REST gives the same envelope.
	var viaREST contextpack.Envelope
	h.mustDo("POST", "/v1/context", "std", map[string]any{"query": "run the orders tests", "scope": session, "budget_tokens": 800}, http.StatusOK, &viaREST)
	if viaREST.Markdown != text {
		t.Fatalf("REST and MCP differ:\n%s\n---\n%s", viaREST.Markdown, text)
	}
}

// TestContextPinsMemoryFiles: a pinned memory file (issue 15) leads every
// context its reader asks for, before the rules; an unpinned one does not
// appear as a constraint, and another agent's private pinned file stays
// hidden.
func TestContextPinsMemoryFiles(t *testing.T) {
	h := newHarness(t, nil)
	h.mustDo("POST", "/v1/files", "std", map[string]any{"path": "/memories/MEMORY.md", "content": "- run the tests before every push\n",
		"pinned": true, "scope": map[string]any{"project_id": "shop"}}, http.StatusCreated, nil)
	h.mustDo("POST", "/v1/files", "std", map[string]any{"path": "/memories/notes.md", "content": "- scratch notes\n",
		"scope": map[string]any{"project_id": "shop"}}, http.StatusCreated, nil)
	h.mustDo("POST", "/v1/files", "trusted", map[string]any{"path": "/memories/PRIVATE.md", "content": "- private to its writer\n",
		"pinned": true, "access": "agent", "scope": map[string]any{"project_id": "shop"}}, http.StatusCreated, nil)
	h.write("op", map[string]any{"type": "belief", "category": "rule", "content": "Never deploy the shop on Fridays",
		"scope": map[string]any{"project_id": "shop"}}, http.StatusCreated)
	req := map[string]any{"query": "how does the shop deploy", "scope": map[string]any{"project_id": "shop"}, "budget_tokens": 500}
	var env contextpack.Envelope
	h.mustDo("POST", "/v1/context", "std", req, http.StatusOK, &env)
	if len(env.Sections) == 0 || len(env.Sections[0].Items) < 2 {
		t.Fatalf("constraints: %+v", env.Sections)
	}
	first := env.Sections[0].Items[0]
	if !strings.Contains(first.Content, "run the tests before every push") {
		t.Fatalf("the pinned file does not come first: %+v", env.Sections[0].Items)
	}
	for _, it := range env.Sections[0].Items {
		if strings.Contains(it.Content, "scratch notes") || strings.Contains(it.Content, "private to its writer") {
			t.Fatalf("an unpinned or unreadable file is a constraint: %+v", env.Sections[0].Items)
		}
	}
}
