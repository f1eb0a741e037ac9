package sdk

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The knowledge graph (docs/graph.md): nodes by label and natural key,
// edges by relation, traversal, and forgetting a subject.

// Node is a graph node.
type Node struct {
	ID         string          `json:"id"`
	Label      string          `json:"label"`
	NaturalKey string          `json:"natural_key"`
	Properties json.RawMessage `json:"properties"`
	Provenance string          `json:"provenance"`
	Status     string          `json:"status"`
	Access     string          `json:"access,omitempty"`
	Writer     string          `json:"writer,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
}

// Edge is a graph edge; an invalidated edge stays as history.
type Edge struct {
	ID            string          `json:"id"`
	From          string          `json:"from"`
	To            string          `json:"to"`
	Relation      string          `json:"relation"`
	Weight        float64         `json:"weight"`
	Properties    json.RawMessage `json:"properties"`
	ObservedAt    time.Time       `json:"observed_at"`
	ValidFrom     *time.Time      `json:"valid_from"`
	ValidUntil    *time.Time      `json:"valid_until"`
	InvalidatedAt *time.Time      `json:"invalidated_at"`
	Access        string          `json:"access,omitempty"`
	Writer        string          `json:"writer,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
}

// NodeInput creates or updates a node; Label and NaturalKey are required.
type NodeInput struct {
	Label      string          `json:"label"`
	NaturalKey string          `json:"natural_key"`
	Properties json.RawMessage `json:"properties,omitempty"`
	Provenance string          `json:"provenance,omitempty"`
	Status     string          `json:"status,omitempty"`
	Access     string          `json:"access,omitempty"`
}

// NodeResult is a node and whether the call created it.
type NodeResult struct {
	Node    Node `json:"node"`
	Created bool `json:"created"`
}

// EdgeInput creates or updates the live edge joining two nodes (ids or
// label:key) by a relation.
type EdgeInput struct {
	From       string          `json:"from"`
	To         string          `json:"to"`
	Relation   string          `json:"relation"`
	Weight     *float64        `json:"weight,omitempty"`
	Properties json.RawMessage `json:"properties,omitempty"`
	ValidFrom  *time.Time      `json:"valid_from,omitempty"`
	ValidUntil *time.Time      `json:"valid_until,omitempty"`
	Access     string          `json:"access,omitempty"`
}

// EdgeResult is an edge and whether the call created it.
type EdgeResult struct {
	Edge    Edge `json:"edge"`
	Created bool `json:"created"`
}

// Neighbor is a node reached from another, with how.
type Neighbor struct {
	Node     Node   `json:"node"`
	Depth    int    `json:"depth"`
	Relation string `json:"relation"`
	Via      string `json:"via"`
	From     string `json:"from"`
	Forward  bool   `json:"forward"`
}

// PathResult is a shortest path, when one was found.
type PathResult struct {
	Found bool       `json:"found"`
	Hops  []Neighbor `json:"hops"`
}

