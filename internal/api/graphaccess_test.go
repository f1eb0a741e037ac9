package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

// TestGraphHidesWhatRecordsHide: a node derived from a sensitive record
// is invisible over REST to a read-only agent that gets no search hit for
// it — nodes list, get, neighbors and path — while the operator sees it.
func TestGraphHidesWhatRecordsHide(t *testing.T) {
	h := newHarness(t, nil)
	h.write("op", map[string]any{"type": "belief", "content": "Jane Doe has an open HR case", "access": "sensitive",
		"entities": []string{"person:jane-doe-hr-case-4411"}}, http.StatusCreated)
	h.write("std", map[string]any{"type": "belief", "content": "Alice runs the platform team", "entities": []string{"person:alice"}}, http.StatusCreated)
	h.mustDo("POST", "/v1/graph/edges", "op", map[string]any{"from": "person:alice", "to": "person:jane-doe-hr-case-4411",
		"relation": "WORKS_WITH"}, http.StatusCreated, nil)

	const hidden = "jane-doe-hr-case-4411"
	for who, sees := range map[string]bool{"op": true, "ro": false, "std": false, "trusted": false} {
		var page core.NodePage
		h.mustDo("GET", "/v1/graph/nodes?label=person", who, nil, http.StatusOK, &page)
		listed := false
		for _, n := range page.Nodes {
			listed = listed || n.NaturalKey == hidden
		}
		if listed != sees {
			t.Errorf("%s: nodes list holds the sensitive node = %v", who, listed)
		}
		code, _, body := h.do("GET", "/v1/graph/nodes/person:"+hidden, who, nil)
		if (code == http.StatusOK) != sees || (!sees && code != http.StatusNotFound) {
			t.Errorf("%s: get = %d %s", who, code, body)
		}
		_, _, body = h.do("GET", "/v1/graph/nodes/person:alice/neighbors?depth=2", who, nil)
		if strings.Contains(string(body), hidden) != sees {
			t.Errorf("%s: neighbors of alice = %s", who, body)
		}
		code, _, body = h.do("GET", "/v1/graph/path?from=person:alice&to=person:"+hidden, who, nil)
		if (code == http.StatusOK) != sees || strings.Contains(string(body), hidden) != sees {
			t.Errorf("%s: path = %d %s", who, code, body)
		}
	}
	var res struct {
		Results []any `json:"results"`
	}
	h.mustDo("POST", "/v1/search", "ro", map[string]any{"query": "jane doe hr case"}, http.StatusOK, &res)
	if len(res.Results) != 0 {
		t.Fatalf("read-only agent finds the sensitive record: %v", res.Results)
	}
}

// TestGraphScreenREST: a credential as a node key or in properties is
// refused with 422 naming the field, never echoing it, and stores nothing.
func TestGraphScreenREST(t *testing.T) {
	h := newHarness(t, nil)
	const key = "sk-proj-4fQx9LmN2pR7tV3wZ8yB6cD1eG5hJ0kM"
	tok := h.tokens["ro"]
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"label": "token", "natural_key": tok}, "natural_key"},
		{map[string]any{"label": "system", "natural_key": "openai", "properties": map[string]any{"api_key": key}}, "properties"},
	} {
		e := h.wantError("POST", "/v1/graph/nodes", "std", tc.body, http.StatusUnprocessableEntity, "gate_rejected")
		if e.Error.Details["field"] != tc.field {
			t.Errorf("field %v, want %s", e.Error.Details["field"], tc.field)
		}
		_, _, raw := h.do("POST", "/v1/graph/nodes", "std", tc.body)
		if strings.Contains(string(raw), key) || strings.Contains(string(raw), tok) {
			t.Errorf("refusal echoes the value: %s", raw)
		}
	}
	var page core.NodePage
	h.mustDo("GET", "/v1/graph/nodes?include_archived=true", "op", nil, http.StatusOK, &page)
	if len(page.Nodes) != 0 {
		t.Fatalf("refused writes stored %+v", page.Nodes)
	}
	_, _, raw := h.do("GET", "/v1/export", "op", nil)
	if strings.Contains(string(raw), key) || strings.Contains(string(raw), tok) {
		t.Fatal("the export holds a refused credential")
	}
	refused := 0
	for _, a := range h.auditLog() {
		if a.Event == "graph.node.upsert" && a.Payload["decision"] == memory.DecisionRejected && a.Payload["reason"] == "pii" {
			refused++
		}
	}
	if refused != 4 {
		t.Fatalf("audited %d refused graph writes, want 4", refused)
	}
}
