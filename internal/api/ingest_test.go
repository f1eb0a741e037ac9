package api_test

import (
	"context"
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
	"github.com/memgate/memgate/internal/store"
)

// gatewayUser creates a user and returns a body builder carrying its
// credentials.
func gatewayUser(h *harness, id string) func(map[string]any) map[string]any {
	key := newUser(h, id)
	return func(extra map[string]any) map[string]any {
		m := map[string]any{"user_id": id, "user_key": key}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
}

// flushAndWait flushes a session and waits for its job to end, moving
// the harness clock on so that retries with backoff come due.
func flushAndWait(t *testing.T, h *harness, body map[string]any) core.JobView {
	t.Helper()
	var fl core.FlushResult
	h.mustDo("POST", "/memories/flush", "", body, http.StatusAccepted, &fl)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		j, err := h.svc.WaitJob(ctx, "default", fl.JobID)
		cancel()
		if err == nil {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("flush job %s did not end: %+v", fl.JobID, j)
		}
		h.clock.Advance(10 * time.Minute)
	}
}

// facts lists the live extracted facts of a user.
func facts(t *testing.T, h *harness, user string) []memory.Record {
	t.Helper()
	var out []memory.Record
	for _, typ := range []string{"belief", "preference", "decision"} {
		var page core.ListResult
		h.mustDo("GET", "/v1/records?type="+typ+"&user_id="+user+"&limit=500", "op", nil, http.StatusOK, &page)
		out = append(out, page.Records...)
	}
	return out
}

func factTexts(rs []memory.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Content)
	}
	slices.Sort(out)
	return out
}

func TestFlushPatternExtraction(t *testing.T) {
	h := newHarnessOpts(t, harnessOptions{jobs: true})
	id := gatewayUser(h, "u1")
	var added core.AddResult
	h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": "chat:1", "messages": []map[string]any{
		{"sender_id": "u1", "role": "user", "timestamp": time.Date(2026, 3, 5, 9, 0, 0, 0, time.UTC).UnixMilli(),
			"content": "I prefer PostgreSQL for backend work. My sister visits next Tuesday."},
		{"sender_id": "beaver", "role": "assistant", "timestamp": time.Date(2026, 3, 5, 9, 0, 1, 0, time.UTC).UnixMilli(),
			"content": "Sounds good. How is the weather?"},
	}}), http.StatusOK, &added)

	j := flushAndWait(t, h, id(map[string]any{"session_id": "chat:1"}))
	var sum core.FlushSummary
	if err := json.Unmarshal(j.Result, &sum); err != nil || j.Status != "done" || sum.Extractor != "pattern" || sum.Messages != 2 {
		t.Fatalf("job %+v (%v)", j, err)
	}
	fs := facts(t, h, "u1")
	var pref memory.Record
	for _, f := range fs {
		if f.Type == memory.Preference {
			pref = f
		}
	}
	if pref.Content != "u1 prefers PostgreSQL for backend work" || !slices.Contains(pref.Entities, "technology:postgresql") ||
		!slices.Equal(pref.Source.Evidence, []string{added.MemoryIDs[0]}) || pref.Source.Kind != memory.Inferred ||
		pref.Scope != (memory.Scope{UserID: "u1", AppID: "default", ProjectID: "default"}) {
		t.Fatalf("preference fact %+v", pref)
	}
	var meta map[string]any
	_ = json.Unmarshal(pref.Metadata, &meta)
	if meta["extractor"] != "pattern" || meta["job_id"] != j.ID {
		t.Errorf("fact metadata %s", pref.Metadata)
	}
	// The fact's entities became extracted, provisional nodes, joined by
	// the relation the fact states.
	user, err1 := h.store.GetNode(t.Context(), store.NodeFind{Workspace: "default", Label: "user", Key: "u1"})
	pg, err2 := h.store.GetNode(t.Context(), store.NodeFind{Workspace: "default", Label: "technology", Key: "postgresql"})
	if err1 != nil || err2 != nil || pg.Provenance != memory.ProvExtracted || pg.Status != memory.NodeProvisional {
		t.Fatalf("nodes %+v %+v (%v %v)", user, pg, err1, err2)
	}
	if _, err := h.store.FindLiveEdge(t.Context(), "default", user.ID, pg.ID, "PREFERS"); err != nil {
		t.Errorf("no PREFERS edge from the user to postgresql: %v", err)
	}
	dated := false
	for _, f := range fs {
		_ = json.Unmarshal(f.Metadata, &meta)
		if strings.Contains(f.Content, "2026-03-10") && meta["event_time"] != nil {
			dated = true
		}
	}
	if !dated {
		t.Errorf("next Tuesday was not resolved against the session date: %q", factTexts(fs))
	}

	// One gatekeeper row per message: the assistant's small talk skipped.
	gk, err := h.store.ListGatekeeper(t.Context(), "default", j.ID)
	if err != nil || len(gk) != 2 {
		t.Fatalf("gatekeeper log %+v %v", gk, err)
	}
	decisions := map[string]int{}
	for _, e := range gk {
		decisions[e.Decision]++
	}
	if decisions[core.GateIngestPattern] != 1 || decisions[core.GateSkip] != 1 {
		t.Errorf("gatekeeper decisions %v", decisions)
	}

	// Flushing again extracts nothing twice.
	j2 := flushAndWait(t, h, id(map[string]any{"session_id": "chat:1"}))
	if err := json.Unmarshal(j2.Result, &sum); err != nil || sum.Messages != 0 || len(facts(t, h, "u1")) != len(fs) {
		t.Fatalf("second flush %+v; facts %q", j2, factTexts(facts(t, h, "u1")))
	}
}