// NodePage is one page of nodes.
type NodePage struct {
	Nodes      []Node `json:"nodes"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// GraphHealth is the graph's healthcheck.
type GraphHealth struct {
	OK         bool `json:"ok"`
	IndexNodes int  `json:"index_nodes"`
	IndexEdges int  `json:"index_edges"`
}

// ForgetReport counts what forgetting a subject erased.
type ForgetReport struct {
	Subject  string `json:"subject"`
	Records  int    `json:"records"`
	Messages int    `json:"messages"`
	Nodes    int    `json:"nodes"`
	Edges    int    `json:"edges"`
}

// UpsertNode creates or updates a node: POST /v1/graph/nodes.
func (c *Client) UpsertNode(ctx context.Context, in NodeInput) (NodeResult, error) {
	var res NodeResult
	err := c.do(ctx, http.MethodPost, "/v1/graph/nodes", nil, in, &res)
	return res, err
}

// NodesByLabels lists nodes with any of labels: GET /v1/graph/nodes.
func (c *Client) NodesByLabels(ctx context.Context, labels []string, includeArchived bool, cursor string, limit int) (NodePage, error) {
	q := pageQuery(cursor, limit)
	for _, l := range labels {
		q.Add("label", l)
	}
	if includeArchived {
		q.Set("include_archived", "true")
	}
	var res NodePage
	err := c.do(ctx, http.MethodGet, "/v1/graph/nodes", q, nil, &res)
	return res, err
}

// GetNode returns a node by id or label:key: GET /v1/graph/nodes/{ref}.
func (c *Client) GetNode(ctx context.Context, ref string, includeArchived bool) (Node, error) {
	p, err := pathID("/v1/graph/nodes/", ref, "node ref")
	if err != nil {
		return Node{}, err
	}
	q := url.Values{}
	if includeArchived {
		q.Set("include_archived", "true")
	}
	var res Node
	err = c.do(ctx, http.MethodGet, p, q, nil, &res)
	return res, err
}

// ArchiveNode archives a node: POST /v1/graph/nodes/{ref}/archive.
func (c *Client) ArchiveNode(ctx context.Context, ref string) (Node, error) {
	p, err := pathID("/v1/graph/nodes/", ref, "node ref")
	if err != nil {
		return Node{}, err
	}
	var res Node
	err = c.do(ctx, http.MethodPost, p+"/archive", nil, nil, &res)
	return res, err
}

// NeighborQuery selects the neighbors of a node; zero values are the
// server's defaults (depth 1, both directions).
type NeighborQuery struct {
	Depth           int
	Relations       []string
	Direction       string // out, in or both
	Limit           int
	IncludeArchived bool
}

// Neighbors returns the nodes within depth 1-3 of a node: GET
// /v1/graph/nodes/{ref}/neighbors.
func (c *Client) Neighbors(ctx context.Context, ref string, nq NeighborQuery) ([]Neighbor, error) {
	p, err := pathID("/v1/graph/nodes/", ref, "node ref")
	if err != nil {
		return nil, err
	}
	q := pageQuery("", nq.Limit)
	if nq.Depth > 0 {
		q.Set("depth", strconv.Itoa(nq.Depth))
	}
	if len(nq.Relations) > 0 {
		q.Set("relation", strings.Join(nq.Relations, ","))
	}
	if nq.Direction != "" {
		q.Set("direction", nq.Direction)
	}
	if nq.IncludeArchived {
		q.Set("include_archived", "true")
	}
	var env struct {
		Neighbors []Neighbor `json:"neighbors"`
	}
	err = c.do(ctx, http.MethodGet, p+"/neighbors", q, nil, &env)
	return env.Neighbors, err
}

// Path finds a shortest path between two nodes: GET /v1/graph/path.
func (c *Client) Path(ctx context.Context, from, to string, maxDepth int, relations []string) (PathResult, error) {
	q := url.Values{"from": {from}, "to": {to}}
	if maxDepth > 0 {
		q.Set("max_depth", strconv.Itoa(maxDepth))
	}
	if len(relations) > 0 {
		q.Set("relation", strings.Join(relations, ","))
	}
	var res PathResult
	err := c.do(ctx, http.MethodGet, "/v1/graph/path", q, nil, &res)
	return res, err
}

// UpsertEdge creates or updates the live edge: POST /v1/graph/edges.
func (c *Client) UpsertEdge(ctx context.Context, in EdgeInput) (EdgeResult, error) {
	var res EdgeResult
	err := c.do(ctx, http.MethodPost, "/v1/graph/edges", nil, in, &res)
	return res, err
}

// InvalidateEdge invalidates an edge (it stays as history): DELETE
// /v1/graph/edges/{id}.
func (c *Client) InvalidateEdge(ctx context.Context, id string) (Edge, error) {
	p, err := pathID("/v1/graph/edges/", id, "edge id")
	if err != nil {
		return Edge{}, err
	}
	var res Edge
	err = c.do(ctx, http.MethodDelete, p, nil, nil, &res)
	return res, err
}

// GraphHealthcheck checks the graph store and index: GET /v1/graph/health.
func (c *Client) GraphHealthcheck(ctx context.Context) (GraphHealth, error) {
	var res GraphHealth
	err := c.do(ctx, http.MethodGet, "/v1/graph/health", nil, nil, &res)
	return res, err
}

// ForgetSubject forgets every record that mentions a subject or is scoped
// to it, its messages, node properties and edges (operators): POST
// /v1/graph/forget_subject. subject is e.g. "user:alice".
func (c *Client) ForgetSubject(ctx context.Context, subject string) (ForgetReport, error) {
	var res ForgetReport
	err := c.do(ctx, http.MethodPost, "/v1/graph/forget_subject", nil, map[string]string{"subject": subject}, &res)
	return res, err
}
