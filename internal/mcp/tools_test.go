package mcp_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

type record struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Content  string   `json:"content"`
	Entities []string `json:"entities"`
	Version  int      `json:"version"`
	Status   string   `json:"status"`
	Citation string   `json:"citation"`
	Source   struct {
		Agent string `json:"agent"`
		Kind  string `json:"kind"`
	} `json:"source"`
	Scope struct {
		ProjectID string `json:"project_id"`
	} `json:"scope"`
	InvalidatedAt *string `json:"invalidated_at"`
}

type writeResult struct {
	Decision   string `json:"decision"`
	Record     record `json:"record"`
	Citation   string `json:"citation"`
	ApprovalID string `json:"approval_id"`
}

func TestMemoryTools(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")

	var w writeResult
	ok(t, cs, "memory_write", map[string]any{"type": "decision", "content": "Use SKIP LOCKED for job claims in the worker queue",
		"entities": []string{"system:jobs"}, "scope": map[string]any{"project_id": "memgate"}, "kind": "told"}, &w)
	if w.Decision != "accepted" || w.Record.Status != "active" || w.Record.Source.Agent != "std" || w.Record.Source.Kind != "told" ||
		w.Record.Scope.ProjectID != "memgate" || w.Citation != "mem://"+w.Record.ID+"@v1" {
		t.Fatalf("write %+v", w)
	}

	var q struct {
		Route   string `json:"route"`
		Results []struct {
			Record   record  `json:"record"`
			Score    float64 `json:"score"`
			Citation string  `json:"citation"`
		} `json:"results"`
	}
	ok(t, cs, "memory_query", map[string]any{"query": "how do workers claim jobs?", "scope": map[string]any{"project_id": "memgate"}}, &q)
	if len(q.Results) != 1 || q.Results[0].Record.ID != w.Record.ID || q.Results[0].Score <= 0 {
		t.Fatalf("query %+v", q)
	}
	ok(t, cs, "memory_query", map[string]any{"query": "how do workers claim jobs?", "scope": map[string]any{"project_id": "other"}}, &q)
	if len(q.Results) != 0 {
		t.Fatalf("query in another scope found %+v", q.Results)
	}

	// A correction supersedes: version 2 of the old record, and history.
	var w2 writeResult
	ok(t, cs, "memory_write", map[string]any{"type": "decision", "content": "Use advisory locks for job claims",
		"supersedes": w.Record.ID}, &w2)
	var got record
	ok(t, cs, "memory_get", map[string]any{"id": w.Record.ID}, &got)
	if got.Status != "superseded" || got.Version != 2 {
		t.Fatalf("superseded record %+v", got)
	}
	ok(t, cs, "memory_get", map[string]any{"id": w.Record.ID, "version": 1}, &got)
	if got.Status != "active" || got.Version != 1 {
		t.Fatalf("version 1 %+v", got)
	}
	var hist struct {
		Versions []record `json:"versions"`
	}
	ok(t, cs, "memory_history", map[string]any{"id": w.Record.ID}, &hist)
	if len(hist.Versions) != 2 || hist.Versions[0].Version != 1 || hist.Versions[1].Status != "superseded" {
		t.Fatalf("history %+v", hist)
	}

	// Forget erases the content and keeps a tombstone.
	var f struct {
		Record *record `json:"record"`
	}
	ok(t, cs, "memory_forget", map[string]any{"id": w2.Record.ID}, &f)
	if f.Record == nil || f.Record.Status != "forgotten" || f.Record.Content != "" {
		t.Fatalf("forget %+v", f)
	}
	ok(t, cs, "memory_query", map[string]any{"query": "advisory locks"}, &q)
	if len(q.Results) != 0 {
		t.Fatalf("forgotten record found: %+v", q.Results)
	}
}

