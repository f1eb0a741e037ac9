package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

func (h *harness) node(who, label, key string, want int) memory.Node {
	h.t.Helper()
	var res core.NodeResult
	h.mustDo("POST", "/v1/graph/nodes", who, map[string]any{"label": label, "natural_key": key}, want, &res)
	return res.Node
}

func (h *harness) edge(from, to, rel string) memory.Edge {
	h.t.Helper()
	var res core.EdgeResult
	h.mustDo("POST", "/v1/graph/edges", "op", map[string]any{"from": from, "to": to, "relation": rel}, http.StatusCreated, &res)
	return res.Edge
}

func (h *harness) neighborKeys(path string) []string {
	h.t.Helper()
	var out struct {
		Neighbors []core.Neighbor `json:"neighbors"`
	}
	h.mustDo("GET", path, "op", nil, http.StatusOK, &out)
	keys := []string{}
	for _, n := range out.Neighbors {
		keys = append(keys, n.Node.NaturalKey)
	}
	return keys
}

func TestGraphNodes(t *testing.T) {
	h := newHarness(t, nil)
	n := h.node("op", "person", "alice", http.StatusCreated)
	if n.Provenance != memory.ProvOperator || n.Status != memory.NodeActive || string(n.Properties) != `{"name":"alice"}` {
		t.Fatalf("operator node %+v", n)
	}
	// Upsert by (label, key): the same node, properties replaced.
	var res core.NodeResult
	h.mustDo("POST", "/v1/graph/nodes", "op", map[string]any{"label": "person", "natural_key": "alice",
		"properties": map[string]any{"name": "Alice Smith", "aliases": []string{"Ally"}}}, http.StatusOK, &res)
	if res.Created || res.Node.ID != n.ID || !strings.Contains(string(res.Node.Properties), "Alice Smith") {
		t.Fatalf("update %+v", res)
	}
	var got memory.Node
	h.mustDo("GET", "/v1/graph/nodes/person:alice", "std", nil, http.StatusOK, &got)
	if got.ID != n.ID {
		t.Fatalf("get by key %+v", got)
	}
	h.mustDo("GET", "/v1/graph/nodes/"+n.ID, "std", nil, http.StatusOK, &got)

	// Agents propose; trusted agents' nodes are active; read-only agents
	// may not write.
	if a := h.node("std", "project", "atlas", http.StatusCreated); a.Provenance != memory.ProvProposed || a.Status != memory.NodeProvisional {
		t.Fatalf("standard agent's node %+v", a)
	}
	if a := h.node("trusted", "project", "zeus", http.StatusCreated); a.Status != memory.NodeActive {
		t.Fatalf("trusted agent's node %+v", a)
	}
	h.wantError("POST", "/v1/graph/nodes", "ro", map[string]any{"label": "person", "natural_key": "x"}, http.StatusForbidden, "permission_denied")
	h.wantError("POST", "/v1/graph/nodes", "std", map[string]any{"label": "person", "natural_key": "x", "provenance": "operator"}, http.StatusForbidden, "permission_denied")
	for _, bad := range []map[string]any{
		{"label": "Person", "natural_key": "x"},
		{"label": "person", "natural_key": "has space"},
		{"label": "person", "natural_key": ""},
		{"label": "person", "natural_key": "x", "status": "gone"},
		{"label": "person", "natural_key": "x", "properties": []int{1}},
	} {
		h.wantError("POST", "/v1/graph/nodes", "op", bad, http.StatusBadRequest, "invalid_argument")
	}
	h.wantError("GET", "/v1/graph/nodes/person:nobody", "op", nil, http.StatusNotFound, "not_found")
	h.wantError("GET", "/v1/graph/nodes/nonsense", "op", nil, http.StatusBadRequest, "invalid_argument")

	// Labels, paging, archived visibility.
	for _, k := range []string{"bob", "carol", "dave"} {
		h.node("op", "person", k, http.StatusCreated)
	}
	var page core.NodePage
	h.mustDo("GET", "/v1/graph/nodes?label=person&limit=2", "op", nil, http.StatusOK, &page)
	if len(page.Nodes) != 2 || page.NextCursor == "" {
		t.Fatalf("page 1 %+v", page)
	}
	var page2 core.NodePage
	h.mustDo("GET", "/v1/graph/nodes?label=person&limit=2&cursor="+page.NextCursor, "op", nil, http.StatusOK, &page2)
	if len(page2.Nodes) != 2 || page2.NextCursor != "" || page2.Nodes[0].ID == page.Nodes[1].ID {
		t.Fatalf("page 2 %+v", page2)
	}
	h.mustDo("POST", "/v1/graph/nodes/person:dave/archive", "op", nil, http.StatusOK, &got)
	if got.Status != memory.NodeArchived {
		t.Fatalf("archived %+v", got)
	}
	h.wantError("GET", "/v1/graph/nodes/person:dave", "op", nil, http.StatusNotFound, "not_found")
	h.mustDo("GET", "/v1/graph/nodes/person:dave?include_archived=true", "op", nil, http.StatusOK, &got)
	h.mustDo("GET", "/v1/graph/nodes?label=person,project", "op", nil, http.StatusOK, &page)
	if len(page.Nodes) != 5 {
		t.Fatalf("labels person,project without archived: %d nodes", len(page.Nodes))
	}
	h.mustDo("GET", "/v1/graph/nodes?label=person&include_archived=true", "op", nil, http.StatusOK, &page)
	if len(page.Nodes) != 4 {
		t.Fatalf("person with archived: %d nodes", len(page.Nodes))
	}
}

