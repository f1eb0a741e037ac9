package core

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/graph"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// The graph operations of SPEC §8. Writes go to the store in audited
// transactions; traversals (neighbors, path, labels, PPR) run on the
// in-memory graph index, which is loaded from the store on first use and
// then follows the graph change log (follow.go).

// graphIndex is the Service's in-memory graph. seq is the position in
// the store's graph change log that it reflects at least.
type graphIndex struct {
	x   *graph.Index
	seq int64
}

func (g *graphIndex) apply(ws string, fx graphEffects) {
	for _, n := range fx.nodes {
		g.x.PutNode(indexNode(ws, n))
	}
	for _, e := range fx.edges {
		if e.InvalidatedAt != nil {
			g.x.RemoveEdge(ws, e.ID)
			continue
		}
		ie := graph.Edge{ID: e.ID, Workspace: ws, From: e.From, To: e.To, Relation: e.Relation, Weight: e.Weight}
		if e.Access != "" {
			v := visOf(memory.Grant{Access: e.Access, Writer: e.Writer})
			ie.Vis = &v
		}
		g.x.PutEdge(ie)
	}
	for _, id := range fx.deletedEdges {
		g.x.RemoveEdge(ws, id)
	}
}

// indexNode is what the index keeps of a node: its name and aliases (for
// recognising it in queries) come from properties.name and
// properties.aliases.
func indexNode(ws string, n memory.Node) graph.Node {
	var p struct {
		Name    string   `json:"name"`
		Aliases []string `json:"aliases"`
	}
	_ = json.Unmarshal(n.Properties, &p)
	if strings.HasPrefix(n.NaturalKey, "forgotten-") {
		p.Name, p.Aliases = "", nil
	}
	return graph.Node{ID: n.ID, Workspace: ws, Label: n.Label, Key: n.NaturalKey, Name: p.Name, Aliases: p.Aliases,
		Archived: n.Status == memory.NodeArchived, Vis: visOf(nodeGrants(n)...)}
}

// LoadGraph builds the in-memory graph index from the store. serve calls
// it at start; otherwise the first traversal does.
func (s *Service) LoadGraph(ctx context.Context) error {
	s.graphMu.Lock()
	defer s.graphMu.Unlock()
	if s.graph != nil {
		return nil
	}
	// The head is read before the scan: changes committed during the
	// scan are then applied again by the first catch-up, which is
	// harmless (it applies current rows), rather than missed.
	head, err := s.store.GraphChangeHead(ctx)
	if err != nil {
		return storeErr(err, "graph")
	}
	g := &graphIndex{x: graph.New(), seq: head}
	pending := map[string][]string{} // workspace -> entities of nodes without grants yet
	err = s.store.ScanGraph(ctx, func(ws string, n *memory.Node, e *memory.Edge) error {
		if n != nil {
			g.apply(ws, graphEffects{nodes: []memory.Node{*n}})
			if n.Grants == nil {
				pending[ws] = append(pending[ws], n.EntityKey())
			}
		} else {
			g.apply(ws, graphEffects{edges: []memory.Edge{*e}})
		}
		return nil
	})
	if err != nil {
		return storeErr(err, "graph")
	}
	// Nodes written before memgate kept their record grants get them now,
	// once, stored.
	nodes, wss, err := s.computeMissingGrants(ctx, pending)
	if err != nil {
		return err
	}
	for i, n := range nodes {
		g.apply(wss[i], graphEffects{nodes: []memory.Node{n}})
	}
	s.graph = g
	return nil
}