func TestMemoryToolErrors(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	var w writeResult
	ok(t, cs, "memory_write", map[string]any{"type": "belief", "content": "The staging VPN drops every hour"}, &w)

	for _, c := range []struct {
		name string
		tool string
		args map[string]any
		code fault.Code
	}{
		{"unknown type (schema)", "memory_write", map[string]any{"type": "rumour", "content": "x"}, fault.InvalidArgument},
		{"unknown argument (schema)", "memory_write", map[string]any{"type": "belief", "content": "x", "colour": "red"}, fault.InvalidArgument},
		{"empty content", "memory_write", map[string]any{"type": "belief", "content": ""}, fault.InvalidArgument},
		{"bad time", "memory_write", map[string]any{"type": "belief", "content": "x", "valid_from": "yesterday"}, fault.InvalidArgument},
		{"bad entity", "memory_write", map[string]any{"type": "belief", "content": "x", "entities": []string{"no label"}}, fault.InvalidArgument},
		{"sensitive access", "memory_write", map[string]any{"type": "belief", "content": "x", "access": "sensitive"}, fault.PermissionDenied},
		{"supersede unknown", "memory_write", map[string]any{"type": "belief", "content": "x", "supersedes": memory.NewID()}, fault.InvalidArgument},
		{"empty query", "memory_query", map[string]any{"query": " "}, fault.InvalidArgument},
		{"k too large", "memory_query", map[string]any{"query": "vpn", "k": 1000}, fault.InvalidArgument},
		{"bad as_of", "memory_query", map[string]any{"query": "vpn", "as_of": "soon"}, fault.InvalidArgument},
		{"get unknown", "memory_get", map[string]any{"id": memory.NewID()}, fault.NotFound},
		{"get not an id", "memory_get", map[string]any{"id": "abc"}, fault.NotFound},
		{"get missing version", "memory_get", map[string]any{"id": w.Record.ID, "version": 9}, fault.NotFound},
		{"get no id (schema)", "memory_get", map[string]any{}, fault.InvalidArgument},
		{"history unknown", "memory_history", map[string]any{"id": memory.NewID()}, fault.NotFound},
		{"forget nothing", "memory_forget", map[string]any{}, fault.InvalidArgument},
		{"forget both", "memory_forget", map[string]any{"id": w.Record.ID, "subject": "person:alice"}, fault.InvalidArgument},
		{"forget subject as agent", "memory_forget", map[string]any{"subject": "person:alice"}, fault.PermissionDenied},
		{"forget unknown", "memory_forget", map[string]any{"id": memory.NewID()}, fault.NotFound},
		{"node bad label", "graph_upsert_node", map[string]any{"label": "Person!", "natural_key": "alice"}, fault.InvalidArgument},
		{"node bad status (schema)", "graph_upsert_node", map[string]any{"label": "person", "natural_key": "alice", "status": "gone"}, fault.InvalidArgument},
		{"edge unknown relation (schema)", "graph_upsert_edge", map[string]any{"from": "person:a", "to": "person:b", "relation": "LIKES"}, fault.InvalidArgument},
		{"edge missing node", "graph_upsert_edge", map[string]any{"from": "person:ghost", "to": "person:other", "relation": "WORKS_WITH"}, fault.NotFound},
		{"neighbors unknown node", "graph_neighbors", map[string]any{"node": "person:ghost"}, fault.NotFound},
		{"neighbors depth", "graph_neighbors", map[string]any{"node": "person:ghost", "depth": 9}, fault.InvalidArgument},
		{"path unknown node", "graph_path", map[string]any{"from": "person:ghost", "to": "person:other"}, fault.NotFound},
		{"path depth", "graph_path", map[string]any{"from": "person:a", "to": "person:b", "max_depth": 7}, fault.InvalidArgument},
		{"unknown tool arguments type", "memory_get", map[string]any{"id": 7}, fault.InvalidArgument},
	} {
		t.Run(c.name, func(t *testing.T) { fails(t, cs, c.tool, c.args, string(c.code)) })
	}

	// Another agent's agent-level record does not exist for this one.
	var private writeResult
	ok(t, h.connect("std2"), "memory_write", map[string]any{"type": "belief", "content": "std2 keeps this to itself", "access": "agent"}, &private)
	fails(t, cs, "memory_get", map[string]any{"id": private.Record.ID}, "not_found")
	fails(t, cs, "memory_forget", map[string]any{"id": private.Record.ID}, "not_found")

	// Read-only agents read but never write.
	ro := h.connect("ro")
	fails(t, ro, "memory_write", map[string]any{"type": "belief", "content": "x"}, "permission_denied")
	fails(t, ro, "graph_upsert_node", map[string]any{"label": "person", "natural_key": "x"}, "permission_denied")
	ok(t, ro, "memory_get", map[string]any{"id": w.Record.ID}, nil)
}

