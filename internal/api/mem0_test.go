package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// mem0Do sends a request the way the mem0 clients do: "Token <key>".
func (h *harness) mem0Do(method, path, who string, body any) (int, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, h.srv.URL+path, rd)
	tok, ok := h.tokens[who]
	if !ok {
		tok = who
	}
	req.Header.Set("Authorization", "Token "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func (h *harness) mem0Must(method, path, who string, body any, want int, out any) {
	h.t.Helper()
	code, raw := h.mem0Do(method, path, who, body)
	if code != want {
		h.t.Fatalf("%s %s as %s: %d, want %d: %s", method, path, who, code, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatal(err)
		}
	}
}

type mem0Memory struct {
	ID       string         `json:"id"`
	Memory   string         `json:"memory"`
	UserID   *string        `json:"user_id"`
	RunID    *string        `json:"run_id"`
	Metadata map[string]any `json:"metadata"`
}

func TestMem0AuthScheme(t *testing.T) {
	h := newHarness(t, nil)
	var ping struct{ Status, Principal string }
	h.mem0Must("GET", "/v1/ping/", "std", nil, http.StatusOK, &ping)
	if ping.Status != "ok" || ping.Principal != "std" {
		t.Fatalf("ping = %+v", ping)
	}
	// A bearer token works on the mem0 routes too.
	h.mustDo("GET", "/v1/ping/", "std", nil, http.StatusOK, nil)
	if code, _ := h.mem0Do("GET", "/v1/ping/", "mg_not_a_token", nil); code != http.StatusUnauthorized {
		t.Fatalf("bad key: %d", code)
	}
	// The Token scheme is the mem0 routes' only: REST v1 still wants Bearer.
	if code, _ := h.mem0Do("GET", "/v1/whoami", "std", nil); code != http.StatusUnauthorized {
		t.Fatalf("Token scheme on /v1/whoami: %d, want 401", code)
	}
	// The paths match exactly, trailing slash included.
	for _, p := range []string{"/v1/ping/x/", "/v3/memories/add/x/"} {
		if code, _ := h.mem0Do("POST", p, "std", map[string]any{}); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 404 or 405", p, code)
		}
	}
}

func TestMem0AddThroughGateAndAudit(t *testing.T) {
	h := newHarness(t, nil)
	var add struct {
		Status  string `json:"status"`
		Results []struct {
			ID, Event, Decision string
		} `json:"results"`
	}
	h.mem0Must("POST", "/v3/memories/add/", "std", map[string]any{
		"messages": []map[string]any{{"role": "user", "content": "I prefer tea over coffee"}},
		"user_id":  "alice", "run_id": "r1", "infer": false, "metadata": map[string]any{"topic": "drinks"},
		"output_format": "v1.1", "custom_instructions": "ignored",
	}, http.StatusOK, &add)
	if add.Status != "SUCCEEDED" || len(add.Results) != 1 || add.Results[0].Event != "ADD" || add.Results[0].Decision != "accepted" {
		t.Fatalf("add = %+v", add)
	}
	id := add.Results[0].ID
	// It is a memgate record: scope keys mapped, written by the agent.
	var rec struct {
		Scope    map[string]string `json:"scope"`
		Source   struct{ Agent string }
		Category string `json:"category"`
	}
	h.mustDo("GET", "/v1/records/"+id, "std", nil, http.StatusOK, &rec)
	if rec.Scope["user_id"] != "alice" || rec.Scope["session_id"] != "r1" || rec.Source.Agent != "std" || rec.Category != "mem0" {
		t.Fatalf("record = %+v", rec)
	}
	found := false
	for _, e := range h.auditLog() {
		if e.Event == "record.write" && e.Payload["record_id"] == id {
			found = true
		}
	}
	if !found {
		t.Fatal("no record.write audit entry for the mem0 add")
	}
	// A read-only agent is refused by the gate, as on REST.
	h.mem0Must("POST", "/v3/memories/add/", "ro", map[string]any{
		"messages": []map[string]any{{"role": "user", "content": "x"}}, "user_id": "alice", "infer": false,
	}, http.StatusForbidden, nil)
	// A restricted agent's write waits for approval, reported as PENDING.
	var queued struct {
		Status  string
		Results []struct {
			Status     string `json:"status"`
			ApprovalID string `json:"approval_id"`
		}
	}
	h.mem0Must("POST", "/v3/memories/add/", "restricted", map[string]any{
		"messages": "The build server is in rack 4", "user_id": "alice", "infer": false,
	}, http.StatusOK, &queued)
	if queued.Status != "PENDING" || queued.Results[0].Status != "PENDING" || queued.Results[0].ApprovalID == "" {
		t.Fatalf("queued = %+v", queued)
	}
}

