package sdk

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Gateway paths.
const (
	pathSearch = "/memories/search"
	pathAdd    = "/memories/add"
	pathFlush  = "/memories/flush"
	pathJob    = "/memories/jobs/get"
	pathUsers  = "/users"
)

// Fault modes of fakeGateway; "" (or modeOK) serves the contract.
const (
	modeOK         = "ok"
	modeTimeout    = "timeout"     // block until the client gives up
	mode400        = "400"         // invalid_argument
	mode401        = "401"         // unauthenticated
	mode429        = "429"         // rate_limited, Retry-After: 3
	mode500        = "500"         // internal
	mode503        = "503"         // unavailable, Retry-After: 1
	modeMalformed  = "malformed"   // 200 with a body that is not JSON
	modeNoResults  = "no_results"  // 200 {} (no results, no job_id)
	modeEchoSecret = "echo_secret" // 401 whose message and details echo the user key
)

// fakeGateway is an in-memory server speaking the Memory Gateway
// contract (SPEC §6), with per-path fault injection and request counts.
// In ok mode it stores added turns and searches them, so the conformance
// checks that run against a real server also run against it.
type fakeGateway struct {
	srv           *httptest.Server
	userID        string
	userKey       string
	operatorToken string
	done          chan struct{}

	mu       sync.Mutex
	faults   map[string]string
	hits     map[string]int
	bodies   map[string][]map[string]any
	users    map[string]string    // user id -> key
	sessions map[string][]Message // user id + "\x00" + session -> turns
	seed     []SearchResult       // extra results returned by every ok search
	jobs     map[string]Job
}