func TestGovernedWritesThroughMCP(t *testing.T) {
	h := newHarness(t)
	// A restricted agent's write waits for review.
	var w writeResult
	ok(t, h.connect("restricted"), "memory_write", map[string]any{"type": "belief", "content": "The build server is slow on Mondays"}, &w)
	if w.Decision != "provisional" && w.Decision != "queued" || w.ApprovalID == "" {
		t.Fatalf("restricted write %+v", w)
	}
	// Personal data is quarantined.
	ok(t, h.connect("std"), "memory_write", map[string]any{"type": "belief", "content": "Reach Dana at dana@example.com"}, &w)
	if w.Decision != "quarantined" || w.Record.Status != "quarantined" {
		t.Fatalf("PII write %+v", w)
	}
	// Every decision is in the audit chain.
	rep, err := h.svc.VerifyAudit(context.Background(), memory.DefaultWorkspace)
	if err != nil || !rep.OK {
		t.Fatalf("audit %+v %v", rep, err)
	}
}

func TestForgetSubjectAsOperator(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	ok(t, cs, "memory_write", map[string]any{"type": "belief", "content": "Alice prefers PostgreSQL", "entities": []string{"person:alice"}}, nil)
	var f struct {
		Subject *struct {
			Subject string `json:"subject"`
			Records int    `json:"records"`
			Nodes   int    `json:"nodes"`
		} `json:"subject"`
	}
	ok(t, h.connect("op"), "memory_forget", map[string]any{"subject": "person:alice"}, &f)
	if f.Subject == nil || f.Subject.Records != 1 || f.Subject.Nodes != 1 {
		t.Fatalf("forget subject %+v", f.Subject)
	}
	var q struct {
		Results []any `json:"results"`
	}
	ok(t, cs, "memory_query", map[string]any{"query": "PostgreSQL"}, &q)
	if len(q.Results) != 0 {
		t.Fatalf("forgotten subject found: %v", q.Results)
	}
}

func TestGraphTools(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("trusted")
	var n struct {
		Node struct {
			ID, Ref, Status string
			Properties      map[string]any
		}
		Created bool
	}
	ok(t, cs, "graph_upsert_node", map[string]any{"label": "system", "natural_key": "api", "properties": map[string]any{"name": "API"}}, &n)
	if !n.Created || n.Node.Ref != "system:api" || n.Node.Status != "active" || n.Node.Properties["name"] != "API" {
		t.Fatalf("node %+v", n)
	}
	ok(t, cs, "graph_upsert_node", map[string]any{"label": "system", "natural_key": "api"}, &n)
	if n.Created {
		t.Fatal("second upsert created a node")
	}
	for _, k := range []string{"postgres", "disk"} {
		ok(t, cs, "graph_upsert_node", map[string]any{"label": "system", "natural_key": k}, nil)
	}
	var e struct {
		Edge struct {
			Relation string  `json:"relation"`
			Weight   float64 `json:"weight"`
		} `json:"edge"`
		Created bool `json:"created"`
	}
	ok(t, cs, "graph_upsert_edge", map[string]any{"from": "system:api", "to": "system:postgres", "relation": "DEPENDS_ON", "weight": 2}, &e)
	if !e.Created || e.Edge.Relation != "DEPENDS_ON" || e.Edge.Weight != 2 {
		t.Fatalf("edge %+v", e)
	}
	ok(t, cs, "graph_upsert_edge", map[string]any{"from": "system:postgres", "to": "system:disk", "relation": "USES"}, nil)

	var nb struct {
		Neighbors []struct {
			Node struct {
				Ref string `json:"ref"`
			} `json:"node"`
			Depth    int    `json:"depth"`
			Relation string `json:"relation"`
		} `json:"neighbors"`
	}
	ok(t, cs, "graph_neighbors", map[string]any{"node": "system:api", "depth": 2}, &nb)
	var refs []string
	for _, x := range nb.Neighbors {
		refs = append(refs, x.Node.Ref)
	}
	if !slices.Equal(refs, []string{"system:postgres", "system:disk"}) || nb.Neighbors[1].Depth != 2 || nb.Neighbors[1].Relation != "USES" {
		t.Fatalf("neighbors %+v", nb)
	}
	ok(t, cs, "graph_neighbors", map[string]any{"node": "system:api", "relations": []string{"USES"}}, &nb)
	if len(nb.Neighbors) != 0 {
		t.Fatalf("relation filter ignored: %+v", nb)
	}

	var p struct {
		Found bool `json:"found"`
		Hops  []struct {
			Node struct {
				Ref string `json:"ref"`
			} `json:"node"`
		} `json:"hops"`
	}
	ok(t, cs, "graph_path", map[string]any{"from": "system:disk", "to": "system:api"}, &p)
	if !p.Found || len(p.Hops) != 2 || p.Hops[1].Node.Ref != "system:api" {
		t.Fatalf("path %+v", p)
	}
	ok(t, cs, "graph_path", map[string]any{"from": "system:disk", "to": "system:api", "max_depth": 1}, &p)
	if p.Found || len(p.Hops) != 0 {
		t.Fatalf("path beyond max_depth %+v", p)
	}
}

