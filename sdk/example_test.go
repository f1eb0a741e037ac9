package sdk_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/memgate/memgate/sdk"
)

// exampleGateway stands in for a memgate server: it recalls one memory
// and accepts adds and flushes.
func exampleGateway() *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /memories/search", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"results": []map[string]any{{
			"id": "m1", "session_id": "chat:c42", "text": "user: my VPN drops every hour",
			"score": 0.83, "source_scope": "current_chat", "resource_uri": nil, "raw": map[string]any{},
		}}})
	})
	mux.HandleFunc("POST /memories/add", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"added": 2})
	})
	mux.HandleFunc("POST /memories/flush", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(map[string]any{"job_id": "job-1", "status": "queued"})
	})
	return httptest.NewServer(mux)
}

// A chat runtime recalls before each model run and persists each
// completed turn; failures become events, never errors in the turn.
func ExampleHybrid() {
	srv := exampleGateway()
	defer srv.Close()

	// Usually decoded from the runtime's configuration file; a nil section
	// means "not configured" and degrades to curated-only memory.
	section := &sdk.HybridConfig{
		Mode:    sdk.ModeHybrid,
		BaseURL: srv.URL,
		UserID:  "u1",
		UserKey: "uk_example",
		Scopes:  []string{sdk.ScopeCurrentChat, sdk.ScopeResources},
	}
	sink := func(e sdk.Event) {
		fmt.Printf("event %s status=%d failed=%v\n", e.Name, e.Status, e.Failed())
	}
	h, warnings, err := sdk.LoadHybrid(section, sink)
	if err != nil {
		fmt.Println("config:", err)
		return
	}
	fmt.Println("mode:", h.Mode(), "warnings:", len(warnings))

	ctx := context.Background()
	refs := h.RecallBeforeRun(ctx, sdk.RecallInput{ConversationID: "c42", Query: "what about the VPN?"})
	for _, r := range refs {
		fmt.Printf("reference (untrusted=%v): %s\n", r.Untrusted, r.Text)
	}
	answer := "Check the DHCP lease time." // the model's final answer
	h.PersistAfterRun(ctx, sdk.PersistInput{ConversationID: "c42", UserPrompt: "what about the VPN?", FinalAnswer: answer})

	// Output:
	// mode: hybrid warnings: 0
	// event memory_gateway_recall_succeeded status=200 failed=false
	// reference (untrusted=true): user: my VPN drops every hour
	// event memory_gateway_add_succeeded status=200 failed=false
	// event memory_gateway_flush_succeeded status=202 failed=false
}

// Without a memory section or credentials, the helper is a no-op and
// LoadHybrid says so once.
func ExampleLoadHybrid() {
	h, warnings, err := sdk.LoadHybrid(nil, nil)
	fmt.Println(h.Mode(), err)
	fmt.Println(warnings)
	// Output:
	// curated <nil>
	// [memgate: hybrid memory is not configured (missing base_url, user_id, user_key); using curated memory only]
}

// A REST v1 client writes a record and reports gate and HTTP errors as
// *sdk.Error.
func ExampleClient_Write() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error": {"code": "rate_limited", "message": "rate limit exceeded"}}`))
	}))
	defer srv.Close()

	c, err := sdk.NewClient(srv.URL, "mg_agent_token")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.Write(context.Background(), sdk.WriteRequest{
		Type:    sdk.TypeDecision,
		Content: "Use SKIP LOCKED for job claims",
		Scope:   sdk.Scope{ProjectID: "memgate"},
	})
	if e, ok := err.(*sdk.Error); ok {
		fmt.Println(e.Status, e.Code, e.RetryAfter)
	}
	// Output: 429 rate_limited 2s
}
