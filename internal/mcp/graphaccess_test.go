package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/kgcompat"
	"github.com/memgate/memgate/internal/memory"
)

// TestGraphToolsHideWhatRecordsHide: nodes derived from sensitive records
// (a graph node and a drop-in entity) are invisible to a read-only agent
// on every MCP path — graph_neighbors, graph_path, read_graph,
// search_nodes, open_nodes and the memory://knowledge-graph resource —
// while the operator sees them.
func TestGraphToolsHideWhatRecordsHide(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	op := h.ps["op"]
	for _, req := range []core.WriteRequest{
		{Type: memory.Belief, Content: "Jane Doe has an open HR case", Access: memory.Sensitive, Entities: []string{"person:jane-doe-hr-case-4411"}},
		{Type: memory.Entity, Category: kgcompat.ObservationCategory, Content: "Hidden Person: on the HR watch list", Access: memory.Sensitive,
			Entities: []string{"entity:Hidden_Person"}},
		{Type: memory.Belief, Content: "Alice runs the platform team", Entities: []string{"person:alice"}},
	} {
		if _, err := h.svc.Write(ctx, op, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.svc.UpsertEdge(ctx, op, core.EdgeInput{From: "person:alice", To: "person:jane-doe-hr-case-4411", Relation: "WORKS_WITH"}); err != nil {
		t.Fatal(err)
	}
	kg := kgcompat.New(h.svc)
	if _, err := kg.CreateEntities(ctx, op, []kgcompat.Entity{{Name: "Visible Person", EntityType: "person"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := kg.CreateRelations(ctx, op, []kgcompat.Relation{{From: "Visible Person", To: "Hidden Person", RelationType: "knows"}}); err != nil {
		t.Fatal(err)
	}

	for who, sees := range map[string]bool{"op": true, "ro": false, "trusted": false} {
		cs := h.connect(who)
		leaks := func(what string, v any) {
			t.Helper()
			raw, _ := json.Marshal(v)
			s := string(raw)
			if got := strings.Contains(s, "jane-doe-hr-case-4411") || strings.Contains(s, "Hidden Person"); got != sees {
				t.Errorf("%s %s: shows the hidden nodes = %v: %s", who, what, got, s)
			}
		}
		res := call(t, cs, "graph_neighbors", map[string]any{"node": "person:alice", "depth": 2})
		leaks("graph_neighbors", res.StructuredContent)
		res = call(t, cs, "graph_path", map[string]any{"from": "person:alice", "to": "person:jane-doe-hr-case-4411"})
		if res.IsError == sees {
			t.Errorf("%s graph_path: error=%v %s", who, res.IsError, text(res))
		}
		if !sees && !strings.HasPrefix(text(res), "not_found: ") {
			t.Errorf("%s graph_path: %s, want not_found", who, text(res))
		}
		res = call(t, cs, "graph_neighbors", map[string]any{"node": "person:jane-doe-hr-case-4411"})
		if res.IsError == sees {
			t.Errorf("%s graph_neighbors of the hidden node: %s", who, text(res))
		}
		res = call(t, cs, "read_graph", map[string]any{})
		leaks("read_graph", res.StructuredContent)
		res = call(t, cs, "search_nodes", map[string]any{"query": "person"})
		leaks("search_nodes", res.StructuredContent)
		res = call(t, cs, "open_nodes", map[string]any{"names": []string{"Hidden Person", "Visible Person"}})
		leaks("open_nodes", res.StructuredContent)
		rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "memory://knowledge-graph"})
		if err != nil {
			t.Fatal(err)
		}
		leaks("the resource", rr.Contents[0].Text)
	}
}

// TestGraphToolsScreen: graph_upsert_node with a credential in its key
// or properties, and create_entities naming an entity by a credential,
// are refused naming the field, never echoing the value.
func TestGraphToolsScreen(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	const key = "sk-proj-4fQx9LmN2pR7tV3wZ8yB6cD1eG5hJ0kM"
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"graph_upsert_node", map[string]any{"label": "system", "natural_key": key}},
		{"graph_upsert_node", map[string]any{"label": "system", "natural_key": "openai", "properties": map[string]any{"api_key": key}}},
		{"create_entities", map[string]any{"entities": []any{map[string]any{"name": key, "entityType": "secret", "observations": []string{}}}}},
	} {
		msg := fails(t, cs, c.tool, c.args, "gate_rejected")
		if strings.Contains(msg, key) {
			t.Errorf("%s: the refusal echoes the value: %s", c.tool, msg)
		}
	}
	res := call(t, cs, "read_graph", map[string]any{})
	if raw, _ := json.Marshal(res.StructuredContent); strings.Contains(string(raw), key) {
		t.Fatalf("a refused entity was stored: %s", raw)
	}
}

// TestGraphToolsAccess: graph_upsert_node takes an access level; an
// agent-level node is seen by its writer only (and operators), and
// another agent can neither see nor take it over.
func TestGraphToolsAccess(t *testing.T) {
	h := newHarness(t)
	std, std2 := h.connect("std"), h.connect("std2")
	ok(t, std, "graph_upsert_node", map[string]any{"label": "project", "natural_key": "mine", "access": "agent"}, nil)
	ok(t, std, "graph_neighbors", map[string]any{"node": "project:mine"}, nil)
	fails(t, std2, "graph_neighbors", map[string]any{"node": "project:mine"}, "not_found")
	fails(t, std2, "graph_upsert_node", map[string]any{"label": "project", "natural_key": "mine", "properties": map[string]any{"name": "x"}}, "conflict")
	fails(t, std, "graph_upsert_node", map[string]any{"label": "project", "natural_key": "s", "access": "sensitive"}, "permission_denied")
}