// CatchUpGraph applies the graph change log written since the graph
// index was loaded or last caught up, so nodes and edges written by
// other processes (the CLI, other replicas) become traversable. Each
// change applies the row as it is now; an edge that is gone was deleted.
// Before the first load there is nothing to catch up: the load reads it
// all. Catch-ups run one at a time, so an older read of a node never
// lands after a newer one. It returns how many changes it applied.
func (s *Service) CatchUpGraph(ctx context.Context) (int, error) {
	s.graphCatchMu.Lock()
	defer s.graphCatchMu.Unlock()
	s.graphMu.Lock()
	g, _ := s.graph.(*graphIndex)
	var from int64
	if g != nil {
		from = g.seq
	}
	s.graphMu.Unlock()
	if g == nil {
		return 0, nil
	}
	const page = 1000
	n := 0
	for {
		chs, err := s.store.ListGraphChanges(ctx, from, page)
		if err != nil {
			return n, storeErr(err, "graph changes")
		}
		for _, ch := range chs {
			var fx graphEffects
			switch ch.Kind {
			case store.GraphNode:
				nd, err := s.store.GetNode(ctx, store.NodeFind{Workspace: ch.Workspace, ID: ch.ID})
				if err == nil {
					fx.nodes = []memory.Node{nd}
				} else if !errors.Is(err, store.ErrNotFound) {
					return n, storeErr(err, "graph changes") // retried from this change next time
				}
			case store.GraphEdge:
				e, err := s.store.GetEdge(ctx, ch.Workspace, ch.ID)
				switch {
				case err == nil:
					fx.edges = []memory.Edge{e}
				case errors.Is(err, store.ErrNotFound):
					fx.deletedEdges = []string{ch.ID}
				default:
					return n, storeErr(err, "graph changes")
				}
			}
			s.graphMu.Lock()
			g.apply(ch.Workspace, fx)
			g.seq = max(g.seq, ch.Seq)
			s.graphMu.Unlock()
			n++
		}
		if len(chs) < page {
			return n, nil
		}
		from = chs[len(chs)-1].Seq
	}
}

func (s *Service) graphX(ctx context.Context) (*graph.Index, error) {
	if err := s.LoadGraph(ctx); err != nil {
		return nil, err
	}
	return s.graph.(*graphIndex).x, nil
}

// NodeInput is an upsert of a node by (label, natural key).
type NodeInput struct {
	Label      string                `json:"label"`
	NaturalKey string                `json:"natural_key"`
	Properties json.RawMessage       `json:"properties,omitempty"`
	Provenance memory.NodeProvenance `json:"provenance,omitempty"`
	Status     memory.NodeStatus     `json:"status,omitempty"`
	// Access is who may see the node, as for a record (default public
	// when the node is created; kept when it is updated without one).
	Access memory.Access `json:"access,omitempty"`
}

// NodeResult answers an upsert.
type NodeResult struct {
	Node    memory.Node `json:"node"`
	Created bool        `json:"created"`
}

// graphWriter checks that p may write the graph: operators, and agents
// that may write at all.
func graphWriter(p memory.Principal) error {
	switch {
	case p.Kind == memory.KindOperator:
		return nil
	case p.Kind == memory.KindAgent && p.Trust != memory.ReadOnly:
		return nil
	}
	return fault.New(fault.PermissionDenied, "this principal may not write the graph")
}

