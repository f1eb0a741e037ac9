package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/console"
	"github.com/memgate/memgate/internal/core"
)

// consoleEnv is a harness with a second server that serves the console
// (the harness's own server has it off, as api.New does by default).
type consoleEnv struct {
	*harness
	url string
	c   *http.Client
}

const consoleTTL = time.Hour

func newConsoleEnv(t *testing.T, tls bool) *consoleEnv {
	t.Helper()
	h := newHarness(t, nil)
	rest := api.New(h.svc, nil, h.metrics, "test")
	rest.EnableConsole(console.Options{TTL: consoleTTL})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(rest.Handler())
	} else {
		srv = httptest.NewServer(rest.Handler())
	}
	t.Cleanup(srv.Close)
	return &consoleEnv{harness: h, url: srv.URL, c: srv.Client()}
}

// send is one request with an optional session cookie and CSRF token.
func (e *consoleEnv) send(method, path, cookie, csrf string, body any, hdr map[string]string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = strings.NewReader(string(raw))
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: console.CookieName, Value: cookie})
	}
	if csrf != "" {
		req.Header.Set(console.CSRFHeader, csrf)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

type signedIn struct {
	cookie *http.Cookie
	csrf   string
	raw    []byte
}

func (e *consoleEnv) signIn(token string) (*http.Response, signedIn) {
	e.t.Helper()
	resp, raw := e.send("POST", "/console/session", "", "", map[string]string{"token": token}, nil)
	var s signedIn
	s.raw = raw
	for _, c := range resp.Cookies() {
		if c.Name == console.CookieName {
			s.cookie = c
		}
	}
	var info struct {
		CSRF string `json:"csrf_token"`
	}
	_ = json.Unmarshal(raw, &info)
	s.csrf = info.CSRF
	return resp, s
}

func (e *consoleEnv) agentCount() int {
	var out struct {
		Agents []json.RawMessage `json:"agents"`
	}
	e.mustDo("GET", "/v1/agents", "op", nil, http.StatusOK, &out)
	return len(out.Agents)
}

func (e *consoleEnv) auditEvents() []struct{ Event, ActorID string } {
	var page core.AuditPage
	e.mustDo("GET", "/v1/audit?limit=500", "op", nil, http.StatusOK, &page)
	var out []struct{ Event, ActorID string }
	for _, en := range page.Entries {
		out = append(out, struct{ Event, ActorID string }{en.Event, en.ActorID})
	}
	return out
}

func TestConsoleSignInOnlyOperators(t *testing.T) {
	e := newConsoleEnv(t, false)
	for _, who := range []string{"trusted", "std", "ro"} {
		resp, s := e.signIn(e.tokens[who])
		if resp.StatusCode != http.StatusForbidden || s.cookie != nil || s.csrf != "" {
			t.Fatalf("agent %s signing in: status %d, cookie %v, csrf %q; want 403 and no session", who, resp.StatusCode, s.cookie, s.csrf)
		}
	}
	if resp, s := e.signIn("mg_nosuch_secret"); resp.StatusCode != http.StatusUnauthorized || s.cookie != nil {
		t.Fatalf("bad token: status %d cookie %v, want 401 and none", resp.StatusCode, s.cookie)
	}
	// A sign-in posted from another site's page is refused (login CSRF).
	resp, _ := e.send("POST", "/console/session", "", "", map[string]string{"token": e.tokens["op"]}, map[string]string{"Origin": "https://evil.example"})
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("cross-origin sign-in: status %d cookies %v, want 403 and none", resp.StatusCode, resp.Cookies())
	}
	resp, s := e.signIn(e.tokens["op"])
	if resp.StatusCode != http.StatusOK || s.cookie == nil || s.csrf == "" {
		t.Fatalf("operator sign-in: %d %s", resp.StatusCode, s.raw)
	}
	c := s.cookie
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || c.MaxAge != int(consoleTTL/time.Second) {
		t.Fatalf("cookie attributes: %+v", c)
	}
	if strings.Contains(string(s.raw), e.tokens["op"]) || strings.Contains(c.Value, e.tokens["op"]) || c.Value == s.csrf {
		t.Fatal("the session answer or cookie carries the token, or the cookie doubles as the CSRF token")
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("sign-in answer may be cached: %q", resp.Header.Get("Cache-Control"))
	}
	ev := e.auditEvents()
	if last := ev[len(ev)-1]; last.Event != "console.sign_in" || last.ActorID == "" {
		t.Fatalf("sign-in not audited as the operator: %+v", last)
	}
	// Under TLS the cookie is Secure.
	te := newConsoleEnv(t, true)
	if _, s := te.signIn(te.tokens["op"]); s.cookie == nil || !s.cookie.Secure {
		t.Fatalf("TLS sign-in cookie: %+v", s.cookie)
	}
}

