package mcp_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The reference memory server answers each call with its result as JSON
// indented by two spaces in a text content, and as structured content;
// these tests check both, byte for byte where the reference defines it.

func TestCompatSession(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")

	res := ok(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "John Smith", "entityType": "person", "observations": []string{"Speaks fluent Spanish", "Lives in <Paris> & more"}},
		map[string]any{"name": "Acme", "entityType": "organization", "observations": []string{}},
	}}, nil)
	wantText := `[
  {
    "name": "John Smith",
    "entityType": "person",
    "observations": [
      "Speaks fluent Spanish",
      "Lives in <Paris> & more"
    ]
  },
  {
    "name": "Acme",
    "entityType": "organization",
    "observations": []
  }
]`
	if text(res) != wantText {
		t.Fatalf("create_entities text:\n%s\nwant:\n%s", text(res), wantText)
	}
	assertStructured(t, res, `{"entities":[{"name":"John Smith","entityType":"person","observations":["Speaks fluent Spanish","Lives in <Paris> & more"]},
		{"name":"Acme","entityType":"organization","observations":[]}]}`)

	// Existing names are skipped; only new entities come back.
	res = ok(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "Acme", "entityType": "company", "observations": []string{"x"}},
	}}, nil)
	if text(res) != "[]" {
		t.Fatalf("create existing: %q", text(res))
	}
	assertStructured(t, res, `{"entities":[]}`)

	res = ok(t, cs, "create_relations", map[string]any{"relations": []any{
		map[string]any{"from": "John Smith", "to": "Acme", "relationType": "works_at"},
	}}, nil)
	assertStructured(t, res, `{"relations":[{"from":"John Smith","to":"Acme","relationType":"works_at"}]}`)
	if want := "[\n  {\n    \"from\": \"John Smith\",\n    \"to\": \"Acme\",\n    \"relationType\": \"works_at\"\n  }\n]"; text(res) != want {
		t.Fatalf("create_relations text %q", text(res))
	}
	res = ok(t, cs, "create_relations", map[string]any{"relations": []any{
		map[string]any{"from": "John Smith", "to": "Acme", "relationType": "works_at"},
	}}, nil)
	assertStructured(t, res, `{"relations":[]}`)

	res = ok(t, cs, "add_observations", map[string]any{"observations": []any{
		map[string]any{"entityName": "Acme", "contents": []string{"Makes anvils", "Based in Arizona"}},
		map[string]any{"entityName": "John Smith", "contents": []string{"Speaks fluent Spanish"}},
	}}, nil)
	assertStructured(t, res, `{"results":[{"entityName":"Acme","addedObservations":["Makes anvils","Based in Arizona"]},
		{"entityName":"John Smith","addedObservations":[]}]}`)
	assertTextJSON(t, res, `[{"entityName":"Acme","addedObservations":["Makes anvils","Based in Arizona"]},{"entityName":"John Smith","addedObservations":[]}]`)

	msg := fails(t, cs, "add_observations", map[string]any{"observations": []any{
		map[string]any{"entityName": "Nobody", "contents": []string{"x"}},
	}}, "not_found")
	t.Logf("missing entity: %s", msg)

	graph := `{"entities":[
		{"name":"John Smith","entityType":"person","observations":["Speaks fluent Spanish","Lives in <Paris> & more"]},
		{"name":"Acme","entityType":"organization","observations":["Makes anvils","Based in Arizona"]}],
		"relations":[{"from":"John Smith","to":"Acme","relationType":"works_at"}]}`
	res = ok(t, cs, "read_graph", map[string]any{}, nil)
	assertStructured(t, res, graph)
	assertTextJSON(t, res, graph)

	res = ok(t, cs, "search_nodes", map[string]any{"query": "spanish"}, nil)
	assertStructured(t, res, `{"entities":[{"name":"John Smith","entityType":"person","observations":["Speaks fluent Spanish","Lives in <Paris> & more"]}],
		"relations":[{"from":"John Smith","to":"Acme","relationType":"works_at"}]}`)
	res = ok(t, cs, "search_nodes", map[string]any{"query": "nothing like this"}, nil)
	assertStructured(t, res, `{"entities":[],"relations":[]}`)

	res = ok(t, cs, "open_nodes", map[string]any{"names": []string{"Acme", "Ghost"}}, nil)
	assertStructured(t, res, `{"entities":[{"name":"Acme","entityType":"organization","observations":["Makes anvils","Based in Arizona"]}],
		"relations":[{"from":"John Smith","to":"Acme","relationType":"works_at"}]}`)

	// The observations are memories: memory_query finds them.
	var q struct {
		Results []struct {
			Record struct {
				Content  string   `json:"content"`
				Entities []string `json:"entities"`
			} `json:"record"`
		} `json:"results"`
	}
	ok(t, cs, "memory_query", map[string]any{"query": "who makes anvils?"}, &q)
	if len(q.Results) == 0 || q.Results[0].Record.Content != "Acme: Makes anvils" || q.Results[0].Record.Entities[0] != "entity:Acme" {
		t.Fatalf("memory_query over observations: %+v", q.Results)
	}

	// The resource holds the same graph.
	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "memory://knowledge-graph"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != "application/json" || !jsonEqual(t, rr.Contents[0].Text, graph) {
		t.Fatalf("resource %+v", rr.Contents)
	}

	res = ok(t, cs, "delete_observations", map[string]any{"deletions": []any{
		map[string]any{"entityName": "Acme", "observations": []string{"Based in Arizona"}},
	}}, nil)
	if text(res) != "Observations deleted successfully" {
		t.Fatalf("delete_observations text %q", text(res))
	}
	assertStructured(t, res, `{"success":true,"message":"Observations deleted successfully"}`)

	res = ok(t, cs, "delete_relations", map[string]any{"relations": []any{
		map[string]any{"from": "John Smith", "to": "Acme", "relationType": "works_at"},
	}}, nil)
	assertStructured(t, res, `{"success":true,"message":"Relations deleted successfully"}`)
	res = ok(t, cs, "read_graph", map[string]any{}, nil)
	assertStructured(t, res, `{"entities":[
		{"name":"John Smith","entityType":"person","observations":["Speaks fluent Spanish","Lives in <Paris> & more"]},
		{"name":"Acme","entityType":"organization","observations":["Makes anvils"]}],"relations":[]}`)

	// Deleting an entity deletes its relations.
	ok(t, cs, "create_relations", map[string]any{"relations": []any{
		map[string]any{"from": "Acme", "to": "John Smith", "relationType": "employs"},
	}}, nil)
	res = ok(t, cs, "delete_entities", map[string]any{"entityNames": []string{"Acme", "Ghost"}}, nil)
	if text(res) != "Entities deleted successfully" {
		t.Fatalf("delete_entities text %q", text(res))
	}
	assertStructured(t, res, `{"success":true,"message":"Entities deleted successfully"}`)
	res = ok(t, cs, "read_graph", map[string]any{}, nil)
	assertStructured(t, res, `{"entities":[
		{"name":"John Smith","entityType":"person","observations":["Speaks fluent Spanish","Lives in <Paris> & more"]}],"relations":[]}`)
	ok(t, cs, "memory_query", map[string]any{"query": "who makes anvils?"}, &q)
	if len(q.Results) != 0 {
		t.Fatalf("deleted entity's observation found: %+v", q.Results)
	}
}

