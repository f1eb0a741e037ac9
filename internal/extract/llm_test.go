package extract

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const testKey = "sk-test-SECRET-0123456789"

// chatServer is a scripted chat-completions endpoint: the n-th request
// (from 0) is answered by answer(n, w, r). It records the request bodies.
type chatServer struct {
	*httptest.Server
	attempts atomic.Int32
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
}

func newChatServer(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *chatServer {
	t.Helper()
	s := &chatServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "wrong endpoint "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		answer(int(s.attempts.Add(1))-1, w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// completion writes a chat completion whose message content is content.
func completion(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
	})
}

// newTestLLM builds a client for s with fast backoff; waits are recorded
// instead of slept.
func newTestLLM(t *testing.T, s *chatServer, mod func(*LLMConfig)) (*LLM, *[]time.Duration) {
	t.Helper()
	cfg := LLMConfig{BaseURL: s.URL + "/v1/", Model: "gpt-test", APIKey: testKey, BackoffBase: time.Millisecond, MaxRetries: 3}
	if mod != nil {
		mod(&cfg)
	}
	l, err := NewLLM(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	l.sleep = func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	}
	return l, &waits
}

var testTurns = []Turn{
	{MessageID: "m1", SessionID: "chat:c42", SenderID: "u1", Role: "user", Time: session, SessionDate: session, Text: "I prefer Postgres for backend work. My flight is next Tuesday."},
	{MessageID: "m2", SessionID: "chat:c42", SenderID: "beaver", Role: "assistant", Time: session.Add(time.Second), SessionDate: session, Text: "Noted!"},
}

func TestExtract(t *testing.T) {
	s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		completion(w, `{"facts": [
			{"type": "preference", "content": "u1 prefers PostgreSQL for backend work", "entities": ["Postgres", " backend "], "event_time": null},
			{"type": "belief", "content": "u1 has a flight on 2024-03-12", "entities": [], "event_time": "2024-03-12T00:00:00Z"},
			{"type": "decision", "content": "u1 chose a date", "entities": [], "event_time": "next week"},
			{"type": "opinion", "content": "u1 is nice", "entities": [], "event_time": null},
			{"type": "belief", "content": "   ", "entities": [], "event_time": null},
			{"type": "belief", "content": "`+strings.Repeat("x", 1001)+`", "entities": [], "event_time": null}
		]}`)
	})
	l, _ := newTestLLM(t, s, nil)
	facts, err := l.Extract(context.Background(), testTurns)
	if err != nil {
		t.Fatal(err)
	}
	if got := contents(facts); !slices.Equal(got, []string{
		"preference: u1 prefers PostgreSQL for backend work",
		"belief: u1 has a flight on 2024-03-12",
		"decision: u1 chose a date",
	}) {
		t.Fatalf("facts %q", got)
	}
	p := facts[0]
	if !slices.Equal(p.Entities, []string{"backend", "postgresql"}) || !slices.Equal(p.Tags, []string{TagTechnology}) ||
		p.Pattern != "" || p.Confidence != ConfidenceLLM || !slices.Equal(p.Evidence, []string{"m1", "m2"}) || p.EventTime != nil {
		t.Errorf("fact 0: %+v", p)
	}
	if et := facts[1].EventTime; et == nil || !et.Equal(time.Date(2024, 3, 12, 0, 0, 0, 0, time.UTC)) || !slices.Equal(facts[1].Tags, []string{TagTemporal}) {
		t.Errorf("fact 1: %+v", facts[1])
	}
	if facts[2].EventTime != nil {
		t.Errorf("unreadable event_time kept: %v", facts[2].EventTime)
	}

	// The request.
	if len(s.bodies) != 1 {
		t.Fatalf("%d requests", len(s.bodies))
	}
	if got := s.headers[0].Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization %q", got)
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role, Content string
		} `json:"messages"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string          `json:"name"`
				Strict bool            `json:"strict"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(s.bodies[0], &req); err != nil {
		t.Fatal(err)
	}
	if req.Model != "gpt-test" || len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user" {
		t.Fatalf("request %s", s.bodies[0])
	}
	if !strings.Contains(req.Messages[0].Content, "Prompt version: "+PromptVersion) {
		t.Errorf("system prompt lacks the version: %q", req.Messages[0].Content)
	}
	for _, want := range []string{"Session date: 2024-03-06 (Wednesday)", "u1 (user)] I prefer Postgres", "beaver (assistant)] Noted!"} {
		if !strings.Contains(req.Messages[1].Content, want) {
			t.Errorf("user message lacks %q: %q", want, req.Messages[1].Content)
		}
	}
	var schema map[string]any
	if req.ResponseFormat.Type != "json_schema" || req.ResponseFormat.JSONSchema.Name == "" || !req.ResponseFormat.JSONSchema.Strict ||
		json.Unmarshal(req.ResponseFormat.JSONSchema.Schema, &schema) != nil || schema["type"] != "object" {
		t.Errorf("response_format %+v", req.ResponseFormat)
	}

	// No turns, no request.
	if facts, err := l.Extract(context.Background(), nil); facts != nil || err != nil || s.attempts.Load() != 1 {
		t.Errorf("empty: %v %v, %d requests", facts, err, s.attempts.Load())
	}
}