func TestConsoleNoStateChangeWithoutCookieAndCSRF(t *testing.T) {
	e := newConsoleEnv(t, false)
	_, s := e.signIn(e.tokens["op"])
	n := e.agentCount()
	body := map[string]string{"name": "viaconsole"}
	cases := []struct {
		name, cookie, csrf string
		status             int
	}{
		{"no cookie, no token", "", "", http.StatusUnauthorized},
		{"CSRF token without the cookie", "", s.csrf, http.StatusUnauthorized},
		{"cookie without the CSRF token", s.cookie.Value, "", http.StatusForbidden},
		{"cookie with a wrong CSRF token", s.cookie.Value, s.csrf + "x", http.StatusForbidden},
		{"a forged cookie with the CSRF token", s.cookie.Value + "x", s.csrf, http.StatusUnauthorized},
	}
	for _, c := range cases {
		resp, raw := e.send("POST", "/v1/agents", c.cookie, c.csrf, body, nil)
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.status, raw)
		}
		if got := e.agentCount(); got != n {
			t.Fatalf("%s: an agent was created (%d agents, had %d)", c.name, got, n)
		}
		// Every state-changing route of the console is refused the same
		// way: sign-out without the CSRF token leaves the session alive.
		if resp, _ := e.send("DELETE", "/console/session", c.cookie, c.csrf, nil, nil); resp.StatusCode < 400 {
			t.Fatalf("%s: sign-out answered %d", c.name, resp.StatusCode)
		}
	}
	// A read needs only the cookie (SameSite=Strict keeps other sites out).
	if resp, raw := e.send("GET", "/v1/whoami", s.cookie.Value, "", nil, nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"kind":"operator"`) {
		t.Fatalf("whoami with the cookie: %d %s", resp.StatusCode, raw)
	}
	resp, raw := e.send("POST", "/v1/agents", s.cookie.Value, s.csrf, body, nil)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("cookie + CSRF: %d %s", resp.StatusCode, raw)
	}
	var who struct {
		ID string `json:"id"`
	}
	e.mustDo("GET", "/v1/whoami", "op", nil, http.StatusOK, &who)
	ev := e.auditEvents()
	if last := ev[len(ev)-1]; last.Event != "agent.create" || last.ActorID != who.ID {
		t.Fatalf("the console's write is not audited as the operator %s: %+v", who.ID, last)
	}
}

func TestConsoleCSPOnEveryResponse(t *testing.T) {
	e := newConsoleEnv(t, false)
	_, s := e.signIn(e.tokens["op"])
	reqs := []struct{ method, path, cookie, csrf string }{
		{"GET", "/console/", "", ""}, {"GET", "/console/index.html", "", ""}, {"GET", "/console/queue", "", ""},
		{"GET", "/console/app.css", "", ""}, {"GET", "/console/js/app.js", "", ""}, {"GET", "/console/js/queue.js", "", ""},
		{"GET", "/console/missing.js", "", ""}, {"POST", "/console/", "", ""},
		{"GET", "/console/session", "", ""}, {"GET", "/console/session", s.cookie.Value, ""},
		{"POST", "/console/session", "", ""}, {"PUT", "/console/session", "", ""}, {"DELETE", "/console/session", s.cookie.Value, ""},
	}
	for _, r := range reqs {
		resp, raw := e.send(r.method, r.path, r.cookie, r.csrf, nil, nil)
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s (%d): CSP %q", r.method, r.path, resp.StatusCode, csp)
		}
		if r.path == "/console/" {
			page := string(raw)
			// No inline script or handler: every <script> has a src.
			for _, part := range strings.Split(page, "<script")[1:] {
				if !strings.Contains(part[:strings.Index(part, ">")], "src=") {
					t.Errorf("inline script in the page: %q", part)
				}
			}
			if strings.Contains(page, " onclick=") || strings.Contains(page, " style=") {
				t.Error("inline handler or style in the page")
			}
		}
	}
	if resp, _ := e.send("GET", "/console/js/app.js", "", "", nil, nil); !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Fatalf("module served as %q", resp.Header.Get("Content-Type"))
	}
}

func TestConsoleSessionExpires(t *testing.T) {
	e := newConsoleEnv(t, false)
	_, s := e.signIn(e.tokens["op"])
	e.clock.Advance(consoleTTL - time.Minute)
	if resp, _ := e.send("GET", "/v1/whoami", s.cookie.Value, "", nil, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("within its lifetime the session answered %d", resp.StatusCode)
	}
	e.clock.Advance(time.Minute)
	for _, p := range []string{"/v1/whoami", "/console/session", "/v1/approvals"} {
		if resp, _ := e.send("GET", p, s.cookie.Value, "", nil, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("expired session on %s answered %d, want 401", p, resp.StatusCode)
		}
	}
	if resp, _ := e.send("POST", "/v1/agents", s.cookie.Value, s.csrf, map[string]string{"name": "late"}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("expired session wrote: %d", resp.StatusCode)
	}
	// Sign-out ends a session at once, and is audited.
	_, s = e.signIn(e.tokens["op"])
	resp, _ := e.send("DELETE", "/console/session", s.cookie.Value, s.csrf, nil, nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("sign-out: %d", resp.StatusCode)
	}
	if cs := resp.Cookies(); len(cs) != 1 || cs[0].MaxAge >= 0 {
		t.Fatalf("sign-out does not clear the cookie: %v", cs)
	}
	if resp, _ := e.send("GET", "/v1/whoami", s.cookie.Value, "", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("signed-out session answered %d", resp.StatusCode)
	}
	ev := e.auditEvents()
	if ev[len(ev)-1].Event != "console.sign_out" {
		t.Fatalf("sign-out not audited: %+v", ev[len(ev)-1])
	}
}

func TestConsoleOffByDefault(t *testing.T) {
	h := newHarness(t, nil)
	code, _, _ := h.do("GET", "/console/", "", nil)
	if code != http.StatusNotFound {
		t.Fatalf("console served without EnableConsole: %d", code)
	}
}

func TestForgetSubjectPreview(t *testing.T) {
	h := newHarness(t, nil)
	for _, c := range []string{"Alice likes green tea", "Alice moved to Lyon"} {
		h.mustDo("POST", "/v1/records", "std", map[string]any{"type": "belief", "content": c, "entities": []string{"person:alice"}}, http.StatusCreated, nil)
	}
	var pre api.ForgetPreview
	h.mustDo("POST", "/v1/graph/forget_subject", "op", map[string]any{"subject": "person:alice", "preview": true}, http.StatusOK, &pre)
	if !pre.Preview || pre.Records != 2 || pre.Nodes != 1 {
		t.Fatalf("preview: %+v", pre)
	}
	var list struct {
		Records []json.RawMessage `json:"records"`
	}
	h.mustDo("GET", "/v1/records?entity=person:alice", "op", nil, http.StatusOK, &list)
	if len(list.Records) != 2 {
		t.Fatalf("the preview erased: %d records left", len(list.Records))
	}
	var page core.AuditPage
	h.mustDo("GET", "/v1/audit?limit=500", "op", nil, http.StatusOK, &page)
	for _, en := range page.Entries {
		if en.Event == "subject.forget" {
			t.Fatal("the preview was audited as an erasure")
		}
	}
	h.wantError("POST", "/v1/graph/forget_subject", "trusted", map[string]any{"subject": "person:alice", "preview": true}, http.StatusForbidden, "permission_denied")
	var done core.ForgetReport
	h.mustDo("POST", "/v1/graph/forget_subject", "op", map[string]any{"subject": "person:alice"}, http.StatusOK, &done)
	if done.Records != pre.Records || done.Nodes != pre.Nodes || done.Edges != pre.Edges || done.Messages != pre.Messages {
		t.Fatalf("erasure %+v differs from its preview %+v", done, pre)
	}
}

func TestApprovalItemsCarryPIISpans(t *testing.T) {
	h := newHarness(t, nil)
	content := "Café ☕ 🎉 note: write to bob@example.com please"
	h.mustDo("POST", "/v1/records", "std", map[string]any{"type": "belief", "content": content}, http.StatusAccepted, nil)
	var page core.ApprovalPage
	h.mustDo("GET", "/v1/approvals", "op", nil, http.StatusOK, &page)
	if len(page.Items) != 1 || len(page.Items[0].PII) != 1 {
		t.Fatalf("items: %+v", page.Items)
	}
	sp := page.Items[0].PII[0]
	u := utf16.Encode([]rune(content))
	if sp.Kind != "email" || string(utf16.Decode(u[sp.Start:sp.End])) != "bob@example.com" {
		t.Fatalf("span %+v marks %q", sp, string(utf16.Decode(u[sp.Start:sp.End])))
	}
}