func TestCompatErrors(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	ok(t, cs, "create_entities", map[string]any{"entities": []any{map[string]any{"name": "A", "entityType": "t", "observations": []string{}}}}, nil)
	for _, c := range []struct {
		name, tool string
		args       map[string]any
		code       string
	}{
		{"entities missing (schema)", "create_entities", map[string]any{}, "invalid_argument"},
		{"entity without type (schema)", "create_entities", map[string]any{"entities": []any{map[string]any{"name": "B", "observations": []string{}}}}, "invalid_argument"},
		{"observation to missing entity", "add_observations", map[string]any{"observations": []any{map[string]any{"entityName": "B", "contents": []string{"x"}}}}, "not_found"},
		{"search without query (schema)", "search_nodes", map[string]any{}, "invalid_argument"},
		{"read_graph limit", "read_graph", map[string]any{"limit": -1}, "invalid_argument"},
		{"credential", "add_observations", map[string]any{"observations": []any{map[string]any{"entityName": "A", "contents": []string{"password: hunter2hunter2"}}}}, "gate_rejected"},
	} {
		t.Run(c.name, func(t *testing.T) { fails(t, cs, c.tool, c.args, c.code) })
	}
	// Unknown arguments are ignored, as by the reference server.
	ok(t, cs, "open_nodes", map[string]any{"names": []string{"A"}, "verbose": true}, nil)

	// Restricted agents may not delete; read-only agents may not write.
	fails(t, h.connect("restricted"), "delete_entities", map[string]any{"entityNames": []string{"A"}}, "permission_denied")
	fails(t, h.connect("ro"), "create_entities", map[string]any{"entities": []any{}}, "permission_denied")
	ok(t, h.connect("ro"), "read_graph", map[string]any{}, nil)
}

func assertStructured(t *testing.T, res *sdk.CallToolResult, want string) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, string(raw), want) {
		t.Fatalf("structured content %s, want %s", raw, want)
	}
}

func assertTextJSON(t *testing.T, res *sdk.CallToolResult, want string) {
	t.Helper()
	if !jsonEqual(t, text(res), want) {
		t.Fatalf("text content %s, want %s", text(res), want)
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("not JSON: %v: %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}