func TestExtractMalformed(t *testing.T) {
	for _, content := range []string{
		`{"facts": [ {"type": "belief", `,
		`Sure! Here are the facts: u1 likes Go.`,
		`{"facts": "none"}`,
		`{"facts": []} {"facts": []}`,
		``,
	} {
		s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) { completion(w, content) })
		l, _ := newTestLLM(t, s, nil)
		_, err := l.Extract(context.Background(), testTurns)
		if !errors.Is(err, ErrMalformed) || errors.Is(err, ErrUnavailable) {
			t.Errorf("content %q: error %v, want ErrMalformed", content, err)
		}
		if s.attempts.Load() != 1 {
			t.Errorf("content %q: %d attempts, want no retry", content, s.attempts.Load())
		}
	}
	// A fenced answer is accepted.
	s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		completion(w, "```json\n{\"facts\": [{\"type\": \"belief\", \"content\": \"u1 lives in Oslo\", \"entities\": [\"oslo\"], \"event_time\": null}]}\n```")
	})
	l, _ := newTestLLM(t, s, nil)
	if facts, err := l.Extract(context.Background(), testTurns); err != nil || len(facts) != 1 {
		t.Errorf("fenced: %v %v", facts, err)
	}
	// A body that is not a chat completion.
	s = newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) { io.WriteString(w, "<html>hi</html>") })
	l, _ = newTestLLM(t, s, nil)
	if _, err := l.Extract(context.Background(), testTurns); !errors.Is(err, ErrMalformed) {
		t.Errorf("html body: %v", err)
	}
}

func TestRetryAfterThenSuccess(t *testing.T) {
	s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 2 {
			w.Header().Set("Retry-After", "3")
			http.Error(w, `{"error": {"message": "rate limited"}}`, http.StatusTooManyRequests)
			return
		}
		completion(w, `{"facts": []}`)
	})
	l, waits := newTestLLM(t, s, nil)
	facts, err := l.Extract(context.Background(), testTurns)
	if err != nil || len(facts) != 0 {
		t.Fatalf("%v %v", facts, err)
	}
	if got := s.attempts.Load(); got != 3 {
		t.Errorf("%d attempts, want 3", got)
	}
	if !slices.Equal(*waits, []time.Duration{3 * time.Second, 3 * time.Second}) {
		t.Errorf("waits %v, want Retry-After honoured", *waits)
	}
	// Retry-After is capped by MaxBackoff.
	s = newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 0 {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		completion(w, `{"facts": []}`)
	})
	l, waits = newTestLLM(t, s, func(c *LLMConfig) { c.MaxBackoff = 2 * time.Second })
	if _, err := l.Extract(context.Background(), testTurns); err != nil || !slices.Equal(*waits, []time.Duration{2 * time.Second}) {
		t.Errorf("capped: %v, waits %v", err, *waits)
	}
}

