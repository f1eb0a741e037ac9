package mcp

import (
	"context"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/graph"
	"github.com/memgate/memgate/internal/memory"
)

// memgate's graph tools: typed adapters over core's UpsertNode,
// UpsertEdge, Neighbors and Path (SPEC §8).

type nodeOut struct {
	ID         string         `json:"id"`
	Label      string         `json:"label"`
	NaturalKey string         `json:"natural_key"`
	Ref        string         `json:"ref" jsonschema:"label:natural_key, how records' entities and other tools name the node"`
	Properties map[string]any `json:"properties,omitempty"`
	Provenance string         `json:"provenance"`
	Status     string         `json:"status"`
	CreatedAt  string         `json:"created_at"`
	UpdatedAt  string         `json:"updated_at"`
}

func viewNode(n memory.Node) nodeOut {
	return nodeOut{ID: n.ID, Label: n.Label, NaturalKey: n.NaturalKey, Ref: n.EntityKey(), Properties: objectOf(n.Properties),
		Provenance: string(n.Provenance), Status: string(n.Status),
		CreatedAt: n.CreatedAt.UTC().Format(time.RFC3339Nano), UpdatedAt: n.UpdatedAt.UTC().Format(time.RFC3339Nano)}
}

type edgeOut struct {
	ID            string         `json:"id"`
	From          string         `json:"from" jsonschema:"id of the node the edge starts at"`
	To            string         `json:"to" jsonschema:"id of the node the edge points to"`
	Relation      string         `json:"relation"`
	Weight        float64        `json:"weight"`
	Properties    map[string]any `json:"properties,omitempty"`
	ObservedAt    string         `json:"observed_at"`
	ValidFrom     *string        `json:"valid_from,omitempty"`
	ValidUntil    *string        `json:"valid_until,omitempty"`
	InvalidatedAt *string        `json:"invalidated_at,omitempty"`
}

func viewEdge(e memory.Edge) edgeOut {
	return edgeOut{ID: e.ID, From: e.From, To: e.To, Relation: e.Relation, Weight: e.Weight, Properties: objectOf(e.Properties),
		ObservedAt: e.ObservedAt.UTC().Format(time.RFC3339Nano), ValidFrom: timeStr(e.ValidFrom), ValidUntil: timeStr(e.ValidUntil),
		InvalidatedAt: timeStr(e.InvalidatedAt)}
}

type hopOut struct {
	Node     nodeOut `json:"node"`
	Depth    int     `json:"depth" jsonschema:"edges from the start node"`
	Relation string  `json:"relation" jsonschema:"relation of the edge it was reached by"`
	Via      string  `json:"via" jsonschema:"id of that edge"`
	From     string  `json:"from" jsonschema:"id of the node it was reached from"`
	Forward  bool    `json:"forward" jsonschema:"true when that edge points from the previous node to this one"`
}

func viewHops(ns []core.Neighbor) []hopOut {
	out := make([]hopOut, 0, len(ns))
	for _, n := range ns {
		out = append(out, hopOut{Node: viewNode(n.Node), Depth: n.Depth, Relation: n.Relation, Via: n.Via, From: n.From, Forward: n.Forward})
	}
	return out
}

type upsertNodeIn struct {
	Label      string         `json:"label" jsonschema:"what kind of thing: lowercase letters, digits or _, e.g. person, organization, system, project, concept"`
	NaturalKey string         `json:"natural_key" jsonschema:"its unique key within the label, without spaces, e.g. alice_smith, keycloak-prod"`
	Properties map[string]any `json:"properties,omitempty" jsonschema:"replaces the node's properties; name and aliases help recognise it in queries"`
	Status     string         `json:"status,omitempty" jsonschema:"provisional, active (operators and trusted agents) or archived"`
	Access     string         `json:"access,omitempty" jsonschema:"who may see the node, as for a memory: public (default when created), agent (you and operators), user, sensitive"`
}

type upsertNodeOut struct {
	Node    nodeOut `json:"node"`
	Created bool    `json:"created"`
}

type upsertEdgeIn struct {
	From       string         `json:"from" jsonschema:"the node the relation starts at: label:key or node id"`
	To         string         `json:"to" jsonschema:"the node the relation points to: label:key or node id"`
	Relation   string         `json:"relation" jsonschema:"the relation, one of the enumerated values"`
	Weight     *float64       `json:"weight,omitempty" jsonschema:"strength, a positive number (default 1)"`
	Properties map[string]any `json:"properties,omitempty" jsonschema:"replaces the edge's properties"`
	ValidFrom  string         `json:"valid_from,omitempty" jsonschema:"RFC 3339 time from which the relation holds"`
	ValidUntil string         `json:"valid_until,omitempty" jsonschema:"RFC 3339 time until which the relation holds"`
	Access     string         `json:"access,omitempty" jsonschema:"who may see the relation beyond those who see both nodes: public (default when created), agent (you and operators), user, sensitive"`
}

type upsertEdgeOut struct {
	Edge    edgeOut `json:"edge"`
	Created bool    `json:"created"`
}

type neighborsIn struct {
	Node      string   `json:"node" jsonschema:"the start node: label:key or node id"`
	Depth     int      `json:"depth,omitempty" jsonschema:"how many edges away, 1 to 3 (default 1)"`
	Relations []string `json:"relations,omitempty" jsonschema:"follow only these relations"`
	Direction string   `json:"direction,omitempty" jsonschema:"out (edges from the node), in (edges to it) or both (default)"`
	Limit     int      `json:"limit,omitempty" jsonschema:"at most this many nodes (default 100, at most 1000)"`
}

