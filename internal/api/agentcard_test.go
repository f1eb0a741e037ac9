package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestAgentCard: GET /.well-known/agent-card.json is public and holds the
// A2A AgentCard's required fields (protocol JSON schema, 0.3) with the
// right types, skills with their required fields, and a bearer security
// scheme that the card's security requirement names; its URLs are this
// server's and its skills' routes exist.
func TestAgentCard(t *testing.T) {
	h := newHarness(t, nil)
	code, hdr, raw := h.do("GET", "/.well-known/agent-card.json", "", nil)
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, content type %q: %s", code, hdr.Get("Content-Type"), raw)
	}
	var card map[string]any
	if err := json.Unmarshal(raw, &card); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"protocolVersion", "name", "description", "url", "version", "preferredTransport", "documentationUrl"} {
		if s, ok := card[f].(string); !ok || s == "" {
			t.Errorf("%s: want a non-empty string, got %#v", f, card[f])
		}
	}
	for _, f := range []string{"defaultInputModes", "defaultOutputModes"} {
		modes, ok := card[f].([]any)
		if !ok || len(modes) == 0 {
			t.Errorf("%s: want a non-empty array, got %#v", f, card[f])
		}
		for _, m := range modes {
			if s, _ := m.(string); !strings.Contains(s, "/") {
				t.Errorf("%s: %v is not a MIME type", f, m)
			}
		}
	}
	if card["version"] != "test" {
		t.Errorf("version %v, want the server's", card["version"])
	}
	if u, _ := card["url"].(string); u != h.srv.URL+"/v1" {
		t.Errorf("url %q, want %q", u, h.srv.URL+"/v1")
	}
	caps, ok := card["capabilities"].(map[string]any)
	if !ok {
		t.Fatalf("capabilities: %#v", card["capabilities"])
	}
	for k, v := range caps {
		if _, ok := v.(bool); !ok {
			t.Errorf("capabilities.%s = %#v, want a boolean", k, v)
		}
	}
	skills, _ := card["skills"].([]any)
	if len(skills) < 4 {
		t.Fatalf("skills: %#v", card["skills"])
	}
	ids := map[string]bool{}
	for _, s := range skills {
		sk, _ := s.(map[string]any)
		for _, f := range []string{"id", "name", "description"} {
			if v, _ := sk[f].(string); v == "" {
				t.Errorf("skill %v: %s missing", sk["id"], f)
			}
		}
		if tags, _ := sk["tags"].([]any); len(tags) == 0 {
			t.Errorf("skill %v: tags missing", sk["id"])
		}
		id, _ := sk["id"].(string)
		if ids[id] {
			t.Errorf("skill id %q twice", id)
		}
		ids[id] = true
	}
	for _, want := range []string{"remember", "recall", "forget"} {
		if !ids[want] {
			t.Errorf("no %q skill", want)
		}
	}
	schemes, _ := card["securitySchemes"].(map[string]any)
	bearer, _ := schemes["bearerAuth"].(map[string]any)
	if bearer["type"] != "http" || bearer["scheme"] != "bearer" {
		t.Errorf("securitySchemes.bearerAuth = %#v", bearer)
	}
	sec, _ := card["security"].([]any)
	if len(sec) != 1 {
		t.Fatalf("security: %#v", card["security"])
	}
	for name := range sec[0].(map[string]any) {
		if _, ok := schemes[name]; !ok {
			t.Errorf("security names %q, which securitySchemes lacks", name)
		}
	}

	// The routes the card points to are served.
	if code, _, _ := h.do("GET", "/openapi.json", "", nil); code != http.StatusOK {
		t.Errorf("documentationUrl route: %d", code)
	}
	if code, _, _ := h.do("GET", "/v1/whoami", "std", nil); code != http.StatusOK {
		t.Errorf("/v1 with a bearer token: %d", code)
	}

	// Behind a TLS-terminating proxy the card says https.
	req, _ := http.NewRequest("GET", h.srv.URL+"/.well-known/agent-card.json", nil)
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Host = "memory.example.com"
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var proxied map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&proxied); err != nil {
		t.Fatal(err)
	}
	if proxied["url"] != "https://memory.example.com/v1" {
		t.Errorf("behind a proxy: url %v", proxied["url"])
	}
}
