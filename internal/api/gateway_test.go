package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// goldenNormaliser replaces what differs between runs — ids and user
// keys — with stable placeholders, numbered in order of appearance, so
// that a golden file pins every other byte of a response.
type goldenNormaliser struct {
	ids  map[string]string
	keys map[string]string
}

var (
	uuidRE    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	userKeyRE = regexp.MustCompile(`uk_[0-9a-f]{32}_[A-Za-z0-9_-]{43}|uk_[A-Za-z0-9_-]{43}`)
)

func (n *goldenNormaliser) normalise(b []byte) []byte {
	b = userKeyRE.ReplaceAllFunc(b, func(k []byte) []byte {
		if _, ok := n.keys[string(k)]; !ok {
			n.keys[string(k)] = fmt.Sprintf("<USER_KEY_%d>", len(n.keys)+1)
		}
		return []byte(n.keys[string(k)])
	})
	return uuidRE.ReplaceAllFunc(b, func(id []byte) []byte {
		if _, ok := n.ids[string(id)]; !ok {
			n.ids[string(id)] = fmt.Sprintf("<ID_%d>", len(n.ids)+1)
		}
		return []byte(n.ids[string(id)])
	})
}

// golden compares a request and its answer with testdata/gateway/name.golden.
func (n *goldenNormaliser) golden(t *testing.T, name, method, path string, body any, status int, resp []byte) {
	t.Helper()
	var reqJSON []byte
	switch b := body.(type) {
	case string:
		reqJSON = []byte(b)
	default:
		reqJSON, _ = json.MarshalIndent(b, "", "  ")
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, resp, "", "  "); err != nil {
		pretty.Reset()
		pretty.Write(resp)
	}
	got := fmt.Sprintf("%s %s\n%s\n\n%d\n%s\n", method, path, reqJSON, status, strings.TrimSpace(pretty.String()))
	got = string(n.normalise([]byte(got)))
	file := filepath.Join("testdata", "gateway", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/api -run Gateway -update to create it)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// gw is one gateway exchange checked against its golden file.
func (h *harness) gw(n *goldenNormaliser, name, path string, body any, status int) []byte {
	h.t.Helper()
	code, hdr, raw := h.do("POST", path, "", body)
	if code != status {
		h.t.Fatalf("%s: POST %s: status %d, want %d: %s", name, path, code, status, raw)
	}
	if ct := hdr.Get("Content-Type"); ct != "application/json" {
		h.t.Fatalf("%s: Content-Type %q", name, ct)
	}
	n.golden(h.t, name, "POST", path, body, code, raw)
	return raw
}

func newUser(h *harness, id string) string {
	h.t.Helper()
	var u struct {
		UserID  string `json:"user_id"`
		UserKey string `json:"user_key"`
	}
	h.mustDo("POST", "/users", "op", map[string]any{"user_id": id}, http.StatusCreated, &u)
	if u.UserID != id || !userKeyRE.MatchString(u.UserKey) {
		h.t.Fatalf("created user %+v", u)
	}
	h.secrets = append(h.secrets, u.UserKey)
	return u.UserKey
}

func TestGatewayGolden(t *testing.T) {
	h := newHarnessOpts(t, harnessOptions{jobs: true})
	n := &goldenNormaliser{ids: map[string]string{}, keys: map[string]string{}}

	code, _, raw := h.do("POST", "/users", "op", map[string]any{"user_id": "u1"})
	n.golden(t, "users_create", "POST", "/users", map[string]any{"user_id": "u1"}, code, raw)
	var u struct {
		UserKey string `json:"user_key"`
	}
	if err := json.Unmarshal(raw, &u); err != nil || code != http.StatusCreated {
		t.Fatalf("create user: %d %s", code, raw)
	}
	key := u.UserKey
	h.secrets = append(h.secrets, key)
	code, _, raw = h.do("POST", "/users", "std", map[string]any{"user_id": "u2"})
	n.golden(t, "users_create_not_operator", "POST", "/users", map[string]any{"user_id": "u2"}, code, raw)
	code, _, raw = h.do("POST", "/users", "op", map[string]any{"user_id": "u1"})
	n.golden(t, "users_create_taken", "POST", "/users", map[string]any{"user_id": "u1"}, code, raw)

	id := func(extra map[string]any) map[string]any {
		m := map[string]any{"user_id": "u1", "user_key": key}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	msgs := []map[string]any{
		{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": "My VPN drops every hour. I prefer WireGuard over OpenVPN."},
		{"sender_id": "beaver", "role": "assistant", "timestamp": 1780000001000, "content": "Let's go with WireGuard and set a keepalive of 25 seconds."},
	}
	add := id(map[string]any{"session_id": "chat:c42", "app_id": "default", "project_id": "default", "messages": msgs})
	h.gw(n, "add", "/memories/add", add, http.StatusOK)
	h.gw(n, "add_resent", "/memories/add", add, http.StatusOK)

	// Unknown user and wrong key: the same 401, byte for byte.
	bad := id(map[string]any{"session_id": "chat:c42", "messages": msgs})
	bad["user_key"] = "uk_" + strings.Repeat("A", 43)
	_, _, wrongKey := h.do("POST", "/memories/add", "", bad)
	bad["user_id"] = "nobody"
	h.gw(n, "add_unauthenticated", "/memories/add", bad, http.StatusUnauthorized)
	_, _, unknown := h.do("POST", "/memories/add", "", bad)
	if !bytes.Equal(wrongKey, unknown) {
		t.Fatalf("wrong key and unknown user answer differently:\n%s\n%s", wrongKey, unknown)
	}

	h.gw(n, "search_current_chat", "/memories/search", id(map[string]any{"conversation_id": "c42",
		"query": "what did we decide about the VPN?", "scope": []string{"current_chat", "resources"}, "top_k": 8}), http.StatusOK)

	raw = h.gw(n, "flush", "/memories/flush", id(map[string]any{"session_id": "chat:c42"}), http.StatusAccepted)
	var fl struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(raw, &fl); err != nil || fl.JobID == "" {
		t.Fatalf("flush answer %s", raw)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if j, err := h.svc.WaitJob(ctx, "default", fl.JobID); err != nil || j.Status != "done" {
		t.Fatalf("flush job: %+v %v", j, err)
	}
	h.gw(n, "job", "/memories/jobs/get", id(map[string]any{"job_id": fl.JobID}), http.StatusOK)
	h.gw(n, "flush_nothing_new", "/memories/flush", id(map[string]any{"session_id": "chat:c42"}), http.StatusAccepted)

	doc := "# VPN runbook\n\nRestart the tunnel with `wg-quick down wg0 && wg-quick up wg0`.\n\n## Keepalive\n\nSet PersistentKeepalive = 25 on roaming clients.\n"
	raw = h.gw(n, "resource_upload", "/memories/resources", id(map[string]any{"name": "vpn.md", "content": doc}), http.StatusCreated)
	h.gw(n, "search_resources", "/memories/search", id(map[string]any{"query": "keepalive for roaming clients", "scope": []string{"resources"}, "top_k": 2}), http.StatusOK)
	h.gw(n, "search_all_user_memory", "/memories/search", id(map[string]any{"query": "WireGuard", "scope": []string{"all_user_memory"}, "top_k": 3}), http.StatusOK)

	var added struct {
		MemoryIDs []string `json:"memory_ids"`
	}
	if err := json.Unmarshal(h.gw(n, "add_second_chat", "/memories/add", id(map[string]any{"session_id": "chat:c43", "messages": []map[string]any{
		{"sender_id": "u1", "role": "user", "timestamp": 1780000100000, "content": "Remind me: the office router is in room 4."}}}), http.StatusOK), &added); err != nil || len(added.MemoryIDs) != 1 {
		t.Fatalf("add: %+v %v", added, err)
	}
	h.gw(n, "update", "/memories/update", id(map[string]any{"memory_id": added.MemoryIDs[0], "text": "u1: the office router is in room 5."}), http.StatusOK)
	h.gw(n, "delete", "/memories/delete", id(map[string]any{"memory_id": added.MemoryIDs[0]}), http.StatusOK)
	h.gw(n, "delete_again_gone", "/memories/update", id(map[string]any{"memory_id": added.MemoryIDs[0], "text": "x"}), http.StatusNotFound)
	h.gw(n, "search_after_delete", "/memories/search", id(map[string]any{"conversation_id": "c43", "query": "office router room",
		"scope": []string{"current_chat"}}), http.StatusOK)

	// Validation errors: 400s naming the field, never echoing the key.
	for _, c := range []struct {
		name, path string
		body       any
	}{
		{"err_malformed_json", "/memories/search", `{"user_id": "u1",`},
		{"err_missing_user_key", "/memories/search", map[string]any{"user_id": "u1", "query": "x"}},
		{"err_search_top_k", "/memories/search", id(map[string]any{"query": "x", "top_k": 101})},
		{"err_search_scope_empty", "/memories/search", id(map[string]any{"query": "x", "scope": []string{}})},
		{"err_search_scope_unknown", "/memories/search", id(map[string]any{"query": "x", "scope": []string{"everything"}})},
		{"err_search_no_conversation", "/memories/search", id(map[string]any{"query": "x", "scope": []string{"current_chat"}})},
		{"err_search_no_query", "/memories/search", id(map[string]any{"scope": []string{"all_user_memory"}})},
		{"err_add_no_session", "/memories/add", id(map[string]any{"messages": msgs})},
		{"err_add_no_messages", "/memories/add", id(map[string]any{"session_id": "chat:c42", "messages": []any{}})},
		{"err_add_bad_timestamp", "/memories/add", id(map[string]any{"session_id": "chat:c42", "messages": []map[string]any{
			{"sender_id": "u1", "role": "user", "timestamp": 0, "content": "hi"}}})},
		{"err_add_fractional_timestamp", "/memories/add", id(map[string]any{"session_id": "chat:c42", "messages": []map[string]any{
			{"sender_id": "u1", "role": "user", "timestamp": 1.5, "content": "hi"}}})},
		{"err_add_no_role", "/memories/add", id(map[string]any{"session_id": "chat:c42", "messages": []map[string]any{
			{"sender_id": "u1", "timestamp": 1780000000000, "content": "hi"}}})},
		{"err_add_nul_content", "/memories/add", id(map[string]any{"session_id": "chat:c42", "messages": []map[string]any{
			{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": "a\x00b"}}})},
		{"err_flush_no_session", "/memories/flush", id(nil)},
		{"err_job_unknown", "/memories/jobs/get", id(map[string]any{"job_id": "01a1fd18-3234-7435-a579-c0f5c085b877"})},
		{"err_delete_unknown", "/memories/delete", id(map[string]any{"memory_id": "01a1fd18-3234-7435-a579-c0f5c085b877"})},
		{"err_resource_bad_type", "/memories/resources", id(map[string]any{"name": "a.pdf", "content_type": "application/pdf", "content": "x"})},
	} {
		code, _, raw := h.do("POST", c.path, "", c.body)
		if code < 400 || code >= 500 {
			t.Fatalf("%s: status %d: %s", c.name, code, raw)
		}
		if bytes.Contains(raw, []byte(key)) {
			t.Fatalf("%s: the user key is echoed: %s", c.name, raw)
		}
		n.golden(t, c.name, "POST", c.path, c.body, code, raw)
	}
	audit, _ := json.Marshal(h.auditLog())
	for _, s := range h.secrets {
		if strings.Contains(h.logs.String(), s) {
			t.Fatal("a secret reached the logs")
		}
		if strings.Contains(string(audit), s) {
			t.Fatal("a secret reached the audit log")
		}
	}
	_, _, metricsText := h.do("GET", "/metrics", "", nil)
	if strings.Contains(string(metricsText), key) {
		t.Fatal("the user key reached the metrics")
	}
}
