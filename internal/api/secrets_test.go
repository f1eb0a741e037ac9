package api_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/gate"
)

// TestSecretsNeverLeak passes real tokens everywhere a client can put
// them — bodies, field names, query strings, paths, headers, record
// content — and asserts none reaches logs, response bodies, the audit log
// or the metrics.
func TestSecretsNeverLeak(t *testing.T) {
	h := newHarness(t, func(p *gate.Policy) { p.RateLimit.Agent = gate.Bucket{PerSecond: 1000, Burst: 1000} })
	// A revoked agent's token is a secret too.
	var created struct{ Token string }
	h.mustDo("POST", "/v1/agents", "op", map[string]any{"name": "leaky"}, 201, &created)
	h.secrets = append(h.secrets, created.Token)
	h.mustDo("DELETE", "/v1/agents/leaky", "op", nil, 200, nil)

	// Secret-shaped strings that are not memgate tokens.
	h.secrets = append(h.secrets, "sk-proj-"+strings.Repeat("Zq9x", 10), "AKIAIOSFODNN7EXAMPLE")

	var responses []string
	record := func(_ int, _ any, raw []byte) { responses = append(responses, string(raw)) }
	for _, sec := range h.secrets {
		q := url.QueryEscape(sec)
		reqs := []struct {
			method, path, who string
			body              any
		}{
			{"POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "token is " + sec}},
			{"POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "metadata": map[string]any{"key": sec}}},
			{"POST", "/v1/records", "std", map[string]any{"type": sec, "content": "x"}},
			{"POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "entities": []string{sec}}},
			{"POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "category": sec}},
			{"POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "scope": map[string]any{"user_id": sec + "\n"}}},
			{"POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "x", "supersedes": sec}},
			{"POST", "/v1/records", "std", `{"` + sec + `": 1}`},
			{"POST", "/v1/records", "std", `{"type": "belief", "content": ` + sec + `}`},
			{"POST", "/v1/records", "std", `{"type": "belief", "content": "x", "valid_from": "` + sec + `"}`},
			{"GET", "/v1/records?type=" + q + "&cursor=" + q + "&as_of=" + q, "std", nil},
			{"GET", "/v1/records?limit=" + q, "std", nil},
			{"GET", "/v1/records/" + q, "std", nil},
			{"PATCH", "/v1/records/" + q, "std", map[string]any{"expected_version": 1, "content": sec}},
			{"POST", "/v1/agents", "op", map[string]any{"name": sec}},
			{"POST", "/v1/agents", "op", map[string]any{"name": "ok", "trust": sec}},
			{"GET", "/v1/records", sec, nil},
			{"GET", "/v1/records", sec[:len(sec)-2] + "zz", nil},
			{"GET", "/v1/approvals?status=" + q, "op", nil},
			{"POST", "/v1/approvals/" + q + "/reject", "op", map[string]any{"reason": sec}},
		}
		for _, r := range reqs {
			code, _, raw := h.do(r.method, r.path, r.who, r.body)
			if code >= 500 {
				t.Fatalf("%s %s: status %d: %s", r.method, r.path, code, raw)
			}
			if code >= 400 {
				record(code, nil, raw)
			}
		}
	}
	// Approve-edit with a secret, so an approval path sees one too.
	var page struct {
		Items []struct{ ID string } `json:"items"`
	}
	h.mustDo("GET", "/v1/approvals", "op", nil, 200, &page)
	if len(page.Items) == 0 {
		t.Fatal("secret-bearing content was not queued")
	}
	h.mustDo("POST", "/v1/approvals/"+page.Items[0].ID+"/reject", "op", map[string]any{"reason": h.secrets[1]}, 200, nil)

	_, _, metricsBody := h.do("GET", "/metrics", "", nil)
	entries := h.auditLog()
	logs := h.logs.String()

	for _, sec := range h.secrets {
		for i, body := range responses {
			if strings.Contains(body, sec) {
				t.Errorf("error response %d leaks a secret: %s", i, body)
			}
		}
		if strings.Contains(logs, sec) {
			t.Errorf("logs leak a secret")
		}
		for _, e := range entries {
			if raw, _ := json.Marshal(e); strings.Contains(string(raw), sec) {
				t.Errorf("audit entry %d (%s) leaks a secret", e.Seq, e.Event)
			}
		}
		if strings.Contains(string(metricsBody), sec) {
			t.Errorf("metrics leak a secret")
		}
	}
	if len(entries) < 20 {
		t.Fatalf("expected the rejections to be audited, got %d entries", len(entries))
	}
}