// TestPrincipalRefused: when the principal cannot be resolved (a revoked
// agent over stdio), every tool answers a tool error, never a protocol
// error, and nothing is written.
func TestPrincipalRefused(t *testing.T) {
	h := newHarness(t)
	cs := h.connectAs(func(ctx context.Context, _ *sdk.RequestExtra) (memory.Principal, error) {
		return h.svc.LocalAgent(ctx, memory.DefaultWorkspace, "std")
	})
	ok(t, cs, "memory_write", map[string]any{"type": "belief", "content": "Written before the revocation"}, nil)
	if _, err := h.svc.RevokeAgent(context.Background(), h.ps["op"], "std"); err != nil {
		t.Fatal(err)
	}
	fails(t, cs, "memory_write", map[string]any{"type": "belief", "content": "Written after the revocation"}, "unauthenticated")
	fails(t, cs, "read_graph", map[string]any{}, "unauthenticated")
	_, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "memory://knowledge-graph"})
	if err == nil || !strings.Contains(err.Error(), "unauthenticated") {
		t.Fatalf("resource read by a revoked agent: %v", err)
	}
	unknown := h.connectAs(func(ctx context.Context, _ *sdk.RequestExtra) (memory.Principal, error) {
		return h.svc.LocalAgent(ctx, memory.DefaultWorkspace, "nobody")
	})
	msg := fails(t, unknown, "memory_query", map[string]any{"query": "x"}, "not_found")
	if !strings.Contains(msg, "memgate agents create") {
		t.Fatalf("unknown agent error does not say how to create one: %q", msg)
	}
}

func TestToolList(t *testing.T) {
	h := newHarness(t)
	res, err := h.connect("std").ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"add_observations", "block_append", "block_read", "block_replace", "create_entities", "create_relations", "delete_entities", "delete_observations",
		"delete_relations", "event_append", "event_list", "graph_neighbors", "graph_path", "graph_upsert_edge", "graph_upsert_node", "memory", "memory_context", "memory_forget",
		"memory_get", "memory_history", "memory_query", "memory_write", "open_nodes", "procedure_outcome", "read_graph", "resource_cite", "resource_ingest",
		"resource_search", "search_nodes"}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		a := tool.Annotations
		// memory answers with text only, as Claude's memory tool does.
		if a == nil || tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil && tool.Name != "memory" {
			t.Errorf("%s: missing description, annotations or schemas", tool.Name)
			continue
		}
		read := slices.Contains([]string{"memory_context", "memory_query", "memory_get", "memory_history", "event_list", "graph_neighbors", "graph_path",
			"read_graph", "search_nodes", "open_nodes", "block_read", "resource_search", "resource_cite"}, tool.Name)
		destructive := strings.HasPrefix(tool.Name, "delete_") || tool.Name == "memory_forget"
		if a.ReadOnlyHint != read || a.DestructiveHint == nil || *a.DestructiveHint != destructive {
			t.Errorf("%s: readOnly %v destructive %v, want %v %v", tool.Name, a.ReadOnlyHint, a.DestructiveHint, read, destructive)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %q, want %q", names, want)
	}
}