func TestGraphEdgesAndTraversal(t *testing.T) {
	h := newHarness(t, nil)
	for _, k := range []string{"a", "b", "c", "d", "e", "island"} {
		h.node("op", "concept", k, http.StatusCreated)
	}
	// a -USES-> b -DEPENDS_ON-> c -REQUIRES-> d -RELATED_TO-> e
	ab := h.edge("concept:a", "concept:b", "USES")
	h.edge("concept:b", "concept:c", "DEPENDS_ON")
	h.edge("concept:c", "concept:d", "REQUIRES")
	h.edge("concept:d", "concept:e", "RELATED_TO")

	// The relation is validated against SPEC §8's enum, and the error
	// names the allowed values.
	e := h.wantError("POST", "/v1/graph/edges", "op", map[string]any{"from": "concept:a", "to": "concept:b", "relation": "LIKES"},
		http.StatusBadRequest, "invalid_argument")
	if !strings.Contains(e.Error.Message, "PREFERRED_OVER") || e.Error.Details["field"] != "relation" {
		t.Fatalf("relation error %+v", e)
	}
	h.wantError("POST", "/v1/graph/edges", "op", map[string]any{"from": "concept:a", "to": "concept:zz", "relation": "USES"}, http.StatusNotFound, "not_found")
	h.wantError("POST", "/v1/graph/edges", "op", map[string]any{"from": "concept:a", "to": "concept:a", "relation": "USES"}, http.StatusBadRequest, "invalid_argument")
	// Upserting the same edge again observes it: no second live edge.
	var again core.EdgeResult
	h.mustDo("POST", "/v1/graph/edges", "op", map[string]any{"from": "concept:a", "to": "concept:b", "relation": "uses", "weight": 2}, http.StatusOK, &again)
	if again.Created || again.Edge.ID != ab.ID || again.Edge.Weight != 2 {
		t.Fatalf("re-upsert %+v", again)
	}

	for _, c := range []struct {
		q    string
		want []string
	}{
		{"depth=1", []string{"b"}},
		{"depth=2", []string{"b", "c"}},
		{"depth=3", []string{"b", "c", "d"}},
		{"depth=3&relation=USES", []string{"b"}},
		{"depth=3&relation=USES,DEPENDS_ON", []string{"b", "c"}},
		{"depth=3&limit=1", []string{"b"}},
		{"depth=2&direction=in", []string{}},
	} {
		if got := h.neighborKeys("/v1/graph/nodes/concept:a/neighbors?" + c.q); !slices.Equal(got, c.want) {
			t.Errorf("neighbors %s = %v, want %v", c.q, got, c.want)
		}
	}
	h.wantError("GET", "/v1/graph/nodes/concept:a/neighbors?depth=4", "op", nil, http.StatusBadRequest, "invalid_argument")
	h.wantError("GET", "/v1/graph/nodes/concept:a/neighbors?relation=LIKES", "op", nil, http.StatusBadRequest, "invalid_argument")

	var p core.PathResult
	h.mustDo("GET", "/v1/graph/path?from=concept:a&to=concept:e", "op", nil, http.StatusOK, &p)
	if !p.Found || len(p.Hops) != 4 || p.Hops[3].Node.NaturalKey != "e" {
		t.Fatalf("path a→e %+v", p)
	}
	h.mustDo("GET", "/v1/graph/path?from=concept:a&to=concept:e&max_depth=3", "op", nil, http.StatusOK, &p)
	if p.Found {
		t.Fatalf("path a→e within 3 hops: %+v", p)
	}
	h.mustDo("GET", "/v1/graph/path?from=concept:a&to=concept:island", "op", nil, http.StatusOK, &p)
	if p.Found || len(p.Hops) != 0 {
		t.Fatalf("path to a disconnected node %+v", p)
	}
	h.wantError("GET", "/v1/graph/path?from=concept:a", "op", nil, http.StatusBadRequest, "invalid_argument")

	// An archived node is not traversed; an invalidated edge neither, and
	// it stays as history.
	h.mustDo("POST", "/v1/graph/nodes/concept:c/archive", "op", nil, http.StatusOK, nil)
	if got := h.neighborKeys("/v1/graph/nodes/concept:a/neighbors?depth=3"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("through an archived node: %v", got)
	}
	if got := h.neighborKeys("/v1/graph/nodes/concept:a/neighbors?depth=3&include_archived=true"); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Errorf("with archived: %v", got)
	}
	var inv memory.Edge
	h.mustDo("DELETE", "/v1/graph/edges/"+ab.ID, "op", nil, http.StatusOK, &inv)
	if inv.InvalidatedAt == nil {
		t.Fatalf("invalidated %+v", inv)
	}
	if got := h.neighborKeys("/v1/graph/nodes/concept:a/neighbors"); len(got) != 0 {
		t.Errorf("after invalidating a→b: %v", got)
	}
	var health core.GraphHealth
	h.mustDo("GET", "/v1/graph/health", "std", nil, http.StatusOK, &health)
	if !health.OK || health.IndexNodes != 6 || health.IndexEdges != 3 {
		t.Fatalf("health %+v", health)
	}
	h.wantError("DELETE", "/v1/graph/edges/"+ab.ID, "ro", nil, http.StatusForbidden, "permission_denied")
}

