package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeFindsByMeaningOutOfTheBox: a server started with no embedder
// configuration (and no model files: the model is in the binary) finds a
// record by meaning through REST.
func TestServeFindsByMeaningOutOfTheBox(t *testing.T) {
	srv := startServer(t, filepath.Join(t.TempDir(), "data"), "--embedder", "")
	toks := srv.Tokens()
	if len(toks) != 1 {
		t.Fatalf("want one operator token; output:\n%s", srv.Output())
	}
	c := newClient(t, srv.base, toks[0], 2)
	for _, content := range []string{"I adopted a beagle named Rex last spring", "I work as a nurse", "The meeting moved to Thursday"} {
		if status, body, err := c.do("POST", "/v1/records", map[string]any{"type": "episode", "content": content}); err != nil || status != http.StatusCreated {
			t.Fatalf("write: %d %s %v", status, body, err)
		}
	}
	// Writes never wait for the embedder: wait (bounded) for the vectors.
	var ix struct {
		Model           string
		Embedded, Total int
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, body, err := c.do("GET", "/v1/index", nil)
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &ix) != nil {
			t.Fatalf("index status: %d %s %v", status, body, err)
		}
		if ix.Total == 3 && ix.Embedded == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("vectors not filled in 30 s: %+v", ix)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's own progress report
	}
	if ix.Model != "use-lite-f16" {
		t.Fatalf("index model %q, want the built-in use-lite-f16", ix.Model)
	}
	status, body, err := c.do("POST", "/v1/search", map[string]any{"query": "what pet does the user have?", "k": 3, "explain": true})
	if err != nil || status != http.StatusOK {
		t.Fatalf("search: %d %s %v", status, body, err)
	}
	var res struct {
		Signals []string
		Results []struct {
			Record  struct{ Content string }
			Explain map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 || !strings.Contains(res.Results[0].Record.Content, "beagle") {
		t.Fatalf("first result is not the beagle: %s", body)
	}
	if _, ok := res.Results[0].Explain["dense"]; !ok {
		t.Fatalf("the beagle was not found by the dense signal: %s", body)
	}

	// The same through the Memory Gateway: a chat runtime's user says it
	// in a conversation and asks by meaning. The question shares no
	// content word with the turn, so only the dense signal can find it.
	status, body, err = c.do("POST", "/users", map[string]any{"user_id": "ana"})
	if err != nil || status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("create user: %d %s %v", status, body, err)
	}
	var user struct {
		UserKey string `json:"user_key"`
	}
	if err := json.Unmarshal(body, &user); err != nil || user.UserKey == "" {
		t.Fatalf("create user: %s %v", body, err)
	}
	cred := func(m map[string]any) map[string]any {
		m["user_id"], m["user_key"] = "ana", user.UserKey
		return m
	}
	now := time.Now().UnixMilli()
	msgs := []map[string]any{
		{"sender_id": "ana", "role": "user", "timestamp": now, "content": "I adopted a beagle named Rex last spring"},
		{"sender_id": "assistant", "role": "assistant", "timestamp": now + 1, "content": "Congratulations, Rex sounds lovely."},
		{"sender_id": "ana", "role": "user", "timestamp": now + 2, "content": "I work as a nurse on night shifts"},
	}
	if status, body, err := c.do("POST", "/memories/add", cred(map[string]any{"session_id": "s1", "messages": msgs})); err != nil || status != http.StatusOK {
		t.Fatalf("gateway add: %d %s %v", status, body, err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		status, body, err := c.do("GET", "/v1/index", nil)
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &ix) != nil {
			t.Fatalf("index status: %d %s %v", status, body, err)
		}
		if ix.Total == 6 && ix.Embedded == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway turns not embedded in 30 s: %+v", ix)
		}
		time.Sleep(50 * time.Millisecond) // polling the server's own progress report
	}
	status, body, err = c.do("POST", "/memories/search", cred(map[string]any{
		"conversation_id": "s1", "query": "what pet does the user have?", "scope": []string{"all_user_memory"}, "top_k": 3}))
	if err != nil || status != http.StatusOK {
		t.Fatalf("gateway search: %d %s %v", status, body, err)
	}
	var gw struct {
		Results []struct{ Text string }
	}
	if err := json.Unmarshal(body, &gw); err != nil {
		t.Fatal(err)
	}
	if len(gw.Results) == 0 || !strings.Contains(gw.Results[0].Text, "beagle") {
		t.Fatalf("gateway: first result is not the beagle: %s", body)
	}
}
