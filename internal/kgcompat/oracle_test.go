package kgcompat

// The knowledge-graph reads as they were before the index (issue 14):
// straight from the store, every node and observation per call. Kept as
// the oracle the index's answers are compared with (index_test.go).

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// allObservations returns the observations of every entity p may read, by
// the entity's node ("entity:<key>"), oldest first: one scan of the
// observation records instead of a query per entity.
func (s *Service) allObservations(ctx context.Context, p memory.Principal) (map[string]*kgObs, error) {
	recs, err := s.observationRecords(ctx, s.svc.Store(), p, "")
	if err != nil {
		return nil, err
	}
	out := map[string]*kgObs{}
	for _, r := range recs {
		for _, ent := range r.Entities {
			if label, key, _ := strings.Cut(ent, ":"); label == EntityLabel {
				if out[ent] == nil {
					out[ent] = &kgObs{}
				}
				out[ent].add(EntityName(key), r)
			}
		}
	}
	return out, nil
}

// kgEntityOf returns the entity a node stands for, with its observations.
func (s *Service) kgEntityOf(ctx context.Context, p memory.Principal, n memory.Node) (Entity, error) {
	name := EntityName(n.NaturalKey)
	obs, err := s.observationTexts(ctx, s.svc.Store(), p, name)
	if err != nil {
		return Entity{}, err
	}
	return Entity{Name: name, EntityType: kgEntityType(n), Observations: obs.texts, Held: obs.held}, nil
}

// kgRelationsOf returns the relations p may see at either end of nodes
// whose other end is a live entity or placeholder p sees too, in the
// order they were created.
func (s *Service) kgRelationsOf(ctx context.Context, p memory.Principal, nodes []memory.Node) ([]Relation, error) {
	ws := p.Workspace
	seen := map[string]bool{}
	var edges []memory.Edge
	for _, n := range nodes {
		es, err := liveEdges(ctx, s.svc.Store(), ws, n.ID)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if !seen[e.ID] {
				seen[e.ID] = true
				edges = append(edges, e)
			}
		}
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i].ID < edges[j].ID })
	type named struct {
		name string
		ok   bool // a live entity or placeholder
	}
	names := map[string]named{} // node id -> name
	nameOf := func(id string) (string, bool, error) {
		if v, ok := names[id]; ok {
			return v.name, v.ok, nil
		}
		n, err := s.svc.Store().GetNode(ctx, store.NodeFind{Workspace: ws, ID: id})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", false, err
		}
		var v named
		if err == nil && kgLive(n) {
			if n, err = core.WithGrants(ctx, s.st, ws, n); err != nil {
				return "", false, err
			}
			if core.NodeVisibleTo(p, n) {
				v = named{EntityName(n.NaturalKey), true}
			}
		}
		names[id] = v
		return v.name, v.ok, nil
	}
	type ordered struct {
		rel Relation
		key string
	}
	var all []ordered
	for _, e := range edges {
		from, ok1, err := nameOf(e.From)
		if err != nil {
			return nil, err
		}
		to, ok2, err := nameOf(e.To)
		if err != nil {
			return nil, err
		}
		// The edge's own grant, judged as a node of that grant would be.
		if !ok1 || !ok2 || (e.Access != "" && !core.NodeVisibleTo(p, memory.Node{Access: e.Access, Writer: e.Writer})) {
			continue
		}
		rts := edgeRelationTypes(e)
		ids := edgeRelationIDs(e, len(rts))
		for i, rt := range rts {
			all = append(all, ordered{Relation{From: from, To: to, RelationType: rt}, ids[i]})
		}
	}
	slices.SortStableFunc(all, func(a, b ordered) int { return strings.Compare(a.key, b.key) })
	out := make([]Relation, len(all))
	for i, o := range all {
		out[i] = o.rel
	}
	return out, nil
}

// kgView assembles the view of nodes (in the given order) with the
// relations touching them or, for a whole graph, touching extra (the
// placeholders) as well.
func (s *Service) kgView(ctx context.Context, p memory.Principal, nodes, extra []memory.Node) (Graph, error) {
	g := Graph{Entities: make([]Entity, 0, len(nodes))}
	for _, n := range nodes {
		e, err := s.kgEntityOf(ctx, p, n)
		if err != nil {
			return Graph{}, core.StoreError(err, "observations")
		}
		g.Entities = append(g.Entities, e)
	}
	rels, err := s.kgRelationsOf(ctx, p, append(slices.Clip(nodes), extra...))
	if err != nil {
		return Graph{}, core.StoreError(err, "relations")
	}
	g.Relations = rels
	return g, nil
}