type neighborsOut struct {
	Neighbors []hopOut `json:"neighbors" jsonschema:"nearest first"`
}

type pathIn struct {
	From      string   `json:"from" jsonschema:"label:key or node id"`
	To        string   `json:"to" jsonschema:"label:key or node id"`
	MaxDepth  int      `json:"max_depth,omitempty" jsonschema:"longest path to look for, 1 to 6 edges (default 4)"`
	Relations []string `json:"relations,omitempty" jsonschema:"follow only these relations"`
}

type pathOut struct {
	Found bool     `json:"found"`
	Hops  []hopOut `json:"hops" jsonschema:"the nodes after from, in order, ending at to"`
}

const graphDoc = " Nodes are named label:key (person:alice, system:keycloak-prod); memories name the nodes they are about in their entities."

func (s *server) addGraphTools(srv *sdk.Server) {
	relations := graph.RelationList()

	add(srv, &sdk.Tool{
		Name:  "graph_upsert_node",
		Title: "Create or update a graph node",
		Description: "Create a node of the memory graph (a person, organization, system, project, concept...) or update the one with the same label and key." +
			graphDoc,
		InputSchema: schemaFor[upsertNodeIn](true, map[string][]string{"status": memory.Names(memory.NodeStatuses),
			"access": accessLevels}),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, handler(s, "graph_upsert_node", func(ctx context.Context, p memory.Principal, in upsertNodeIn) (upsertNodeOut, error) {
		props, err := rawObject("properties", in.Properties)
		if err != nil {
			return upsertNodeOut{}, err
		}
		res, err := s.svc.UpsertNode(ctx, p, core.NodeInput{Label: in.Label, NaturalKey: in.NaturalKey, Properties: props,
			Status: memory.NodeStatus(in.Status), Access: memory.Access(in.Access)})
		if err != nil {
			return upsertNodeOut{}, err
		}
		return upsertNodeOut{Node: viewNode(res.Node), Created: res.Created}, nil
	}))

	add(srv, &sdk.Tool{
		Name:  "graph_upsert_edge",
		Title: "Create or update a graph relation",
		Description: "Relate two existing nodes with a typed, directed relation (e.g. system:api DEPENDS_ON system:postgres), or observe an existing " +
			"relation again. Relations: " + strings.Join(relations, ", ") + "." + graphDoc,
		InputSchema: schemaFor[upsertEdgeIn](true, map[string][]string{"relation": relations, "access": accessLevels}),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, handler(s, "graph_upsert_edge", func(ctx context.Context, p memory.Principal, in upsertEdgeIn) (upsertEdgeOut, error) {
		props, err := rawObject("properties", in.Properties)
		if err != nil {
			return upsertEdgeOut{}, err
		}
		req := core.EdgeInput{From: in.From, To: in.To, Relation: in.Relation, Weight: in.Weight, Properties: props,
			Access: memory.Access(in.Access)}
		if req.ValidFrom, err = parseTime("valid_from", in.ValidFrom); err != nil {
			return upsertEdgeOut{}, err
		}
		if req.ValidUntil, err = parseTime("valid_until", in.ValidUntil); err != nil {
			return upsertEdgeOut{}, err
		}
		res, err := s.svc.UpsertEdge(ctx, p, req)
		if err != nil {
			return upsertEdgeOut{}, err
		}
		return upsertEdgeOut{Edge: viewEdge(res.Edge), Created: res.Created}, nil
	}))

	add(srv, &sdk.Tool{
		Name:  "graph_neighbors",
		Title: "Graph neighbors",
		Description: "The nodes related to a node, up to 3 edges away, nearest first, with the relation each was reached by: " +
			"who works with whom, what a system depends on, what a decision applies to." + graphDoc,
		InputSchema: schemaFor[neighborsIn](true, map[string][]string{"relations": relations, "direction": {graph.Out, graph.In, graph.Both}}),
		Annotations: readHints(),
	}, handler(s, "graph_neighbors", func(ctx context.Context, p memory.Principal, in neighborsIn) (neighborsOut, error) {
		ns, err := s.svc.Neighbors(ctx, p, core.NeighborRequest{Node: in.Node, Depth: in.Depth, Relations: in.Relations,
			Direction: in.Direction, Limit: in.Limit})
		if err != nil {
			return neighborsOut{}, err
		}
		return neighborsOut{Neighbors: viewHops(ns)}, nil
	}))

	add(srv, &sdk.Tool{
		Name:  "graph_path",
		Title: "Graph path",
		Description: "A shortest chain of relations between two nodes (edges followed in either direction), to explain how two things are connected; " +
			"found is false when none is within max_depth." + graphDoc,
		InputSchema: schemaFor[pathIn](true, map[string][]string{"relations": relations}),
		Annotations: readHints(),
	}, handler(s, "graph_path", func(ctx context.Context, p memory.Principal, in pathIn) (pathOut, error) {
		res, err := s.svc.Path(ctx, p, in.From, in.To, in.MaxDepth, in.Relations)
		if err != nil {
			return pathOut{}, err
		}
		return pathOut{Found: res.Found, Hops: viewHops(res.Hops)}, nil
	}))
}
