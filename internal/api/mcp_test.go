package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a bearer token to every request of an HTTP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpClient connects the SDK's Streamable HTTP client to /mcp with who's
// token.
func (h *harness) mcpClient(who string) (*sdk.ClientSession, error) {
	h.t.Helper()
	tok, ok := h.tokens[who]
	if !ok {
		tok = who
	}
	hc := &http.Client{Transport: bearer{token: tok, next: h.srv.Client().Transport}}
	t := &sdk.StreamableClientTransport{Endpoint: h.srv.URL + "/mcp", HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "api-test", Version: "1"}, nil).Connect(context.Background(), t, nil)
	if err == nil {
		h.t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func TestMCPOverHTTP(t *testing.T) {
	h := newHarness(t, nil)
	cs, err := h.mcpClient("std")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "memory_write", Arguments: map[string]any{
		"type": "decision", "content": "Serve MCP statelessly so any replica answers", "entities": []string{"system:memgate"}}})
	if err != nil || res.IsError {
		t.Fatalf("memory_write over HTTP: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var w writeResult
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatal(err)
	}
	// The call acted as the token's agent, through the gate and the audit.
	if w.Decision != "accepted" || w.Record.Source.Agent != "std" {
		t.Fatalf("write %+v", w)
	}
	got := h.mustDo("GET", "/v1/records/"+w.Record.ID, "std", nil, http.StatusOK, nil)
	if !strings.Contains(string(got), "Serve MCP statelessly") {
		t.Fatalf("record over REST: %s", got)
	}
	var audited bool
	for _, e := range h.auditLog() {
		if e.Event == "record.write" && e.Payload["record_id"] == w.Record.ID && e.ActorKind == "agent" {
			audited = true
		}
	}
	if !audited {
		t.Fatal("the MCP write is not in the audit log as the agent's")
	}
	// Knowledge-graph tools work over HTTP too.
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "create_entities", Arguments: map[string]any{"entities": []any{
		map[string]any{"name": "memgate", "entityType": "system", "observations": []string{"Speaks MCP"}}}}})
	if err != nil || res.IsError {
		t.Fatalf("create_entities over HTTP: %v %+v", err, res)
	}
	// An agent may only act as itself: the read_only agent's write fails.
	ro, err := h.mcpClient("ro")
	if err != nil {
		t.Fatal(err)
	}
	res, err = ro.CallTool(ctx, &sdk.CallToolParams{Name: "memory_write", Arguments: map[string]any{"type": "belief", "content": "x"}})
	if err != nil || !res.IsError {
		t.Fatalf("read_only write over HTTP: %v %+v", err, res)
	}
	// No token ever reaches the logs.
	for _, sec := range h.secrets {
		if strings.Contains(h.logs.String(), sec) {
			t.Fatal("a token is in the logs")
		}
	}
}

func TestMCPOverHTTPRefusesBadTokens(t *testing.T) {
	h := newHarness(t, nil)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	h.wantError("POST", "/mcp", "", initialize, http.StatusUnauthorized, "unauthenticated")
	h.wantError("POST", "/mcp", "mg_not_a_token", initialize, http.StatusUnauthorized, "unauthenticated")

	// A session opened with a token stops working the moment the token is
	// revoked: every request is authenticated.
	cs, err := h.mcpClient("std2")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_graph", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("before revocation: %v", err)
	}
	var agents struct {
		Agents []struct{ ID, Name string }
	}
	h.mustDo("GET", "/v1/agents", "op", nil, http.StatusOK, &agents)
	for _, a := range agents.Agents {
		if a.Name == "std2" {
			h.mustDo("DELETE", "/v1/agents/"+a.ID, "op", nil, http.StatusOK, nil)
		}
	}
	h.wantError("POST", "/mcp", "std2", initialize, http.StatusUnauthorized, "unauthenticated")
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_graph", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a revoked token's session still answers")
	}
	if _, err := h.mcpClient("std2"); err == nil {
		t.Fatal("a revoked token connected")
	}
}
