package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const testToken = "mg_TOKEN_secret_987"

// seen is one request as the fake REST server received it.
type seen struct {
	method, path, query, auth, contentType string
	body                                   map[string]any
}

// restServer answers each "METHOD escaped-path" with a canned status,
// headers and body, and records what it received.
type restServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []seen
}

type canned struct {
	status int
	header map[string]string
	body   string
}

func newRESTServer(t *testing.T, routes map[string]canned) *restServer {
	t.Helper()
	s := &restServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		s.mu.Lock()
		s.got = append(s.got, seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
		s.mu.Unlock()
		c, ok := routes[r.Method+" "+r.URL.EscapedPath()]
		if !ok {
			c = canned{status: 404, body: `{"error": {"code": "not_found", "message": "no such route"}}`}
		}
		for k, v := range c.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(c.status)
		_, _ = io.WriteString(w, c.body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *restServer) last(t *testing.T) seen {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		t.Fatal("no request reached the server")
	}
	return s.got[len(s.got)-1]
}

func (s *restServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

const recordJSON = `{"id": "0195f0a0-0000-7000-8000-000000000001", "type": "belief", "category": "technology",
 "content": "Alice prefers PostgreSQL", "content_sha256": "ab", "metadata": {"k": 1}, "entities": ["person:alice"],
 "version": 2, "superseded_by": null, "supersedes": null, "status": "active",
 "source": {"agent": "bot", "kind": "told", "confidence": 0.75, "evidence": []},
 "scope": {"user_id": "alice", "project_id": "p1"}, "valid_from": "2026-03-01T00:00:00Z", "valid_until": null,
 "ingested_at": "2026-03-01T12:00:00Z", "invalidated_at": null, "access": "public", "classification": "",
 "gate": {"decision_id": "d1", "decision": "accepted", "origin": "external"}, "decay_score": 1, "path": "fast",
 "last_retrieved_at": null, "retrieval_count": 3, "created_at": "2026-03-01T12:00:00Z", "updated_at": "2026-03-02T12:00:00Z"}`

const recID = "0195f0a0-0000-7000-8000-000000000001"

func TestClientRoutes(t *testing.T) {
	withCitation := strings.TrimSuffix(recordJSON, "}") + `, "citation": "mem://` + recID + `@v2"}`
	s := newRESTServer(t, map[string]canned{
		"POST /v1/records":                      {status: 201, body: `{"decision": "accepted", "record": ` + recordJSON + `, "citation": "mem://x@v1"}`},
		"GET /v1/records/" + recID:              {status: 200, body: withCitation},
		"PATCH /v1/records/" + recID:            {status: 200, body: `{"decision": "accepted", "record": ` + recordJSON + `, "citation": "mem://x@v3"}`},
		"DELETE /v1/records/" + recID:           {status: 200, body: `{"record": {"id": "` + recID + `", "status": "forgotten", "content": ""}}`},
		"GET /v1/records/" + recID + "/history": {status: 200, body: `{"versions": [` + recordJSON + `, ` + recordJSON + `]}`},
		"GET /v1/records":                       {status: 200, body: `{"records": [` + recordJSON + `]}`},
		"POST /v1/search":                       {status: 200, body: `{"route": "simple", "signals": ["lexical"], "results": [{"record": ` + recordJSON + `, "score": 0.5, "citation": "mem://x@v2", "explain": {"lexical": {"rank": 1, "score": 2.5}}}], "degraded": ["dense"]}`},
		"GET /v1/whoami":                        {status: 200, body: `{"id": "a1", "workspace": "default", "kind": "agent", "name": "bot", "trust": "standard", "created_at": "2026-03-01T12:00:00Z", "revoked_at": null}`},
		"GET /v1/records/a%2Fb":                 {status: 200, body: recordJSON},
	})
	c, err := NewClient(s.srv.URL+"/", testToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	validFrom := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

	checkReq := func(method, path, query string) seen {
		t.Helper()
		r := s.last(t)
		if r.method != method || r.path != path || r.query != query {
			t.Errorf("request = %s %s?%s, want %s %s?%s", r.method, r.path, r.query, method, path, query)
		}
		if r.auth != "Bearer "+testToken {
			t.Errorf("Authorization = %q", r.auth)
		}
		return r
	}

	wr, err := c.Write(ctx, WriteRequest{Type: TypeBelief, Content: "Alice prefers PostgreSQL", Entities: []string{"person:alice"},
		Scope: Scope{UserID: "alice"}, ValidFrom: &validFrom, Source: &SourceInput{Kind: "told"}})
	if err != nil || wr.Decision != DecisionAccepted || wr.Record.Version != 2 || wr.Record.Scope.ProjectID != "p1" || wr.Citation != "mem://x@v1" {
		t.Fatalf("Write = %+v, %v", wr, err)
	}
	r := checkReq("POST", "/v1/records", "")
	if r.contentType != "application/json" {
		t.Errorf("Content-Type = %q", r.contentType)
	}
	wantBody := `{"content":"Alice prefers PostgreSQL","entities":["person:alice"],"scope":{"user_id":"alice"},"source":{"kind":"told"},"type":"belief","valid_from":"2026-03-01T00:00:00Z"}`
	if b, _ := json.Marshal(r.body); string(b) != wantBody {
		t.Errorf("write body = %s\nwant %s", b, wantBody)
	}

	rec, err := c.Get(ctx, recID, &GetOptions{Version: 2, KnownAt: &validFrom, IncludeSensitive: true})
	if err != nil || rec.Citation != "mem://"+recID+"@v2" || rec.Content != "Alice prefers PostgreSQL" || rec.ValidFrom == nil || rec.ValidUntil != nil || rec.RetrievalCount != 3 {
		t.Fatalf("Get = %+v, %v", rec, err)
	}
	checkReq("GET", "/v1/records/"+recID, "include_sensitive=true&known_at=2026-03-01T00%3A00%3A00Z&version=2")

	if _, err := c.Get(ctx, "a/b", nil); err != nil {
		t.Errorf("Get(a/b) = %v", err)
	}
	checkReq("GET", "/v1/records/a%2Fb", "")

	content := "Alice prefers SQLite"
	pr, err := c.Patch(ctx, recID, PatchRequest{ExpectedVersion: 2, Content: &content, Entities: []string{}, ClearValidUntil: true})
	if err != nil || pr.Citation != "mem://x@v3" {
		t.Fatalf("Patch = %+v, %v", pr, err)
	}
	r = checkReq("PATCH", "/v1/records/"+recID, "")
	if b, _ := json.Marshal(r.body); string(b) != `{"content":"Alice prefers SQLite","entities":[],"expected_version":2,"valid_until":null}` {
		t.Errorf("patch body = %s", b)
	}

	tomb, err := c.Forget(ctx, recID)
	if err != nil || tomb.Status != StatusForgotten || tomb.ID != recID {
		t.Fatalf("Forget = %+v, %v", tomb, err)
	}
	checkReq("DELETE", "/v1/records/"+recID, "")

	vs, err := c.History(ctx, recID, true)
	if err != nil || len(vs) != 2 {
		t.Fatalf("History = %d versions, %v", len(vs), err)
	}
	checkReq("GET", "/v1/records/"+recID+"/history", "include_sensitive=true")

	lr, err := c.List(ctx, ListRequest{Types: []string{TypeBelief, TypeDecision}, Scope: Scope{UserID: "alice", SessionID: "chat:1"}, Limit: 5, Cursor: "c0", MinConfidence: 0.5, IncludeInvalidated: true})
	if err != nil || len(lr.Records) != 1 || lr.NextCursor != "" {
		t.Fatalf("List = %+v, %v", lr, err)
	}
	checkReq("GET", "/v1/records", "cursor=c0&include_invalidated=true&limit=5&min_confidence=0.5&session_id=chat%3A1&type=belief%2Cdecision&user_id=alice")

	sr, err := c.Search(ctx, RecordSearchRequest{Query: "database", K: 3, Explain: true})
	if err != nil || len(sr.Results) != 1 || sr.Results[0].Explain["lexical"].Rank != 1 || sr.Degraded[0] != "dense" {
		t.Fatalf("Search = %+v, %v", sr, err)
	}
	r = checkReq("POST", "/v1/search", "")
	if b, _ := json.Marshal(r.body); string(b) != `{"explain":true,"k":3,"query":"database","scope":{}}` {
		t.Errorf("search body = %s", b)
	}

	p, err := c.WhoAmI(ctx)
	if err != nil || p.Name != "bot" || p.RevokedAt != nil {
		t.Fatalf("WhoAmI = %+v, %v", p, err)
	}
	checkReq("GET", "/v1/whoami", "")

	n := s.count()
	if _, err := c.Patch(ctx, recID, PatchRequest{Content: &content}); err == nil {
		t.Error("Patch without expected_version: want an error")
	}
	if _, err := c.Get(ctx, " ", nil); err == nil {
		t.Error("Get with a blank id: want an error")
	}
	if s.count() != n {
		t.Error("invalid calls reached the server")
	}
}

func TestClientRecordsPages(t *testing.T) {
	var mu sync.Mutex
	var cursors []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := r.URL.Query().Get("cursor")
		mu.Lock()
		cursors = append(cursors, cur)
		mu.Unlock()
		switch cur {
		case "":
			_, _ = io.WriteString(w, `{"records": [{"id": "r1"}, {"id": "r2"}], "next_cursor": "r2"}`)
		case "r2":
			_, _ = io.WriteString(w, `{"records": [{"id": "r3"}]}`)
		}
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL, testToken)
	var ids []string
	for rec, err := range c.Records(context.Background(), ListRequest{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	if strings.Join(ids, ",") != "r1,r2,r3" || strings.Join(cursors, ",") != ",r2" {
		t.Errorf("ids = %v, cursors = %q", ids, cursors)
	}
}

func TestClientErrors(t *testing.T) {
	retryAt := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	s := newRESTServer(t, map[string]canned{
		"GET /v1/records/missing":  {status: 404, body: `{"error": {"code": "not_found", "message": "no such record", "details": {"id": "missing"}}}`},
		"PATCH /v1/records/stale":  {status: 409, body: `{"error": {"code": "version_conflict", "message": "expected version 1, current is 2", "details": {"current_version": 2}}}`},
		"POST /v1/records":         {status: 429, header: map[string]string{"Retry-After": "7"}, body: `{"error": {"code": "rate_limited", "message": "rate limit exceeded"}}`},
		"POST /v1/search":          {status: 503, header: map[string]string{"Retry-After": retryAt}, body: `{"error": {"code": "unavailable", "message": "database unavailable"}}`},
		"GET /v1/whoami":           {status: 401, body: `{"error": {"code": "unauthenticated", "message": "token ` + testToken + ` is revoked"}}`},
		"GET /v1/records":          {status: 502, body: `<html>bad gateway</html>`},
		"GET /v1/records/bad":      {status: 200, body: `{"id": `},
		"DELETE /v1/records/moved": {status: 307, header: map[string]string{"Location": "/elsewhere"}},
	})
	c, err := NewClient(s.srv.URL, testToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v := 1

	_, err = c.Get(ctx, "missing", nil)
	var e *Error
	if !errors.As(err, &e) || e.Status != 404 || e.Code != CodeNotFound || e.Message != "no such record" || !IsNotFound(err) {
		t.Fatalf("404: %#v", err)
	}
	if d, ok := e.Details.(map[string]any); !ok || d["id"] != "missing" {
		t.Errorf("details = %#v", e.Details)
	}
	if e.Error() != "memgate: 404 not_found: no such record" {
		t.Errorf("Error() = %q", e.Error())
	}

	_, err = c.Patch(ctx, "stale", PatchRequest{ExpectedVersion: v, Invalidate: true})
	if !IsConflict(err) || StatusOf(err) != 409 {
		t.Errorf("409: %v", err)
	}

	_, err = c.Write(ctx, WriteRequest{Type: TypeBelief, Content: "x"})
	if !errors.As(err, &e) || e.Status != 429 || e.Code != CodeRateLimited || e.RetryAfter != 7*time.Second {
		t.Errorf("429: %#v", err)
	}

	_, err = c.Search(ctx, RecordSearchRequest{Query: "x"})
	if !errors.As(err, &e) || e.Status != 503 || e.RetryAfter < 80*time.Second || e.RetryAfter > 91*time.Second {
		t.Errorf("503 with an HTTP-date Retry-After: %#v", err)
	}

	_, err = c.WhoAmI(ctx)
	if !errors.As(err, &e) || e.Status != 401 || strings.Contains(err.Error(), testToken) || e.Message != "token [redacted] is revoked" {
		t.Errorf("401 echoing the token: %q", err)
	}

	_, err = c.List(ctx, ListRequest{})
	if !errors.As(err, &e) || e.Status != 502 || e.Code != "" || e.Message != "bad gateway" {
		t.Errorf("502 without an envelope: %#v", err)
	}

	_, err = c.Get(ctx, "bad", nil)
	if !errors.Is(err, ErrBadResponse) || StatusOf(err) != 0 {
		t.Errorf("malformed 200: %v", err)
	}

	n := s.count()
	_, err = c.Forget(ctx, "moved")
	if !errors.As(err, &e) || e.Status != 307 || s.count() != n+1 {
		t.Errorf("redirect: err %v, %d requests (want the redirect not followed)", err, s.count()-n)
	}
}

func TestNewClientValidation(t *testing.T) {
	for _, tt := range []struct{ url, token string }{
		{"http://127.0.0.1:1", ""},
		{"http://127.0.0.1:1", "   "},
		{"http://127.0.0.1:1", "tok\nInjected: 1"},
		{"127.0.0.1:8080", testToken},
		{"ftp://h", testToken},
		{"http://h?x=" + testToken, testToken},
		{"::" + testToken, testToken},
	} {
		c, err := NewClient(tt.url, tt.token)
		if err == nil || c != nil {
			t.Errorf("NewClient(%q): want an error", tt.url)
			continue
		}
		if strings.Contains(err.Error(), testToken) {
			t.Errorf("error leaks the token: %q", err)
		}
	}
	if _, err := NewClient("https://memgate.example/prefix/", testToken); err != nil {
		t.Errorf("a base URL with a path prefix: %v", err)
	}
}

func TestClientKeepsPathPrefix(t *testing.T) {
	s := newRESTServer(t, map[string]canned{"GET /memgate/v1/whoami": {status: 200, body: `{"id": "a1", "name": "bot"}`}})
	c, _ := NewClient(s.srv.URL+"/memgate/", testToken)
	if p, err := c.WhoAmI(context.Background()); err != nil || p.ID != "a1" {
		t.Errorf("WhoAmI = %+v, %v", p, err)
	}
}