// kgNodes lists the live entity nodes p may see in the reference's
// order (by when each was last created), and the live placeholder nodes
// p may see.
func (s *Service) kgNodes(ctx context.Context, p memory.Principal) (entities, placeholders []memory.Node, err error) {
	ws := p.Workspace
	q := store.NodeQuery{Labels: []string{EntityLabel}, Statuses: []memory.NodeStatus{memory.NodeProvisional, memory.NodeActive},
		Limit: store.MaxLimit}
	for {
		page, err := s.svc.Store().ListNodes(ctx, ws, q)
		if err != nil {
			return nil, nil, core.StoreError(err, "nodes")
		}
		for _, n := range page {
			if kgLive(n) {
				if n, err = core.WithGrants(ctx, s.st, ws, n); err != nil {
					return nil, nil, core.StoreError(err, "nodes")
				}
			}
			switch {
			case !kgLive(n), !core.NodeVisibleTo(p, n):
			case kgIsPlaceholder(n):
				placeholders = append(placeholders, n)
			default:
				entities = append(entities, n)
			}
		}
		if len(page) < q.Limit {
			break
		}
		q.After = page[len(page)-1].ID
	}
	slices.SortStableFunc(entities, func(a, b memory.Node) int { return strings.Compare(kgOrder(a), kgOrder(b)) })
	return entities, placeholders, nil
}

// ReadGraph returns every entity, in the reference's order, and every
// relation — or, with a limit (memgate's extension; 0 for all), the first
// limit entities with the relations touching them, Omitted saying how many
// were left out.
func (s *Service) oracleReadGraph(ctx context.Context, p memory.Principal, limit int) (Graph, error) {
	limit, err := kgLimit(limit)
	if err != nil {
		return Graph{}, err
	}
	nodes, placeholders, err := s.kgNodes(ctx, p)
	if err != nil {
		return Graph{}, err
	}
	omitted := 0
	if limit > 0 && len(nodes) > limit {
		omitted, nodes, placeholders = len(nodes)-limit, nodes[:limit], nil
	}
	g, err := s.kgView(ctx, p, nodes, placeholders)
	g.Omitted = omitted
	return g, err
}

// SearchNodes returns the entities whose name, type or an observation
// contains query, both lowercased as JavaScript's toLowerCase does (the
// reference's matching), best first — the name equal to the query, then
// names containing it, then types, then observations, more matching
// observations first, ties in the reference's order — at most limit (0
// for all; Omitted counts the rest), with the relations that touch them.
func (s *Service) oracleSearchNodes(ctx context.Context, p memory.Principal, query string, limit int) (Graph, error) {
	limit, err := kgLimit(limit)
	if err != nil {
		return Graph{}, err
	}
	if len(query) > 4096 {
		return Graph{}, fault.Field("query", "at most 4096 bytes")
	}
	nodes, _, err := s.kgNodes(ctx, p)
	if err != nil {
		return Graph{}, err
	}
	obs, err := s.allObservations(ctx, p)
	if err != nil {
		return Graph{}, core.StoreError(err, "observations")
	}
	q := jsLower(query)
	type hit struct {
		node        memory.Node
		entity      Entity
		tier, count int
	}
	var hits []hit
	for _, n := range nodes {
		e := Entity{Name: EntityName(n.NaturalKey), EntityType: kgEntityType(n), Observations: []string{}}
		if o := obs[n.EntityKey()]; o != nil {
			e.Observations, e.Held = o.texts, o.held
		}
		h := hit{node: n, entity: e}
		name := jsLower(e.Name)
		switch {
		case name == q:
			h.tier = 4
		case strings.Contains(name, q):
			h.tier = 3
		case strings.Contains(jsLower(e.EntityType), q):
			h.tier = 2
		}
		for _, o := range e.Observations {
			if strings.Contains(jsLower(o), q) {
				h.count++
			}
		}
		if h.tier == 0 && h.count > 0 {
			h.tier = 1
		}
		if h.tier > 0 {
			hits = append(hits, h)
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].tier != hits[j].tier {
			return hits[i].tier > hits[j].tier
		}
		return hits[i].count > hits[j].count
	})
	g := Graph{Entities: make([]Entity, 0, len(hits))}
	if limit > 0 && len(hits) > limit {
		g.Omitted, hits = len(hits)-limit, hits[:limit]
	}
	matched := make([]memory.Node, 0, len(hits))
	for _, h := range hits {
		g.Entities = append(g.Entities, h.entity)
		matched = append(matched, h.node)
	}
	if g.Relations, err = s.kgRelationsOf(ctx, p, matched); err != nil {
		return Graph{}, core.StoreError(err, "relations")
	}
	return g, nil
}

// OpenNodes returns the named entities that exist, in the reference's
// order, with the relations that touch them.
func (s *Service) oracleOpenNodes(ctx context.Context, p memory.Principal, names []string) (Graph, error) {
	if len(names) > MaxNames {
		return Graph{}, fault.Field("names", "at most "+strconv.Itoa(MaxNames)+" names")
	}
	var nodes []memory.Node
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] || checkKGName(name, "names") != nil {
			continue
		}
		seen[name] = true
		n, err := s.svc.Store().GetNode(ctx, store.NodeFind{Workspace: p.Workspace, Label: EntityLabel, Key: NodeKey(name)})
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err == nil {
			n, err = core.WithGrants(ctx, s.st, p.Workspace, n)
		}
		if err != nil {
			return Graph{}, core.StoreError(err, "node")
		}
		if kgLive(n) && !kgIsPlaceholder(n) && core.NodeVisibleTo(p, n) {
			nodes = append(nodes, n)
		}
	}
	slices.SortStableFunc(nodes, func(a, b memory.Node) int { return strings.Compare(kgOrder(a), kgOrder(b)) })
	return s.kgView(ctx, p, nodes, nil)
}
