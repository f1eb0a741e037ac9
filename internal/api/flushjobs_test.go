package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/extract"
	"github.com/memgate/memgate/internal/memory"
)

// hangingModel is an OpenAI-compatible chat-completions endpoint that
// takes each request and never answers: it holds it until the client
// gives up (the request's context ends).
func hangingModel(t *testing.T) (*extract.LLM, *atomic.Int32) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "wrong endpoint", http.StatusNotFound)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "test-model" || len(req.Messages) != 2 {
			http.Error(w, "not a chat completion request", http.StatusBadRequest)
			return
		}
		requests.Add(1)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	// The client's defaults: 30 s per request, 4 retries with backoff,
	// far more than the attempt has.
	l, err := extract.NewLLM(extract.LLMConfig{BaseURL: srv.URL + "/v1", Model: "test-model", APIKey: "sk-test-llm-key"})
	if err != nil {
		t.Fatal(err)
	}
	return l, &requests
}

// logLines returns the harness's log records with message msg.
func logLines(h *harness, msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(h.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// A model that never answers costs each attempt its model budget (half
// the attempt), is reported as a timeout, and on the last attempt the
// pattern fallback commits: the job ends done with the pattern facts.
func TestFlushSlowLLMFallsBackToPatterns(t *testing.T) {
	l, requests := hangingModel(t)
	// A lease of 2s gives each attempt 1.8s, so the model 900ms; the
	// client alone would wait 30s per request, and retry.
	h := newHarnessOpts(t, harnessOptions{jobs: true, extraction: core.ExtractionOptions{LLM: l},
		jobOptions: &core.JobOptions{Workers: 1, MaxAttempts: 2, Lease: 2 * time.Second, Poll: 20 * time.Millisecond,
			BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}})
	id := gatewayUser(h, "u1")
	h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": "chat:1", "messages": []map[string]any{
		{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": "I prefer PostgreSQL for backend work."}}}),
		http.StatusOK, nil)
	j := flushAndWait(t, h, id(map[string]any{"session_id": "chat:1"}))
	var sum core.FlushSummary
	if err := json.Unmarshal(j.Result, &sum); err != nil || j.Status != "done" || j.Attempts != 2 ||
		sum.Extractor != core.GateIngestFailopen || sum.Added != 1 {
		t.Fatalf("job %+v; want done on its 2nd attempt with the pattern fact", j)
	}
	if got := factTexts(facts(t, h, "u1")); !slices.Equal(got, []string{"u1 prefers PostgreSQL for backend work"}) {
		t.Fatalf("facts %q", got)
	}
	// One model request per attempt: the client did not retry past the
	// budget, and the fallback did not ask the model to reconcile.
	if n := requests.Load(); n != 2 {
		t.Errorf("%d model requests, want 2 (one per attempt)", n)
	}
	// The logs say what happened: the first attempt timed out and will be
	// retried; the last fell back, once.
	retry := logLines(h, "job attempt failed; will retry")
	if len(retry) != 1 || !strings.Contains(retry[0]["err"].(string), "timed out") {
		t.Errorf("retry logs %v; want one, saying the model timed out", retry)
	}
	if fb := logLines(h, "llm extraction failed on the job's last attempt; using pattern extraction"); len(fb) != 1 ||
		!strings.Contains(fb[0]["err"].(string), "timed out") {
		t.Errorf("fallback logs %v; want one, saying the model timed out", fb)
	}
	if n := len(logLines(h, "job dead after its last attempt")); n != 0 {
		t.Errorf("%d dead-job logs", n)
	}
}

// Facts of one flush are reconciled in message order, against each other
// too: the latest wins.
func TestFlushReconcilesInMessageOrder(t *testing.T) {
	say := func(t *testing.T, h *harness, id func(map[string]any) map[string]any, session string, texts ...string) core.FlushSummary {
		t.Helper()
		var msgs []map[string]any
		for i, text := range texts {
			msgs = append(msgs, map[string]any{"sender_id": "u1", "role": "user", "timestamp": 1780000000000 + int64(i)*1000, "content": text})
		}
		h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": session, "messages": msgs}), http.StatusOK, nil)
		j := flushAndWait(t, h, id(map[string]any{"session_id": session}))
		var sum core.FlushSummary
		if err := json.Unmarshal(j.Result, &sum); err != nil || j.Status != "done" {
			t.Fatalf("job %+v", j)
		}
		return sum
	}
	byContent := func(t *testing.T, h *harness) map[string]memory.Record {
		t.Helper()
		var page core.ListResult
		h.mustDo("GET", "/v1/records?type=belief&status=active&status=superseded&user_id=u1&limit=500", "op", nil, http.StatusOK, &page)
		out := map[string]memory.Record{}
		for _, r := range page.Records {
			out[r.Content] = r
		}
		return out
	}
	const xcode, intellij, emacs = "u1's editor is Xcode", "u1's editor is IntelliJ", "u1's editor is Emacs"

	t.Run("with a prior fact", func(t *testing.T) {
		h := newHarnessOpts(t, harnessOptions{jobs: true})
		id := gatewayUser(h, "u1")
		if sum := say(t, h, id, "chat:1", "My editor is Xcode."); sum.Added != 1 {
			t.Fatalf("first flush %+v", sum)
		}
		sum := say(t, h, id, "chat:2", "My editor is IntelliJ.", "My editor is Emacs.")
		if sum.Updated != 2 || sum.Refused != 0 || sum.Added != 0 {
			t.Fatalf("second flush %+v; want 2 updates", sum)
		}
		rs := byContent(t, h)
		x, i, e := rs[xcode], rs[intellij], rs[emacs]
		if e.Status != memory.Active || i.Status != memory.Superseded || x.Status != memory.Superseded {
			t.Fatalf("statuses: Xcode %s, IntelliJ %s, Emacs %s; want superseded, superseded, active", x.Status, i.Status, e.Status)
		}
		if x.SupersededBy == nil || *x.SupersededBy != i.ID || i.SupersededBy == nil || *i.SupersededBy != e.ID {
			t.Fatalf("chain: Xcode→%v, IntelliJ→%v; want Xcode→IntelliJ→Emacs", x.SupersededBy, i.SupersededBy)
		}
		if got := factTexts(facts(t, h, "u1")); !slices.Equal(got, []string{emacs}) {
			t.Fatalf("live facts %q", got)
		}
	})
	t.Run("without a prior fact", func(t *testing.T) {
		h := newHarnessOpts(t, harnessOptions{jobs: true})
		id := gatewayUser(h, "u1")
		sum := say(t, h, id, "chat:1", "My editor is IntelliJ.", "My editor is Emacs.")
		if sum.Added != 1 || sum.Updated != 1 {
			t.Fatalf("flush %+v; want 1 added, then 1 update", sum)
		}
		rs := byContent(t, h)
		i, e := rs[intellij], rs[emacs]
		if i.Status != memory.Superseded || i.SupersededBy == nil || *i.SupersededBy != e.ID || e.Status != memory.Active {
			t.Fatalf("IntelliJ %+v, Emacs %+v; want IntelliJ superseded by Emacs", i, e)
		}
		if got := factTexts(facts(t, h, "u1")); !slices.Equal(got, []string{emacs}) {
			t.Fatalf("live facts %q", got)
		}
	})
}

// The model reconciles a flush's facts against each other too: its
// second fact supersedes its first, through the id the flush gives the
// first before it is written.
func TestFlushLLMReconcilesInMessageOrder(t *testing.T) {
	var existingSeen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			ResponseFormat struct {
				JSONSchema struct {
					Name string `json:"name"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var answer any = map[string]any{"facts": []map[string]any{
			{"type": "preference", "content": "u1 prefers PostgreSQL for backend work", "entities": []string{"postgresql"}, "event_time": nil},
			{"type": "preference", "content": "u1 prefers MySQL for backend work", "entities": []string{"mysql"}, "event_time": nil},
		}}
		if req.ResponseFormat.JSONSchema.Name == "reconciliation" {
			var in struct {
				Existing []struct{ ID, Content string }
			}
			_ = json.Unmarshal([]byte(req.Messages[1].Content), &in)
			answer = map[string]any{"action": "ADD", "target_id": nil, "reason": "new"}
			if len(in.Existing) > 0 {
				existingSeen.Add(1)
				answer = map[string]any{"action": "UPDATE", "target_id": in.Existing[0].ID, "reason": "changed preference"}
			}
		}
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{
			{"message": map[string]any{"role": "assistant", "content": string(content)}}}})
	}))
	t.Cleanup(srv.Close)
	l, err := extract.NewLLM(extract.LLMConfig{BaseURL: srv.URL + "/v1", Model: "test-model", MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessOpts(t, harnessOptions{jobs: true, extraction: core.ExtractionOptions{LLM: l}})
	id := gatewayUser(h, "u1")
	h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": "chat:1", "messages": []map[string]any{
		{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": "PostgreSQL for the backend. No, wait: MySQL."}}}),
		http.StatusOK, nil)
	j := flushAndWait(t, h, id(map[string]any{"session_id": "chat:1"}))
	var sum core.FlushSummary
	if err := json.Unmarshal(j.Result, &sum); err != nil || j.Status != "done" || sum.Extractor != "llm" || sum.Added != 1 || sum.Updated != 1 {
		t.Fatalf("job %+v; want the llm's first fact added, its second an update of it", j)
	}
	if got := factTexts(facts(t, h, "u1")); !slices.Equal(got, []string{"u1 prefers MySQL for backend work"}) || existingSeen.Load() != 1 {
		t.Fatalf("live facts %q (%d reconciliations against existing facts)", got, existingSeen.Load())
	}
}
