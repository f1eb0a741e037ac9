package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// The graph part of the access matrix: every record names a node of its
// own ("topic:<marker>") and some name shared nodes too; an operator's
// public hub node joins them all. The graph read paths must show each
// node exactly to those ruleGraphNode allows, over the records that name
// it.

const matrixHub = "topic:hub"

// matrixEntities are the entities of a matrix record: its own node, and
// one of three shared nodes for one record in three.
func (e *matrixEnv) matrixEntities(content string) []string {
	ents := []string{"topic:" + recordMarker(content)}
	if k := e.rng.IntN(9); k < 3 {
		ents = append(ents, fmt.Sprintf("topic:shared%d", k))
	}
	return ents
}

// linkGraph makes the operator's public hub of ws and an edge from it to
// every node of ws.
func (e *matrixEnv) linkGraph(ws string) {
	e.t.Helper()
	var op memory.Principal
	for _, a := range e.actorsOf(ws) {
		if a.p.Kind == memory.KindOperator {
			op = a.p
		}
	}
	if _, err := e.svc.UpsertNode(e.ctx, op, core.NodeInput{Label: "topic", NaturalKey: "hub"}); err != nil {
		e.t.Fatal(err)
	}
	for _, n := range e.nodes(ws) {
		if n.EntityKey() == matrixHub {
			continue
		}
		if _, err := e.svc.UpsertEdge(e.ctx, op, core.EdgeInput{From: matrixHub, To: n.ID, Relation: "RELATED_TO"}); err != nil {
			e.t.Fatalf("seed %d: link %s: %v", e.seed, n.EntityKey(), err)
		}
	}
}

// nodes is every node of ws, from the store.
func (e *matrixEnv) nodes(ws string) []memory.Node {
	e.t.Helper()
	var out []memory.Node
	q := store.NodeQuery{Limit: store.MaxLimit}
	for {
		page, err := e.st.ListNodes(e.ctx, ws, q)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, page...)
		if len(page) < q.Limit {
			return out
		}
		q.After = page[len(page)-1].ID
	}
}

// graphVisible is the set of node ids of a's workspace that the rules let
// a see.
func (e *matrixEnv) graphVisible(a *actor) map[string]bool {
	naming := map[string][]memory.Record{} // entity -> heads naming it
	for _, id := range e.ids[a.p.Workspace] {
		h := e.head(id)
		for _, ent := range h.Entities {
			naming[ent] = append(naming[ent], h)
		}
	}
	want := map[string]bool{}
	for _, n := range e.nodes(a.p.Workspace) {
		if n.Status == memory.NodeArchived { // erased with its last record: default reads skip it
			continue
		}
		if n.EntityKey() == matrixHub { // written directly by the operator, public
			want[n.ID] = true
			continue
		}
		if ruleGraphNode(a.p, naming[n.EntityKey()]) {
			want[n.ID] = true
		}
	}
	return want
}

// linked is the set of node ids joined to the hub.
func (e *matrixEnv) linked(ws string) map[string]bool {
	out := map[string]bool{}
	hub, err := e.st.GetNode(e.ctx, store.NodeFind{Workspace: ws, Label: "topic", Key: "hub"})
	if err != nil {
		e.t.Fatal(err)
	}
	q := store.EdgeQuery{Node: hub.ID, Limit: store.MaxLimit}
	es, err := e.st.ListEdges(e.ctx, ws, q)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, ed := range es {
		out[ed.To] = true
	}
	return out
}

func (e *matrixEnv) describeNode(id string) string {
	for _, ws := range e.workspaces {
		n, err := e.st.GetNode(e.ctx, store.NodeFind{Workspace: ws, ID: id})
		if err != nil {
			continue
		}
		var named []string
		for _, rid := range e.ids[ws] {
			if h := e.head(rid); slices.Contains(h.Entities, n.EntityKey()) {
				named = append(named, "("+e.describe(rid)+")")
			}
		}
		return fmt.Sprintf("node %s of %s, access %q, named by %s", n.EntityKey(), ws, n.Access, strings.Join(named, ", "))
	}
	return "no such record or node " + id
}

