package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/svctest"
)

// fakeMessages is a fake Anthropic Messages API: each POST /v1/messages
// answers the next scripted turn, a tool_use of the memory tool, after
// checking that the request carried the memory tool and the tool_result
// of the previous turn; then it ends the turn.
type fakeMessages struct {
	t      *testing.T
	mu     sync.Mutex
	script []map[string]any // memory tool inputs, one per turn
	turn   int
	// results are the tool_result blocks the client sent, in order.
	results []ToolResult
}

func (f *fakeMessages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req struct {
		Tools    []map[string]any `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		f.t.Errorf("request: %v", err)
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if len(req.Tools) != 1 || req.Tools[0]["type"] != "memory_20250818" || req.Tools[0]["name"] != "memory" {
		f.t.Errorf("tools = %v, want the memory tool", req.Tools)
	}
	if f.turn > 0 {
		last := req.Messages[len(req.Messages)-1]
		var blocks []ToolResult
		if last.Role != "user" || json.Unmarshal(last.Content, &blocks) != nil || len(blocks) != 1 || blocks[0].Type != "tool_result" {
			f.t.Errorf("turn %d: last message %s is not one tool_result", f.turn, last.Content)
		} else {
			if blocks[0].ToolUseID != toolUseID(f.turn-1) {
				f.t.Errorf("turn %d: tool_use_id %q", f.turn, blocks[0].ToolUseID)
			}
			f.results = append(f.results, blocks[0])
		}
	}
	resp := map[string]any{"id": "msg_fake", "type": "message", "role": "assistant", "model": "claude-fake"}
	if f.turn < len(f.script) {
		resp["stop_reason"] = "tool_use"
		resp["content"] = []any{
			map[string]any{"type": "text", "text": "Let me check my memory."},
			map[string]any{"type": "tool_use", "id": toolUseID(f.turn), "name": "memory", "input": f.script[f.turn]},
		}
	} else {
		resp["stop_reason"] = "end_turn"
		resp["content"] = []any{map[string]any{"type": "text", "text": "Done."}}
	}
	f.turn++
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func toolUseID(turn int) string { return "toolu_" + string(rune('a'+turn)) }

// runAgent is an application's agent loop: call the Messages API, hand
// every memory tool_use to memgate, send the tool_results back, until
// the model ends its turn.
func runAgent(t *testing.T, ctx context.Context, anthropicURL string, mg *Client) {
	t.Helper()
	messages := []map[string]any{{"role": "user", "content": "Remember that I prefer tea."}}
	for range 20 {
		body, _ := json.Marshal(map[string]any{"model": "claude-fake", "max_tokens": 1024,
			"tools": []any{MemoryToolDefinition}, "messages": messages})
		resp, err := http.Post(anthropicURL+"/v1/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var msg struct {
			StopReason string            `json:"stop_reason"`
			Content    []json.RawMessage `json:"content"`
		}
		err = json.NewDecoder(resp.Body).Decode(&msg)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if msg.StopReason != "tool_use" {
			return
		}
		var results []ToolResult
		for _, raw := range msg.Content {
			var use ToolUse
			if json.Unmarshal(raw, &use) != nil || use.Type != "tool_use" {
				continue
			}
			res, err := mg.HandleMemoryToolUse(ctx, use, nil)
			if err != nil {
				t.Fatalf("memory tool: %v", err)
			}
			results = append(results, res)
		}
		messages = append(messages, map[string]any{"role": "assistant", "content": msg.Content},
			map[string]any{"role": "user", "content": results})
	}
	t.Fatal("the agent loop did not end")
}

// TestMemoryToolHandler drives the SDK's memory tool handler with a fake
// Anthropic Messages API returning tool_use blocks, against a real
// memgate server: the files end up in memgate, versioned and audited.
func TestMemoryToolHandler(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ix := svctest.Index(t, st)
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix})
	opTok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	op, err := svc.Authenticate(ctx, opTok)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := svc.CreateAgent(ctx, op, "claude-app", memory.Standard)
	if err != nil {
		t.Fatal(err)
	}
	mgSrv := httptest.NewServer(api.New(svc, nil, nil, "test").Handler())
	defer mgSrv.Close()
	mg, err := NewClient(mgSrv.URL, agent.Token)
	if err != nil {
		t.Fatal(err)
	}

	fake := &fakeMessages{t: t, script: []map[string]any{
		{"command": "view", "path": "/memories"},
		{"command": "create", "path": "/memories/prefs.md", "file_text": "- prefers coffee\n"},
		{"command": "str_replace", "path": "/memories/prefs.md", "old_str": "coffee", "new_str": "tea"},
		{"command": "str_replace", "path": "/memories/prefs.md", "old_str": "coffee", "new_str": "tea"},
		{"command": "view", "path": "/memories/prefs.md"},
	}}
	anthropic := httptest.NewServer(fake)
	defer anthropic.Close()
	runAgent(t, ctx, anthropic.URL, mg)

	want := []ToolResult{
		{Content: "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n4.0K\t/memories"},
		{Content: "File created successfully at: /memories/prefs.md"},
		{Content: "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\t- prefers tea\n     2\t"},
		{Content: "No replacement was performed, old_str `coffee` did not appear verbatim in /memories/prefs.md.", IsError: true},
		{Content: "Here's the content of /memories/prefs.md with line numbers:\n     1\t- prefers tea\n     2\t"},
	}
	if len(fake.results) != len(want) {
		t.Fatalf("%d tool results, want %d", len(fake.results), len(want))
	}
	for i, w := range want {
		if got := fake.results[i]; got.Content != w.Content || got.IsError != w.IsError {
			t.Errorf("result %d = %+v, want %+v", i, got, w)
		}
	}

	// In memgate: one file, two versions, written by the agent, audited.
	p, err := svc.Authenticate(ctx, agent.Token)
	if err != nil {
		t.Fatal(err)
	}
	fs := files.New(svc, files.Options{})
	hist, err := fs.History(ctx, p, memory.Scope{}, "/memories/prefs.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || hist[1].Content != "- prefers tea\n" || hist[0].Author != p.ID || hist[1].Author != p.ID {
		t.Fatalf("history: %+v", hist)
	}
	entries, err := st.ListAudit(ctx, p.Workspace, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, e := range entries {
		if e.ActorID == p.ID {
			events = append(events, e.Event)
		}
	}
	if len(events) != 2 || events[0] != "record.write" || events[1] != "record.patch" {
		t.Fatalf("audit events by the agent: %v", events)
	}
}