func TestPersistent500(t *testing.T) {
	s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error": {"message": "upstream exploded, key `+testKey+`"}}`, http.StatusInternalServerError)
	})
	l, waits := newTestLLM(t, s, func(c *LLMConfig) { c.MaxRetries = 3; c.BackoffBase = 100 * time.Millisecond })
	_, err := l.Extract(context.Background(), testTurns)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(err.Error(), "upstream exploded") {
		t.Errorf("error %v does not carry the last answer", err)
	}
	if got := s.attempts.Load(); got != 4 {
		t.Errorf("%d attempts, want MaxRetries+1 = 4", got)
	}
	// Exponential backoff with jitter: attempt k waits in [base·2^k/2, base·2^k].
	if len(*waits) != 3 {
		t.Fatalf("waits %v", *waits)
	}
	for k, d := range *waits {
		hi := 100 * time.Millisecond << k
		if d < hi/2 || d > hi {
			t.Errorf("wait %d = %v, want in [%v, %v]", k, d, hi/2, hi)
		}
	}
	assertNoSecret(t, err)

	// A 4xx other than 429 is not retried and is not ErrUnavailable.
	s = newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error": {"message": "invalid api key `+testKey+`"}}`, http.StatusUnauthorized)
	})
	l, _ = newTestLLM(t, s, nil)
	_, err = l.Extract(context.Background(), testTurns)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || errors.Is(err, ErrUnavailable) || s.attempts.Load() != 1 {
		t.Errorf("401: %v after %d attempts", err, s.attempts.Load())
	}
	assertNoSecret(t, err)
}

func TestTimeout(t *testing.T) {
	s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // block until the client gives up
	})
	l, waits := newTestLLM(t, s, func(c *LLMConfig) { c.Timeout = 20 * time.Millisecond; c.MaxRetries = 1 })
	_, err := l.Extract(context.Background(), testTurns)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("error %v, want ErrUnavailable after timeouts", err)
	}
	if got := s.attempts.Load(); got != 2 || len(*waits) != 1 {
		t.Errorf("%d attempts, waits %v", got, *waits)
	}
	assertNoSecret(t, err)

	// The caller's own deadline is not ErrUnavailable and stops retries.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	l, _ = newTestLLM(t, s, func(c *LLMConfig) { c.Timeout = time.Minute })
	_, err = l.Extract(ctx, testTurns)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
		t.Errorf("caller deadline: %v", err)
	}
}

// Retries fit the caller's deadline: a backoff that would outlast it is
// not waited out; the client gives up at once, saying why.
func TestRetriesFitDeadline(t *testing.T) {
	s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7200")
		http.Error(w, `{"error": {"message": "overloaded"}}`, http.StatusServiceUnavailable)
	})
	l, waits := newTestLLM(t, s, func(c *LLMConfig) { c.MaxRetries = 4; c.MaxBackoff = 3 * time.Hour })
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := l.Extract(ctx, testTurns)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "deadline leaves no time to retry") {
		t.Fatalf("error %v, want ErrUnavailable saying the deadline leaves no time", err)
	}
	if got := s.attempts.Load(); got != 1 || len(*waits) != 0 {
		t.Errorf("%d attempts, waits %v; want 1 attempt and no wait", got, *waits)
	}
	// Without a deadline the same answer is retried as configured.
	l, waits = newTestLLM(t, s, func(c *LLMConfig) { c.MaxRetries = 2; c.MaxBackoff = 3 * time.Hour })
	if _, err := l.Extract(context.Background(), testTurns); !errors.Is(err, ErrUnavailable) || len(*waits) != 2 {
		t.Errorf("no deadline: %v, waits %v", err, *waits)
	}
}

func TestUnreachable(t *testing.T) {
	s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) {})
	url := s.URL
	s.Close()
	l, err := NewLLM(LLMConfig{BaseURL: url, Model: "m", APIKey: testKey, MaxRetries: 2, BackoffBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Extract(context.Background(), testTurns)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("error %v", err)
	}
	assertNoSecret(t, err)
}

func assertNoSecret(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	for _, secret := range []string{testKey, "SECRET", "I prefer Postgres"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q contains %q", err, secret)
		}
	}
}