func intersect(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		if b[k] {
			out[k] = true
		}
	}
	return out
}

func init() {
	readProbes = append(readProbes,
		readProbe{name: "REST graph nodes list", applies: tokenActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
			var page core.NodePage
			e.restJSON(a, "/v1/graph/nodes?limit=500", &page)
			shown := map[string]bool{}
			for _, n := range page.Nodes {
				shown[n.ID] = true
			}
			return shown, e.graphVisible(a)
		}},
		readProbe{name: "core and REST graph node get", applies: anyActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
			shown := map[string]bool{}
			for _, ws := range e.workspaces {
				for _, n := range e.nodes(ws) {
					var found bool
					if a.token != "" && e.rng.IntN(2) == 0 {
						found = e.restFound(a, "/v1/graph/nodes/"+n.ID)
					} else {
						_, err := e.svc.GetNode(e.ctx, a.p, n.ID, false)
						found = e.found(a, "core get node", err)
					}
					if found {
						shown[n.ID] = true
					}
				}
			}
			return shown, e.graphVisible(a)
		}},
		readProbe{name: "neighbors of the hub (core, REST, MCP)", applies: anyActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
			shown := map[string]bool{}
			var hops []core.Neighbor
			switch k := e.rng.IntN(3); {
			case k == 0 && a.token != "":
				var out struct {
					Neighbors []core.Neighbor `json:"neighbors"`
				}
				e.restJSON(a, "/v1/graph/nodes/"+url.PathEscape(matrixHub)+"/neighbors?limit=1000", &out)
				hops = out.Neighbors
			case k == 1 && a.mcp != nil:
				raw, code := e.callTool(a, "graph_neighbors", map[string]any{"node": matrixHub, "limit": 1000})
				var out struct {
					Neighbors []struct {
						Node struct {
							ID string `json:"id"`
						} `json:"node"`
					} `json:"neighbors"`
				}
				if code != http.StatusOK || jsonUnmarshal(raw, &out) != nil {
					e.t.Fatalf("seed %d: graph_neighbors as %s: %d %s", e.seed, a, code, raw)
				}
				for _, h := range out.Neighbors {
					shown[h.Node.ID] = true
				}
			default:
				ns, err := e.svc.Neighbors(e.ctx, a.p, core.NeighborRequest{Node: matrixHub, Limit: 1000})
				if err != nil {
					e.t.Fatalf("seed %d: neighbors as %s: %v", e.seed, a, err)
				}
				hops = ns
			}
			for _, h := range hops {
				shown[h.Node.ID] = true
			}
			return shown, intersect(e.graphVisible(a), e.linked(a.p.Workspace))
		}},
		readProbe{name: "REST path from the hub", applies: tokenActor, run: func(e *matrixEnv, a *actor) (map[string]bool, map[string]bool) {
			shown := map[string]bool{}
			for _, n := range e.nodes(a.p.Workspace) {
				if n.EntityKey() == matrixHub || e.rng.IntN(3) != 0 { // a sample keeps the test fast
					continue
				}
				code, raw := e.rest(a, "GET", "/v1/graph/path?from="+url.QueryEscape(matrixHub)+"&to="+n.ID, nil)
				var res core.PathResult
				if code == http.StatusOK && jsonUnmarshal(raw, &res) == nil && res.Found {
					shown[n.ID] = true
				} else if code != http.StatusOK && code != http.StatusNotFound {
					e.t.Fatalf("seed %d: path as %s: %d %s", e.seed, a, code, raw)
				}
			}
			// A sample: hidden nodes must never show; visible ones may be
			// left out of the sample.
			return shown, intersect(e.graphVisible(a), e.linked(a.p.Workspace))
		}, subset: true},
	)
}

func jsonUnmarshal(raw []byte, out any) error { return json.Unmarshal(raw, out) }