func TestRecordsLinkToNodes(t *testing.T) {
	h := newHarness(t, nil)
	h.write("std", map[string]any{"type": "belief", "content": "Alice runs the Atlas project", "entities": []string{"person:alice", "project:atlas"}}, http.StatusCreated)
	var n memory.Node
	h.mustDo("GET", "/v1/graph/nodes/person:alice?include_archived=true", "op", nil, http.StatusOK, &n)
	if n.Provenance != memory.ProvProposed || n.Status != memory.NodeProvisional {
		t.Fatalf("node from an agent's record %+v", n)
	}
	h.write("op", map[string]any{"type": "belief", "content": "Bob joined", "entities": []string{"person:bob"}}, http.StatusCreated)
	h.mustDo("GET", "/v1/graph/nodes/person:bob", "op", nil, http.StatusOK, &n)
	if n.Provenance != memory.ProvOperator || n.Status != memory.NodeActive {
		t.Fatalf("node from an operator's record %+v", n)
	}
	// A quarantined record creates no node.
	h.write("std", map[string]any{"type": "belief", "content": "mail carol@example.com", "entities": []string{"person:carol"}}, http.StatusAccepted)
	h.wantError("GET", "/v1/graph/nodes/person:carol?include_archived=true", "op", nil, http.StatusNotFound, "not_found")
}

func TestGraphRetrievalSignal(t *testing.T) {
	h := newHarness(t, nil)
	h.mustDo("POST", "/v1/graph/nodes", "op", map[string]any{"label": "person", "natural_key": "alice_smith",
		"properties": map[string]any{"name": "Alice Smith", "aliases": []string{"Ally"}}}, http.StatusCreated, nil)
	h.node("op", "project", "atlas", http.StatusCreated)
	h.node("op", "project", "zephyr", http.StatusCreated)
	h.edge("person:alice_smith", "project:atlas", "WORKS_WITH")
	// Neither record shares a word with the question; the graph links the
	// first to the person the question names, one hop away.
	linked := h.write("op", map[string]any{"type": "belief", "content": "The deadline moved to June", "entities": []string{"project:atlas"}}, http.StatusCreated)
	h.write("op", map[string]any{"type": "belief", "content": "The budget was approved", "entities": []string{"project:zephyr"}}, http.StatusCreated)

	search := func(body map[string]any) searchResp {
		t.Helper()
		var r searchResp
		h.mustDo("POST", "/v1/search", "std", body, http.StatusOK, &r)
		return r
	}
	r := search(map[string]any{"query": "what is Ally working on?", "signals": []string{"graph"}, "route": "multi_hop", "explain": true})
	if len(r.Results) != 1 || r.Results[0].Record.ID != linked.Record.ID || !slices.Contains(r.Signals, "graph") {
		t.Fatalf("graph signal: %+v", r)
	}
	// Filters hold on the graph signal too: a type it does not match
	// leaves nothing.
	if r := search(map[string]any{"query": "what is Ally working on?", "signals": []string{"graph"}, "route": "multi_hop", "types": []string{"decision"}}); len(r.Results) != 0 {
		t.Fatalf("graph signal ignored the type filter: %+v", r.Results)
	}
	// Off by default: without signals the search does not run it.
	if r := search(map[string]any{"query": "what is Ally working on?", "route": "multi_hop"}); slices.Contains(r.Signals, "graph") {
		t.Fatalf("graph signal on by default: %v", r.Signals)
	}
}