func TestMem0FiltersAndErrors(t *testing.T) {
	h := newHarness(t, nil)
	for _, m := range []struct{ user, text, topic string }{
		{"alice", "Alice likes green tea", "drinks"}, {"alice", "Alice works in Porto", "work"}, {"bob", "Bob likes coffee", "drinks"},
	} {
		h.mem0Must("POST", "/v3/memories/add/", "std", map[string]any{
			"messages": []map[string]any{{"role": "user", "content": m.text}}, "user_id": m.user, "infer": false,
			"metadata": map[string]any{"topic": m.topic},
		}, http.StatusOK, nil)
	}
	list := func(filters map[string]any) []string {
		var page struct {
			Count   int
			Results []mem0Memory
		}
		h.mem0Must("POST", "/v3/memories/", "std", map[string]any{"filters": filters}, http.StatusOK, &page)
		var out []string
		for _, m := range page.Results {
			out = append(out, m.Memory)
		}
		if page.Count != len(out) {
			t.Fatalf("count %d for %d results", page.Count, len(out))
		}
		return out
	}
	if got := list(map[string]any{"user_id": "alice"}); len(got) != 2 {
		t.Fatalf("alice: %v", got)
	}
	if got := list(map[string]any{"AND": []any{map[string]any{"user_id": "*"}, map[string]any{"metadata": map[string]any{"topic": "drinks"}}}}); len(got) != 2 ||
		strings.Contains(strings.Join(got, ","), "Porto") {
		t.Fatalf("drinks: %v", got)
	}
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"filters": map[string]any{"OR": []any{}}}, "filters.OR"},
		{map[string]any{"filters": map[string]any{"AND": []any{map[string]any{"user_id": "a"}, map[string]any{"user_id": "b"}}}}, "filters.AND[1].user_id"},
		{map[string]any{"filters": map[string]any{"created_at": map[string]any{"gte": "2024-01-01"}}}, "filters.created_at"},
	} {
		e := h.wantError("POST", "/v3/memories/", "std", c.body, http.StatusBadRequest, "invalid_argument")
		if e.Error.Details["field"] != c.field {
			t.Errorf("field %v, want %s", e.Error.Details["field"], c.field)
		}
	}
	e := h.wantError("DELETE", "/v1/memories/", "std", nil, http.StatusBadRequest, "invalid_argument")
	if e.Error.Details["field"] != "user_id" {
		t.Errorf("delete all without entity: field %v", e.Error.Details["field"])
	}
	var del struct{ Deleted int }
	h.mem0Must("DELETE", "/v1/memories/?user_id=bob", "std", nil, http.StatusOK, &del)
	if del.Deleted != 1 || len(list(map[string]any{"user_id": "alice"})) != 2 || len(list(map[string]any{"user_id": "bob"})) != 0 {
		t.Fatalf("delete all for bob: %+v", del)
	}
}

func TestMem0UpdateHistoryDeleteFollowOwnership(t *testing.T) {
	h := newHarness(t, nil)
	var add struct{ Results []struct{ ID string } }
	h.mem0Must("POST", "/v3/memories/add/", "std", map[string]any{
		"messages": []map[string]any{{"role": "user", "content": "The deploy window is Tuesday"}}, "agent_id": "ops", "infer": false,
	}, http.StatusOK, &add)
	id := add.Results[0].ID
	// Another agent may not change it, on mem0 routes as on REST.
	restCode, _, _ := h.do("PATCH", "/v1/records/"+id, "std2", map[string]any{"expected_version": 1, "content": "x"})
	mem0Code, _ := h.mem0Do("PUT", "/v1/memories/"+id+"/", "std2", map[string]any{"text": "x"})
	if restCode < 400 || mem0Code != restCode {
		t.Fatalf("other agent's update: mem0 %d, REST %d", mem0Code, restCode)
	}
	var upd mem0Memory
	h.mem0Must("PUT", "/v1/memories/"+id+"/", "std", map[string]any{"text": "The deploy window is Thursday"}, http.StatusOK, &upd)
	if upd.Memory != "The deploy window is Thursday" {
		t.Fatalf("update = %+v", upd)
	}
	type entry struct {
		Event     string  `json:"event"`
		OldMemory *string `json:"old_memory"`
		NewMemory *string `json:"new_memory"`
	}
	var hist []entry
	h.mem0Must("GET", "/v1/memories/"+id+"/history/", "std", nil, http.StatusOK, &hist)
	if len(hist) != 2 || hist[0].Event != "ADD" || hist[0].OldMemory != nil || hist[1].Event != "UPDATE" ||
		*hist[1].OldMemory != "The deploy window is Tuesday" || *hist[1].NewMemory != "The deploy window is Thursday" {
		t.Fatalf("history = %+v", hist)
	}
	h.mem0Must("DELETE", "/v1/memories/"+id+"/", "std", nil, http.StatusOK, nil)
	h.mem0Must("GET", "/v1/memories/"+id+"/", "std", nil, http.StatusNotFound, nil)
	// Forgetting erases every version's text; the events remain.
	hist = nil
	h.mem0Must("GET", "/v1/memories/"+id+"/history/", "std", nil, http.StatusOK, &hist)
	if len(hist) != 3 || hist[0].Event != "ADD" || hist[1].Event != "UPDATE" || hist[2].Event != "DELETE" || hist[2].NewMemory != nil {
		t.Fatalf("history after delete = %+v", hist)
	}
}