func newFakeGateway(t *testing.T, userID, userKey string) *fakeGateway {
	t.Helper()
	f := &fakeGateway{
		userID: userID, userKey: userKey, operatorToken: "op_fake_token",
		done:   make(chan struct{}),
		faults: map[string]string{}, hits: map[string]int{}, bodies: map[string][]map[string]any{},
		users: map[string]string{userID: userKey}, sessions: map[string][]Message{}, jobs: map[string]Job{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	// Unblock timeout handlers before Close waits for them.
	t.Cleanup(func() { close(f.done); f.srv.Close() })
	return f
}

func (f *fakeGateway) URL() string { return f.srv.URL }

// fault sets the mode of one path.
func (f *fakeGateway) fault(path, mode string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[path] = mode
}

// count returns how many requests reached path.
func (f *fakeGateway) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

// requests returns the decoded bodies sent to path.
func (f *fakeGateway) requests(path string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.bodies[path])
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, msg string, details map[string]any) {
	body := map[string]any{"code": code, "message": msg}
	if details != nil {
		body["details"] = details
	}
	writeJSONBody(w, status, map[string]any{"error": body})
}

func (f *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.hits[r.URL.Path]++
	f.bodies[r.URL.Path] = append(f.bodies[r.URL.Path], body)
	mode := f.faults[r.URL.Path]
	f.mu.Unlock()

	switch mode {
	case "", modeOK:
	case modeTimeout:
		select {
		case <-r.Context().Done():
		case <-f.done:
		}
		return
	case mode400:
		writeErr(w, 400, "invalid_argument", "top_k: must be between 1 and 100", map[string]any{"field": "top_k"})
		return
	case mode401:
		writeErr(w, 401, "unauthenticated", "unknown user or wrong key", nil)
		return
	case mode429:
		w.Header().Set("Retry-After", "3")
		writeErr(w, 429, "rate_limited", "slow down", nil)
		return
	case mode500:
		writeErr(w, 500, "internal", "internal error", nil)
		return
	case mode503:
		w.Header().Set("Retry-After", "1")
		writeErr(w, 503, "unavailable", "database unavailable", nil)
		return
	case modeMalformed:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"results": [ {"id": "x", `))
		return
	case modeNoResults:
		writeJSONBody(w, 200, map[string]any{})
		return
	case modeEchoSecret:
		key, _ := body["user_key"].(string)
		writeErr(w, 401, "unauthenticated", "bad key "+key, map[string]any{"user_key": key, "nested": []any{key}})
		return
	default:
		panic("unknown fault mode " + mode)
	}

	if r.URL.Path == pathUsers {
		f.createUser(w, r, body)
		return
	}
	if r.Method != http.MethodPost {
		writeErr(w, 405, "invalid_argument", "method not allowed", nil)
		return
	}
	uid, _ := body["user_id"].(string)
	key, _ := body["user_key"].(string)
	f.mu.Lock()
	want, known := f.users[uid]
	f.mu.Unlock()
	if !known || key != want {
		writeErr(w, 401, "unauthenticated", "unknown user or wrong key", nil)
		return
	}
	switch r.URL.Path {
	case pathSearch:
		f.search(w, uid, body)
	case pathAdd:
		f.add(w, uid, body)
	case pathFlush:
		f.flush(w, body)
	case pathJob:
		f.job(w, body)
	default:
		writeErr(w, 404, "not_found", "no such route", nil)
	}
}

func (f *fakeGateway) createUser(w http.ResponseWriter, r *http.Request, body map[string]any) {
	if r.Header.Get("Authorization") != "Bearer "+f.operatorToken {
		writeErr(w, 401, "unauthenticated", "missing, invalid or revoked token", nil)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id, _ := body["user_id"].(string)
	if id == "" {
		id = fmt.Sprintf("user-%d", len(f.users)+1)
	}
	key := fmt.Sprintf("uk_fake_%d", len(f.users)+1)
	f.users[id] = key
	writeJSONBody(w, 201, map[string]any{"user_id": id, "user_key": key})
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	})
}

func (f *fakeGateway) search(w http.ResponseWriter, uid string, body map[string]any) {
	query, _ := body["query"].(string)
	conv, _ := body["conversation_id"].(string)
	var scopes []string
	if list, ok := body["scope"].([]any); ok {
		for _, s := range list {
			if str, ok := s.(string); ok {
				scopes = append(scopes, str)
			}
		}
	}
	topK := 8
	if k, ok := body["top_k"].(float64); ok {
		topK = int(k)
	}
	if len(scopes) == 0 || topK < 1 || topK > 100 {
		writeErr(w, 400, "invalid_argument", "scope and top_k are required", nil)
		return
	}
	qw := words(query)
	results := []SearchResult{}
	f.mu.Lock()
	for k, turns := range f.sessions {
		owner, session, _ := strings.Cut(k, "\x00")
		if owner != uid {
			continue
		}
		scope := ""
		switch {
		case session == SessionID(conv) && slices.Contains(scopes, ScopeCurrentChat):
			scope = ScopeCurrentChat
		case slices.Contains(scopes, ScopeAllUserMemory):
			scope = ScopeAllUserMemory
		default:
			continue
		}
		for i, m := range turns {
			hit := 0
			for _, q := range qw {
				if slices.Contains(words(m.Content), q) {
					hit++
				}
			}
			if hit == 0 {
				continue
			}
			results = append(results, SearchResult{
				ID: fmt.Sprintf("%s#%d", session, i), SessionID: session, Text: m.Role + ": " + m.Content,
				Score: float64(hit) / float64(len(qw)), SourceScope: scope,
				Raw: json.RawMessage(`{"fake_raw_marker": "RAW_PAYLOAD_SHOULD_NOT_LEAK"}`),
			})
		}
	}
	results = append(results, f.seed...)
	f.mu.Unlock()
	slices.SortStableFunc(results, func(a, b SearchResult) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	writeJSONBody(w, 200, SearchResponse{Results: results})
}

func (f *fakeGateway) add(w http.ResponseWriter, uid string, body map[string]any) {
	session, _ := body["session_id"].(string)
	raw, _ := json.Marshal(body["messages"])
	var msgs []Message
	if session == "" || json.Unmarshal(raw, &msgs) != nil || len(msgs) == 0 {
		writeErr(w, 400, "invalid_argument", "session_id and messages are required", nil)
		return
	}
	for _, m := range msgs {
		if m.Timestamp <= 0 || (m.Role != RoleUser && m.Role != RoleAssistant) || m.Content == "" {
			writeErr(w, 400, "invalid_argument", "messages: invalid message", nil)
			return
		}
	}
	f.mu.Lock()
	f.sessions[uid+"\x00"+session] = append(f.sessions[uid+"\x00"+session], msgs...)
	f.mu.Unlock()
	writeJSONBody(w, 200, map[string]any{"added": len(msgs)})
}

func (f *fakeGateway) flush(w http.ResponseWriter, body map[string]any) {
	if s, _ := body["session_id"].(string); s == "" {
		writeErr(w, 400, "invalid_argument", "session_id is required", nil)
		return
	}
	f.mu.Lock()
	id := fmt.Sprintf("job-%d", len(f.jobs)+1)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.jobs[id] = Job{ID: id, Status: "queued", CreatedAt: now, UpdatedAt: now}
	f.mu.Unlock()
	writeJSONBody(w, 202, FlushResponse{JobID: id, Status: "queued"})
}

func (f *fakeGateway) job(w http.ResponseWriter, body map[string]any) {
	id, _ := body["job_id"].(string)
	f.mu.Lock()
	j, ok := f.jobs[id]
	f.mu.Unlock()
	if !ok {
		writeErr(w, 404, "not_found", "no such job", nil)
		return
	}
	writeJSONBody(w, 200, map[string]any{"job": map[string]any{
		"id": j.ID, "status": j.Status, "attempts": j.Attempts, "last_error": nil,
		"created_at": j.CreatedAt, "updated_at": j.UpdatedAt,
	}})
}

// eventLog is a concurrency-safe event sink.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) sink(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func (l *eventLog) names() []string {
	var out []string
	for _, e := range l.all() {
		out = append(out, e.Name)
	}
	return out
}
