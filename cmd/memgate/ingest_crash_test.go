//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// blockingModel is an OpenAI-compatible chat-completions endpoint whose
// extraction requests hang, after announcing themselves, until released;
// once released it answers with one preference fact per request.
type blockingModel struct {
	srv      *httptest.Server
	arrived  chan struct{}
	release  chan struct{}
	released atomic.Bool
	requests atomic.Int32
}

func newBlockingModel(t *testing.T) *blockingModel {
	m := &blockingModel{arrived: make(chan struct{}, 16), release: make(chan struct{})}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.requests.Add(1)
		var req struct {
			ResponseFormat struct {
				JSONSchema struct {
					Name string `json:"name"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if !m.released.Load() {
			select {
			case m.arrived <- struct{}{}:
			default:
			}
			select {
			case <-m.release:
			case <-r.Context().Done(): // the server was killed
				return
			}
		}
		answer := `{"facts":[{"type":"preference","content":"u1 prefers PostgreSQL for backend work","entities":["postgresql"],"event_time":null}]}`
		if req.ResponseFormat.JSONSchema.Name == "reconciliation" {
			answer = `{"action":"ADD","target_id":null,"reason":"new"}`
		}
		body, _ := json.Marshal(map[string]any{"choices": []map[string]any{{"message": map[string]any{"role": "assistant", "content": answer}}}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(func() {
		if !m.released.Load() {
			m.released.Store(true)
			close(m.release)
		}
		m.srv.Close()
	})
	return m
}

// TestFlushSurvivesKill kills the server while a flush job is in flight
// (its model call hanging), restarts it, and checks that the job resumes
// and that every turn and every fact exists exactly once — also after the
// client re-sends the add whose answer it never saw.
func TestFlushSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	model := newBlockingModel(t)
	dataDir := t.TempDir()
	flags := []string{"--llm-url", model.srv.URL + "/v1", "--llm-model", "test-model", "--job-lease", "2s"}
	srv := startServer(t, dataDir, flags...)
	toks := srv.Tokens()
	if len(toks) != 1 {
		t.Fatalf("want one operator token, got %d", len(toks))
	}
	op := newClient(t, srv.base, toks[0], 2)
	status, body, err := op.do("POST", "/users", map[string]any{"user_id": "u1"})
	if err != nil || status != http.StatusCreated {
		t.Fatalf("create user: %d %s %v", status, body, err)
	}
	var user struct {
		UserKey string `json:"user_key"`
	}
	if err := json.Unmarshal(body, &user); err != nil {
		t.Fatal(err)
	}
	gw := newClient(t, srv.base, "", 2)
	add := map[string]any{"user_id": "u1", "user_key": user.UserKey, "session_id": "chat:c1", "messages": []map[string]any{
		{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": "I prefer PostgreSQL for backend work."},
		{"sender_id": "beaver", "role": "assistant", "timestamp": 1780000001000, "content": "Noted: PostgreSQL it is."},
	}}
	status, body, err = gw.do("POST", "/memories/add", add)
	if err != nil || status != http.StatusOK {
		t.Fatalf("add: %d %s %v", status, body, err)
	}
	status, body, err = gw.do("POST", "/memories/flush", map[string]any{"user_id": "u1", "user_key": user.UserKey, "session_id": "chat:c1"})
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("flush: %d %s %v", status, body, err)
	}
	var fl struct {
		JobID string `json:"job_id"`
	}
	if err := json.Unmarshal(body, &fl); err != nil || fl.JobID == "" {
		t.Fatalf("flush answer %s", body)
	}

	// The job is in flight: its model call hangs. Kill the server.
	select {
	case <-model.arrived:
	case <-time.After(startTimeout):
		t.Fatalf("the flush job never called the model; output:\n%s", srv.Output())
	}
	srv.signal(t, syscall.SIGKILL)
	srv.waitExit(t, exitTimeout)

	// Restart with the model answering. The job's lease (2s) runs out and
	// the new process takes it over.
	model.released.Store(true)
	close(model.release)
	srv2 := startServer(t, dataDir, flags...)
	op.base, gw.base = srv2.base, srv2.base
	// The client never saw its add's answer and sends it again.
	status, body, err = gw.do("POST", "/memories/add", add)
	var again struct {
		Added, Duplicates int
	}
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &again) != nil || again.Added != 0 || again.Duplicates != 2 {
		t.Fatalf("re-sent add: %d %s %v", status, body, err)
	}
	var job struct {
		Status   string          `json:"status"`
		Attempts int             `json:"attempts"`
		Result   json.RawMessage `json:"result"`
	}
	op.getJSON(t, "/v1/jobs/"+fl.JobID+"?wait=45s", http.StatusOK, &job)
	if job.Status != "done" || job.Attempts != 2 {
		t.Fatalf("job after restart: %+v; output:\n%s", job, srv2.Output())
	}

	// Exactly the two turns, and the one fact, once each.
	type page struct {
		Records []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"records"`
	}
	var eps, prefs page
	op.getJSON(t, "/v1/records?type=episode&user_id=u1&limit=100", http.StatusOK, &eps)
	op.getJSON(t, "/v1/records?type=preference&user_id=u1&limit=100&status=active,superseded", http.StatusOK, &prefs)
	var got []string
	for _, r := range eps.Records {
		got = append(got, r.Content)
	}
	slices.Sort(got)
	if want := []string{"beaver: Noted: PostgreSQL it is.", "u1: I prefer PostgreSQL for backend work."}; !slices.Equal(got, want) {
		t.Fatalf("episodes %q, want %q", got, want)
	}
	if len(prefs.Records) != 1 || prefs.Records[0].Content != "u1 prefers PostgreSQL for backend work" {
		t.Fatalf("preferences %+v, want the one fact once", prefs.Records)
	}
	if !strings.Contains(string(job.Result), `"added":1`) {
		t.Errorf("job result %s", job.Result)
	}
	srv2.stop(t)
}
