package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

// TestForgetSubject writes a subject's words through every path that can
// hold them — gateway messages and their episodes, extracted facts, an
// agent's record naming the subject, a graph edge — then forgets the
// subject and looks for the words on every read path and in the raw
// bytes of the database files, write-ahead log included.
func TestForgetSubject(t *testing.T) {
	h := newHarnessOpts(t, harnessOptions{jobs: true})
	id := gatewayUser(h, "alice")
	const secret = "zanzibarquokka"
	h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": "chat:1", "messages": []map[string]any{
		{"sender_id": "alice", "role": "user", "timestamp": 1780000000000, "content": "I prefer PostgreSQL. My cat is called " + secret + "."},
		{"sender_id": "bot", "role": "assistant", "timestamp": 1780000001000, "content": "Noted, " + secret + " is a fine name."},
	}}), http.StatusOK, nil)
	if j := flushAndWait(t, h, id(map[string]any{"session_id": "chat:1"})); j.Status != "done" {
		t.Fatalf("flush %+v", j)
	}
	about := h.write("std", map[string]any{"type": "belief", "content": "alice told support about " + secret + " twice",
		"entities": []string{"user:alice", "person:support"}}, http.StatusCreated)
	kept := h.write("std", map[string]any{"type": "belief", "content": "carol keeps the " + secret + "-free notes",
		"entities": []string{"person:carol"}}, http.StatusCreated)
	// The words reach the main database file before the erasure, so the
	// test proves they are removed, not merely never written there.
	if err := h.store.Checkpoint(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !fileHas(t, h.dbPath, secret+" is a fine") {
		t.Fatal("test is broken: the words never reached the database file")
	}

	var rep core.ForgetReport
	h.mustDo("POST", "/v1/graph/forget_subject", "op", map[string]any{"subject": "user:alice"}, http.StatusOK, &rep)
	// Two episodes, the extracted facts (at least the preference), the
	// agent's record; both messages; the user's node and its PREFERS edge,
	// and the person:support node only the agent's record named.
	if rep.Records < 4 || rep.Messages != 2 || rep.Nodes < 2 || rep.Edges < 1 {
		t.Fatalf("report %+v", rep)
	}
	h.wantError("GET", "/v1/graph/nodes/person:support", "op", nil, http.StatusNotFound, "not_found")
	h.wantError("POST", "/v1/graph/forget_subject", "std", map[string]any{"subject": "user:alice"}, http.StatusForbidden, "permission_denied")
	h.wantError("POST", "/v1/graph/forget_subject", "op", map[string]any{"subject": "alice"}, http.StatusBadRequest, "invalid_argument")

	// Every read path.
	_, _, raw := h.do("GET", "/v1/records/"+about.Record.ID, "op", nil)
	_, _, hist := h.do("GET", "/v1/records/"+about.Record.ID+"/history", "op", nil)
	_, _, list := h.do("GET", "/v1/records?status=forgotten&limit=500", "op", nil)
	_, _, search := h.do("POST", "/v1/search", "op", map[string]any{"query": secret + " cat"})
	_, _, gw := h.do("POST", "/memories/search", "", id(map[string]any{"query": secret, "scope": []string{"all_user_memory"}}))
	for name, body := range map[string][]byte{"get": raw, "history": hist, "list": list, "gateway search": gw} {
		if bytes.Contains(body, []byte(secret)) {
			t.Errorf("%s still returns the forgotten words: %s", name, body)
		}
	}
	var sr struct {
		Results []struct {
			Record memory.Record `json:"record"`
		} `json:"results"`
	}
	if err := json.Unmarshal(search, &sr); err != nil {
		t.Fatal(err)
	}
	if len(sr.Results) != 1 || sr.Results[0].Record.ID != kept.Record.ID {
		t.Fatalf("search after forgetting: %s", search)
	}
	audit := h.auditLog()
	last := audit[len(audit)-1]
	if last.Event != "subject.forget" || last.Payload["records"] != float64(rep.Records) || strings.Contains(asJSON(last), "alice") {
		t.Fatalf("audit entry %+v", last)
	}
	// The raw bytes: the database file and its write-ahead log.
	for _, f := range []string{h.dbPath, h.dbPath + "-wal"} {
		for _, needle := range []string{secret + " is a fine", "called " + secret, "about " + secret} {
			if fileHas(t, f, needle) {
				t.Errorf("%s still holds %q", f, needle)
			}
		}
	}
	if !fileHas(t, h.dbPath, "carol keeps the "+secret) {
		if err := h.store.Checkpoint(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !fileHas(t, h.dbPath, "carol keeps the "+secret) {
			t.Error("the record not about the subject was erased too")
		}
	}
}

func fileHas(t *testing.T, path, needle string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(needle))
}

func asJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