func TestNewLLMValidation(t *testing.T) {
	for _, c := range []struct {
		cfg  LLMConfig
		want string
	}{
		{LLMConfig{Model: "m"}, "BaseURL is empty"},
		{LLMConfig{BaseURL: "ftp://h/v1", Model: "m"}, "http"},
		{LLMConfig{BaseURL: "localhost:8080", Model: "m"}, "http"},
		{LLMConfig{BaseURL: "http:///v1", Model: "m"}, "no host"},
		{LLMConfig{BaseURL: "http://h/v1?x=1", Model: "m"}, "query"},
		{LLMConfig{BaseURL: "http://h/v1"}, "Model"},
		{LLMConfig{BaseURL: "http://h/v1", Model: "m", Timeout: -1}, "negative"},
	} {
		if _, err := NewLLM(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	l, err := NewLLM(LLMConfig{BaseURL: "https://api.example.com/v1/", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if l.endpoint != "https://api.example.com/v1/chat/completions" || l.cfg.Timeout != DefaultTimeout ||
		l.cfg.MaxRetries != DefaultMaxRetries || l.cfg.BackoffBase != DefaultBackoffBase || l.cfg.MaxBackoff != DefaultMaxBackoff {
		t.Errorf("defaults: %s %+v", l.endpoint, l.cfg)
	}
	if l, _ := NewLLM(LLMConfig{BaseURL: "http://h", Model: "m", MaxRetries: -1}); l.cfg.MaxRetries != 0 {
		t.Errorf("MaxRetries -1 → %d", l.cfg.MaxRetries)
	}
}

func TestReconcileLLM(t *testing.T) {
	existing := []Existing{
		{ID: "r1", Type: TypePreference, Content: "u1 prefers MySQL for backend work", Entities: []string{"mysql"}},
		{ID: "r2", Type: TypePreference, Content: "u1 uses Redis", Entities: []string{"redis"}},
	}
	cand := Fact{Type: TypePreference, Content: "u1 prefers PostgreSQL for backend work", Entities: []string{"postgresql"}}
	for _, c := range []struct {
		answer string
		want   Reconciliation
		err    error
	}{
		{`{"action": "UPDATE", "target_id": "r1", "reason": "changed database preference"}`, Reconciliation{ActionUpdate, "r1", "changed database preference"}, nil},
		{`{"action": "ADD", "target_id": null, "reason": "new"}`, Reconciliation{ActionAdd, "", "new"}, nil},
		{`{"action": "ADD", "target_id": "r1", "reason": "new"}`, Reconciliation{ActionAdd, "", "new"}, nil},
		{`{"action": "noop", "target_id": "r2", "reason": "same"}`, Reconciliation{ActionNoop, "r2", "same"}, nil},
		{`{"action": "INVALIDATE", "target_id": "r2", "reason": "stopped"}`, Reconciliation{ActionInvalidate, "r2", "stopped"}, nil},
		{`{"action": "UPDATE", "target_id": "r9", "reason": "?"}`, Reconciliation{}, ErrMalformed},
		{`{"action": "NOOP", "target_id": null, "reason": "?"}`, Reconciliation{}, ErrMalformed},
		{`{"action": "MERGE", "target_id": "r1", "reason": "?"}`, Reconciliation{}, ErrMalformed},
		{`UPDATE r1`, Reconciliation{}, ErrMalformed},
	} {
		s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) { completion(w, c.answer) })
		l, _ := newTestLLM(t, s, nil)
		got, err := l.Reconcile(context.Background(), cand, existing)
		if !errors.Is(err, c.err) || (c.err != nil) != (err != nil) || got != c.want {
			t.Errorf("answer %s: got %+v, %v; want %+v, %v", c.answer, got, err, c.want, c.err)
		}
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.Unmarshal(s.bodies[0], &req); err != nil || len(req.Messages) != 2 ||
			!strings.Contains(req.Messages[0].Content, PromptVersion) ||
			!strings.Contains(req.Messages[1].Content, `"id": "r1"`) || !strings.Contains(req.Messages[1].Content, cand.Content) {
			t.Errorf("request %s", s.bodies[0])
		}
	}
	// Nothing to reconcile against: ADD without a request.
	s := newChatServer(t, func(n int, w http.ResponseWriter, r *http.Request) { t.Error("unexpected request") })
	l, _ := newTestLLM(t, s, nil)
	if got, err := l.Reconcile(context.Background(), cand, nil); err != nil || got.Action != ActionAdd {
		t.Errorf("no existing: %+v %v", got, err)
	}
}