func (s *Service) checkProperties(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > s.policy.Limits.MaxMetadataBytes {
		return nil, fault.New(fault.TooLarge, "properties: exceed the metadata limit").With("field", "properties")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fault.Field("properties", "must be a JSON object")
	}
	if err := gate.CheckJSON("properties", raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// UpsertNode creates the node with a label and natural key, or updates
// it: given properties replace the old ones; a given status applies.
// Operators' nodes default to provenance operator and status active;
// agents' are provenance proposed with the policy's status (trusted
// agents' active).
func (s *Service) UpsertNode(ctx context.Context, p memory.Principal, in NodeInput) (NodeResult, error) {
	props, prov, status, err := s.checkNodeInput(ctx, p, in)
	if err != nil {
		return NodeResult{}, err
	}
	if err := s.rateLimit(p); err != nil {
		return NodeResult{}, err
	}
	now := s.clock()
	var res NodeResult
	err = s.tx(ctx, "node", func(tx store.Tx) error {
		var err error
		if res, err = s.upsertNodeTx(ctx, tx, p, in, props, prov, status, now); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, p.Workspace, p, "", "graph.node.upsert", now, map[string]any{
			"node_id": res.Node.ID, "label": res.Node.Label, "created": res.Created, "status": string(res.Node.Status),
			"access": string(res.Node.Access), "properties_sha256": memory.SHA256Hex(string(res.Node.Properties))})
		return err
	})
	if err != nil {
		return NodeResult{}, err
	}
	s.logMoved(ctx)
	return res, nil
}

// checkNodeInput is the gate of a node upsert: p may write the graph,
// the key, properties and access are valid and screened, and p may give
// the provenance and status it asks for. It returns the checked
// properties and the provenance and status a new node gets.
func (s *Service) checkNodeInput(ctx context.Context, p memory.Principal, in NodeInput) (json.RawMessage, memory.NodeProvenance, memory.NodeStatus, error) {
	if err := graphWriter(p); err != nil {
		return nil, "", "", err
	}
	if !gate.ValidEntityKey(in.Label + ":" + in.NaturalKey) {
		return nil, "", "", fault.Field("natural_key", "label must be lowercase letters, digits or '_' and natural_key non-empty without whitespace, together at most 256 bytes")
	}
	props, err := s.checkProperties(in.Properties)
	if err != nil {
		return nil, "", "", err
	}
	if err := s.graphAccess(p, in.Access); err != nil {
		return nil, "", "", err
	}
	if err := s.screenGraphWrite(ctx, p, "graph.node.upsert", "natural_key", in.NaturalKey, "properties", props); err != nil {
		return nil, "", "", err
	}
	if in.Provenance != "" && !slices.Contains(memory.Provenances, in.Provenance) {
		return nil, "", "", fault.Field("provenance", "must be one of operator, proposed, imported, extracted")
	}
	if in.Status != "" && !slices.Contains(memory.NodeStatuses, in.Status) {
		return nil, "", "", fault.Field("status", "must be one of provisional, active, archived")
	}
	prov, status := s.nodeOrigin(p, "")
	if p.Kind == memory.KindAgent {
		if in.Provenance != "" && in.Provenance != memory.ProvProposed {
			return nil, "", "", fault.New(fault.PermissionDenied, "agents' nodes are always provenance proposed").With("field", "provenance")
		}
		if p.Trust == memory.Trusted {
			status = memory.NodeActive
		}
		if in.Status == memory.NodeActive && p.Trust != memory.Trusted {
			return nil, "", "", fault.New(fault.PermissionDenied, "only operators and trusted agents make nodes active").With("field", "status")
		}
	} else if in.Provenance != "" {
		prov = in.Provenance
	}
	if in.Status != "" {
		status = in.Status
	}
	return props, prov, status, nil
}

// upsertNodeTx creates the node in tx, or updates the one with its key
// when p may see it.
func (s *Service) upsertNodeTx(ctx context.Context, tx store.Tx, p memory.Principal, in NodeInput, props json.RawMessage, prov memory.NodeProvenance, status memory.NodeStatus, now time.Time) (NodeResult, error) {
	n, err := tx.GetNode(ctx, store.NodeFind{Workspace: p.Workspace, Label: in.Label, Key: in.NaturalKey})
	created := false
	if errors.Is(err, store.ErrNotFound) {
		np := props
		if np == nil {
			np, _ = json.Marshal(map[string]string{"name": strings.ReplaceAll(in.NaturalKey, "_", " ")})
		}
		access := in.Access
		if access == "" {
			access = memory.Public
		}
		gs, gerr := recordGrants(ctx, tx, p.Workspace, in.Label+":"+in.NaturalKey)
		if gerr != nil {
			return NodeResult{}, gerr
		}
		// A concurrent upsert that created the key first makes this
		// one an update, not a conflict.
		n, created, err = tx.EnsureNode(ctx, p.Workspace, memory.Node{ID: memory.NewID(), Label: in.Label, NaturalKey: in.NaturalKey,
			Properties: np, Provenance: prov, Status: status, Access: access, Writer: ownerKey(p), Grants: gs, CreatedAt: now, UpdatedAt: now})
	}
	switch {
	case err != nil:
		return NodeResult{}, err
	case created:
		return NodeResult{Node: n, Created: true}, nil
	}
	if n, err = withGrants(ctx, tx, p.Workspace, n); err != nil {
		return NodeResult{}, err
	}
	if !nodeVisible(p, n) {
		// The key is taken by a node p may not see: p may
		// neither change it nor learn what it holds.
		return NodeResult{}, fault.New(fault.Conflict, "natural_key: taken by a node this principal may not see; choose another key or ask an operator").
			With("field", "natural_key")
	}
	if props != nil {
		n.Properties = props
	}
	if in.Access != "" {
		n.Access, n.Writer = in.Access, ownerKey(p)
	}
	if in.Status != "" {
		n.Status = in.Status
	}
	if p.Kind == memory.KindOperator && in.Provenance != "" {
		n.Provenance = in.Provenance
	}
	n.UpdatedAt = now
	if err := tx.UpdateNode(ctx, p.Workspace, n); err != nil {
		return NodeResult{}, err
	}
	return NodeResult{Node: n}, nil
}

// resolveNode finds a node by id or "label:key".
func resolveNode(ctx context.Context, r store.Reader, ws, ref, field string) (memory.Node, error) {
	var n memory.Node
	var err error
	if memory.ValidID(ref) {
		n, err = r.GetNode(ctx, store.NodeFind{Workspace: ws, ID: ref})
	} else if label, key, ok := strings.Cut(ref, ":"); ok && label != "" && key != "" {
		n, err = r.GetNode(ctx, store.NodeFind{Workspace: ws, Label: label, Key: key})
	} else {
		return memory.Node{}, fault.Field(field, "must be a node id or label:key")
	}
	if errors.Is(err, store.ErrNotFound) {
		return memory.Node{}, fault.New(fault.NotFound, field+": no such node").With("field", field)
	}
	return n, storeErr(err, "node")
}

// EdgeInput is an upsert of the live edge joining two nodes by a
// relation. From and To are node ids or "label:key".
type EdgeInput struct {
	From       string          `json:"from"`
	To         string          `json:"to"`
	Relation   string          `json:"relation"`
	Weight     *float64        `json:"weight,omitempty"`
	Properties json.RawMessage `json:"properties,omitempty"`
	ValidFrom  *time.Time      `json:"valid_from,omitempty"`
	ValidUntil *time.Time      `json:"valid_until,omitempty"`
	// Access is who may see the edge beyond those who see both ends
	// (default public when the edge is created; kept when it is observed
	// again without one).
	Access memory.Access `json:"access,omitempty"`
}

// EdgeResult answers an edge upsert.
type EdgeResult struct {
	Edge    memory.Edge `json:"edge"`
	Created bool        `json:"created"`
}

// UpsertEdge creates the live edge From -Relation-> To, or observes it
// again and updates what the input gives. The relation must be one of
// SPEC §8's.
func (s *Service) UpsertEdge(ctx context.Context, p memory.Principal, in EdgeInput) (EdgeResult, error) {
	if err := graphWriter(p); err != nil {
		return EdgeResult{}, err
	}
	rel, ok := graph.NormalizeRelation(in.Relation)
	if !ok {
		return EdgeResult{}, fault.Field("relation", "must be one of "+strings.Join(graph.RelationList(), ", ")).With("allowed", graph.RelationList())
	}
	if in.Weight != nil && (*in.Weight <= 0 || *in.Weight > 1e6 || *in.Weight != *in.Weight) {
		return EdgeResult{}, fault.Field("weight", "must be a positive number up to 1e6")
	}
	if in.ValidFrom != nil && in.ValidUntil != nil && !in.ValidUntil.After(*in.ValidFrom) {
		return EdgeResult{}, fault.Field("valid_until", "must be after valid_from")
	}
	props, err := s.checkProperties(in.Properties)
	if err != nil {
		return EdgeResult{}, err
	}
	if err := s.graphAccess(p, in.Access); err != nil {
		return EdgeResult{}, err
	}
	if err := s.screenGraphWrite(ctx, p, "graph.edge.upsert", "", "", "properties", props); err != nil {
		return EdgeResult{}, err
	}
	if err := s.rateLimit(p); err != nil {
		return EdgeResult{}, err
	}
	now := s.clock()
	var res EdgeResult
	err = s.tx(ctx, "edge", func(tx store.Tx) error {
		from, err := visibleNode(ctx, tx, p, in.From, "from")
		if err != nil {
			return err
		}
		to, err := visibleNode(ctx, tx, p, in.To, "to")
		if err != nil {
			return err
		}
		if from.ID == to.ID {
			return fault.Field("to", "an edge joins two different nodes")
		}
		apply := func(e *memory.Edge) {
			if in.Weight != nil {
				e.Weight = *in.Weight
			}
			if props != nil {
				e.Properties = props
			}
			if in.ValidFrom != nil {
				e.ValidFrom = memory.CanonPtr(in.ValidFrom)
			}
			if in.ValidUntil != nil {
				e.ValidUntil = memory.CanonPtr(in.ValidUntil)
			}
			if in.Access != "" {
				e.Access, e.Writer = in.Access, ownerKey(p)
			}
			e.ObservedAt, e.UpdatedAt = now, now
		}
		// update observes an existing edge again; one p may not see it
		// may neither change nor learn about.
		update := func(e *memory.Edge) error {
			if !edgeVisible(p, *e, from, to) {
				return fault.New(fault.Conflict, "relation: these nodes are already joined by this relation in an edge this principal may not see").
					With("field", "relation")
			}
			apply(e)
			return tx.UpdateEdge(ctx, p.Workspace, *e)
		}
		e, err := tx.FindLiveEdge(ctx, p.Workspace, from.ID, to.ID, rel)
		if errors.Is(err, store.ErrNotFound) {
			e = memory.Edge{ID: memory.NewID(), From: from.ID, To: to.ID, Relation: rel, Weight: 1, Properties: json.RawMessage(`{}`),
				ObservedAt: now, CreatedAt: now, Access: memory.Public, Writer: ownerKey(p)}
			apply(&e)
			// A concurrent upsert that created the edge first makes this
			// one an update of it, not a conflict.
			e, res.Created, err = tx.EnsureEdge(ctx, p.Workspace, e)
			if err == nil && !res.Created {
				err = update(&e)
			}
		} else if err == nil {
			err = update(&e)
		}
		if err != nil {
			return err
		}
		res.Edge = e
		_, err = appendAudit(ctx, tx, p.Workspace, p, "", "graph.edge.upsert", now, map[string]any{
			"edge_id": e.ID, "from": e.From, "to": e.To, "relation": e.Relation, "created": res.Created})
		return err
	})
	if err != nil {
		return EdgeResult{}, err
	}
	s.logMoved(ctx)
	return res, nil
}

// InvalidateEdge ends a live edge; it stays as history, never traversed.
func (s *Service) InvalidateEdge(ctx context.Context, p memory.Principal, id string) (memory.Edge, error) {
	if err := graphWriter(p); err != nil {
		return memory.Edge{}, err
	}
	if !memory.ValidID(id) {
		return memory.Edge{}, fault.New(fault.NotFound, "edge not found")
	}
	now := s.clock()
	var out memory.Edge
	err := s.tx(ctx, "edge", func(tx store.Tx) error {
		e, err := tx.GetEdge(ctx, p.Workspace, id)
		if err != nil {
			return storeErr(err, "edge")
		}
		if ok, err := s.edgeVisibleIn(ctx, tx, p, e); err != nil || !ok {
			if err != nil {
				return err
			}
			return fault.New(fault.NotFound, "edge not found")
		}
		if e.InvalidatedAt != nil {
			out = e
			return nil
		}
		e.InvalidatedAt, e.UpdatedAt = &now, now
		if err := tx.UpdateEdge(ctx, p.Workspace, e); err != nil {
			return err
		}
		out = e
		_, err = appendAudit(ctx, tx, p.Workspace, p, "", "graph.edge.invalidate", now, map[string]any{"edge_id": e.ID, "relation": e.Relation})
		return err
	})
	if err != nil {
		return memory.Edge{}, err
	}
	s.logMoved(ctx)
	return out, nil
}

// ArchiveNode marks a node archived (mark_archived): hidden from default
// reads and traversals, kept.
func (s *Service) ArchiveNode(ctx context.Context, p memory.Principal, ref string) (memory.Node, error) {
	if err := graphWriter(p); err != nil {
		return memory.Node{}, err
	}
	now := s.clock()
	var out memory.Node
	err := s.tx(ctx, "node", func(tx store.Tx) error {
		n, err := visibleNode(ctx, tx, p, ref, "node")
		if err != nil {
			return err
		}
		out = n
		if n.Status == memory.NodeArchived {
			return nil
		}
		n.Status, n.UpdatedAt = memory.NodeArchived, now
		if err := tx.UpdateNode(ctx, p.Workspace, n); err != nil {
			return err
		}
		out = n
		_, err = appendAudit(ctx, tx, p.Workspace, p, "", "graph.node.archive", now, map[string]any{"node_id": n.ID, "label": n.Label})
		return err
	})
	if err != nil {
		return memory.Node{}, err
	}
	s.logMoved(ctx)
	return out, nil
}

// GetNode returns a node by id or label:key; archived nodes only when
// asked for.
func (s *Service) GetNode(ctx context.Context, p memory.Principal, ref string, includeArchived bool) (memory.Node, error) {
	n, err := visibleNode(ctx, s.store, p, ref, "node")
	if err != nil {
		return memory.Node{}, err
	}
	if n.Status == memory.NodeArchived && !includeArchived {
		return memory.Node{}, fault.New(fault.NotFound, "node: no such node (it is archived; ask with include_archived)")
	}
	return n, nil
}

// NeighborRequest is a neighbors query.
type NeighborRequest struct {
	Node            string
	Depth           int
	Relations       []string
	Direction       string
	Limit           int
	IncludeArchived bool
}

// Neighbor is one node reached, with how.
type Neighbor struct {
	Node     memory.Node `json:"node"`
	Depth    int         `json:"depth"`
	Relation string      `json:"relation"`
	Via      string      `json:"via"`
	From     string      `json:"from"`
	Forward  bool        `json:"forward"`
}

func (s *Service) checkRelations(rels []string) ([]string, error) {
	out := make([]string, 0, len(rels))
	for i, r := range rels {
		n, ok := graph.NormalizeRelation(r)
		if !ok {
			return nil, fault.Field("relations["+strconv.Itoa(i)+"]", "must be one of "+strings.Join(graph.RelationList(), ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

// Neighbors returns the nodes within depth (1-3) hops of a node, nearest
// first.
func (s *Service) Neighbors(ctx context.Context, p memory.Principal, req NeighborRequest) ([]Neighbor, error) {
	if req.Depth == 0 {
		req.Depth = 1
	}
	if req.Depth < 1 || req.Depth > 3 {
		return nil, fault.Field("depth", "must be between 1 and 3")
	}
	switch req.Direction {
	case "", "both", "out", "in":
	default:
		return nil, fault.Field("direction", "must be out, in or both")
	}
	if req.Limit < 0 || req.Limit > 1000 {
		return nil, fault.Field("limit", "must be between 1 and 1000")
	}
	rels, err := s.checkRelations(req.Relations)
	if err != nil {
		return nil, err
	}
	start, err := s.GetNode(ctx, p, req.Node, req.IncludeArchived)
	if err != nil {
		return nil, err
	}
	x, err := s.graphX(ctx)
	if err != nil {
		return nil, err
	}
	hops, err := x.Neighbors(graph.NeighborQuery{Workspace: p.Workspace, Node: start.ID, Depth: req.Depth, Relations: rels,
		Direction: req.Direction, Limit: req.Limit, IncludeArchived: req.IncludeArchived, Viewer: viewerOf(p)})
	if err != nil {
		return nil, fault.Wrap(fault.InvalidArgument, err, "%v", err)
	}
	return s.hopNodes(ctx, p.Workspace, hops)
}

// hopNodes loads the nodes of hops from the store, so answers carry the
// committed state.
func (s *Service) hopNodes(ctx context.Context, ws string, hops []graph.Hop) ([]Neighbor, error) {
	out := make([]Neighbor, 0, len(hops))
	for _, h := range hops {
		n, err := s.store.GetNode(ctx, store.NodeFind{Workspace: ws, ID: h.Node})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, storeErr(err, "node")
		}
		out = append(out, Neighbor{Node: n, Depth: h.Depth, Relation: h.Relation, Via: h.Via, From: h.From, Forward: h.Forward})
	}
	return out, nil
}

// PathResult is a shortest path, or found false.
type PathResult struct {
	Found bool       `json:"found"`
	Hops  []Neighbor `json:"hops"`
}

// Path finds a shortest path of at most maxDepth (1-6) edges between two
// nodes, by breadth-first search over edges in either direction.
func (s *Service) Path(ctx context.Context, p memory.Principal, from, to string, maxDepth int, relations []string) (PathResult, error) {
	if maxDepth == 0 {
		maxDepth = 4
	}
	if maxDepth < 1 || maxDepth > 6 {
		return PathResult{}, fault.Field("max_depth", "must be between 1 and 6")
	}
	rels, err := s.checkRelations(relations)
	if err != nil {
		return PathResult{}, err
	}
	a, err := s.GetNode(ctx, p, from, false)
	if err != nil {
		return PathResult{}, err
	}
	b, err := s.GetNode(ctx, p, to, false)
	if err != nil {
		return PathResult{}, err
	}
	x, err := s.graphX(ctx)
	if err != nil {
		return PathResult{}, err
	}
	hops, ok := x.PathFor(p.Workspace, a.ID, b.ID, maxDepth, rels, viewerOf(p))
	if !ok {
		return PathResult{Hops: []Neighbor{}}, nil
	}
	ns, err := s.hopNodes(ctx, p.Workspace, hops)
	return PathResult{Found: true, Hops: ns}, err
}

// NodePage is a page of nodes.
type NodePage struct {
	Nodes      []memory.Node `json:"nodes"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// NodesByLabels lists nodes with any of labels (query_by_labels), by id.
func (s *Service) NodesByLabels(ctx context.Context, p memory.Principal, labels []string, includeArchived bool, cursor string, limit int) (NodePage, error) {
	if limit == 0 {
		limit = store.DefaultLimit
	}
	if limit < 1 || limit > store.MaxLimit {
		return NodePage{}, fault.Field("limit", "must be between 1 and 500")
	}
	q := store.NodeQuery{Labels: labels, After: cursor, Limit: store.MaxLimit}
	if !includeArchived {
		q.Statuses = []memory.NodeStatus{memory.NodeProvisional, memory.NodeActive}
	}
	// Nodes p may not see are skipped, so a page is filled from as many
	// store pages as it takes.
	ns := []memory.Node{}
	for len(ns) <= limit {
		got, err := s.store.ListNodes(ctx, p.Workspace, q)
		if err != nil {
			return NodePage{}, storeErr(err, "nodes")
		}
		for _, n := range got {
			if n, err = withGrants(ctx, s.store, p.Workspace, n); err != nil {
				return NodePage{}, storeErr(err, "nodes")
			}
			if nodeVisible(p, n) && len(ns) <= limit {
				ns = append(ns, n)
			}
		}
		if len(got) < q.Limit {
			break
		}
		q.After = got[len(got)-1].ID
	}
	page := NodePage{Nodes: ns}
	if len(ns) > limit {
		page.Nodes = ns[:limit]
		page.NextCursor = ns[limit-1].ID
	}
	return page, nil
}

// GraphHealth is the graph healthcheck: the store's counts and the
// in-memory index's.
type GraphHealth struct {
	OK         bool `json:"ok"`
	IndexNodes int  `json:"index_nodes"`
	IndexEdges int  `json:"index_edges"`
}

// GraphHealthcheck reports whether the graph store answers and the index
// is loaded.
func (s *Service) GraphHealthcheck(ctx context.Context, p memory.Principal) (GraphHealth, error) {
	if _, err := s.store.ListNodes(ctx, p.Workspace, store.NodeQuery{Limit: 1}); err != nil {
		return GraphHealth{}, storeErr(err, "graph")
	}
	x, err := s.graphX(ctx)
	if err != nil {
		return GraphHealth{}, err
	}
	n, e := x.Stats()
	return GraphHealth{OK: true, IndexNodes: n, IndexEdges: e}, nil
}