// scriptedModel is an OpenAI-compatible chat-completions server whose
// extraction answers are keyed by a word of the transcript and whose
// reconciliation compares the candidate with the existing facts.
type scriptedModel struct {
	srv      *httptest.Server
	fail     atomic.Bool
	requests atomic.Int32
	facts    map[string]string // transcript word -> preference fact
}

func newScriptedModel(t *testing.T) *scriptedModel {
	m := &scriptedModel{facts: map[string]string{
		"PostgreSQL": "u1 prefers PostgreSQL for backend work",
		"MySQL":      "u1 prefers MySQL for backend work",
	}}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.requests.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test-llm-key" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if m.fail.Load() {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
			return
		}
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
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		user := req.Messages[len(req.Messages)-1].Content
		var answer any
		if req.ResponseFormat.JSONSchema.Name == "reconciliation" {
			var in struct {
				Candidate struct{ Content string }
				Existing  []struct{ ID, Content string }
			}
			_ = json.Unmarshal([]byte(user), &in)
			answer = map[string]any{"action": "ADD", "target_id": nil, "reason": "new"}
			for _, e := range in.Existing {
				switch {
				case e.Content == in.Candidate.Content:
					answer = map[string]any{"action": "NOOP", "target_id": e.ID, "reason": "repeat"}
				case strings.HasSuffix(e.Content, "for backend work") && strings.HasSuffix(in.Candidate.Content, "for backend work"):
					answer = map[string]any{"action": "UPDATE", "target_id": e.ID, "reason": "changed preference"}
				default:
					continue
				}
				break
			}
		} else {
			fs := []map[string]any{}
			for word, fact := range m.facts {
				if strings.Contains(user, word) {
					fs = append(fs, map[string]any{"type": "preference", "content": fact,
						"entities": []string{strings.ToLower(word)}, "event_time": nil})
				}
			}
			answer = map[string]any{"facts": fs}
		}
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{
			{"message": map[string]any{"role": "assistant", "content": string(content)}}}})
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *scriptedModel) llm(t *testing.T) *extract.LLM {
	l, err := extract.NewLLM(extract.LLMConfig{BaseURL: m.srv.URL + "/v1", Model: "test-model", APIKey: "sk-test-llm-key",
		MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestFlushLLMExtractionReconciles(t *testing.T) {
	m := newScriptedModel(t)
	h := newHarnessOpts(t, harnessOptions{jobs: true, extraction: core.ExtractionOptions{LLM: m.llm(t)}})
	id := gatewayUser(h, "u1")
	say := func(session string, ts int64, text string) core.FlushSummary {
		t.Helper()
		h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": session, "messages": []map[string]any{
			{"sender_id": "u1", "role": "user", "timestamp": ts, "content": text}}}), http.StatusOK, nil)
		j := flushAndWait(t, h, id(map[string]any{"session_id": session}))
		var sum core.FlushSummary
		if err := json.Unmarshal(j.Result, &sum); err != nil || j.Status != "done" {
			t.Fatalf("job %+v", j)
		}
		return sum
	}

	sum := say("chat:1", 1780000000000, "For backend work I like PostgreSQL best.")
	if sum.Extractor != "llm" || sum.Added != 1 {
		t.Fatalf("first flush %+v", sum)
	}
	first := facts(t, h, "u1")
	if got := factTexts(first); !slices.Equal(got, []string{"u1 prefers PostgreSQL for backend work"}) {
		t.Fatalf("facts %q", got)
	}
	var meta map[string]any
	_ = json.Unmarshal(first[0].Metadata, &meta)
	if meta["prompt_version"] != extract.PromptVersion || meta["extractor"] != "llm" {
		t.Errorf("metadata %s", first[0].Metadata)
	}

	// A repeat is a no-op.
	if sum := say("chat:2", 1780000100000, "Again: PostgreSQL for the backend, please."); sum.Noop != 1 || sum.Added != 0 {
		t.Fatalf("repeat %+v", sum)
	}
	// A changed preference supersedes the old one.
	if sum := say("chat:3", 1780000200000, "Actually I switched: MySQL for backend work now."); sum.Updated != 1 {
		t.Fatalf("change %+v", sum)
	}
	now := facts(t, h, "u1")
	if got := factTexts(now); !slices.Equal(got, []string{"u1 prefers MySQL for backend work"}) {
		t.Fatalf("live facts after the change %q", got)
	}
	var old memory.Record
	h.mustDo("GET", "/v1/records/"+first[0].ID, "op", nil, http.StatusOK, &old)
	if old.Status != memory.Superseded || old.SupersededBy == nil || *old.SupersededBy != now[0].ID {
		t.Fatalf("old preference %+v", old)
	}
	if strings.Contains(h.logs.String(), "sk-test-llm-key") {
		t.Fatal("the LLM API key reached the logs")
	}
}

func TestFlushLLMFailsOpen(t *testing.T) {
	m := newScriptedModel(t)
	m.fail.Store(true)
	h := newHarnessOpts(t, harnessOptions{jobs: true, extraction: core.ExtractionOptions{LLM: m.llm(t)}})
	id := gatewayUser(h, "u1")
	h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": "chat:1", "messages": []map[string]any{
		{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": "I prefer PostgreSQL for backend work."}}}),
		http.StatusOK, nil)
	j := flushAndWait(t, h, id(map[string]any{"session_id": "chat:1"}))
	var sum core.FlushSummary
	if err := json.Unmarshal(j.Result, &sum); err != nil || j.Status != "done" || sum.Extractor != core.GateIngestFailopen || sum.Added != 1 {
		t.Fatalf("job %+v", j)
	}
	// Every attempt asked the model once; the last fell back to patterns.
	if n := m.requests.Load(); n != int32(j.Attempts) || j.Attempts != 5 {
		t.Fatalf("%d model requests over %d attempts; want one per attempt, 5 attempts", n, j.Attempts)
	}
	if got := factTexts(facts(t, h, "u1")); !slices.Equal(got, []string{"u1 prefers PostgreSQL for backend work"}) {
		t.Fatalf("facts %q", got)
	}
	gk, err := h.store.ListGatekeeper(t.Context(), "default", j.ID)
	if err != nil || len(gk) != 1 || gk[0].Decision != core.GateIngestFailopen {
		t.Fatalf("gatekeeper %+v %v", gk, err)
	}
	if !strings.Contains(h.logs.String(), core.GateIngestFailopen) {
		t.Error("ingest_failopen was not logged")
	}
}
