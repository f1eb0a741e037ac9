package graph

import (
	"errors"
	"slices"
	"strings"
)

// Errors returned by Neighbors.
var (
	ErrWorkspace = errors.New("graph: workspace is required")
	ErrNotFound  = errors.New("graph: node not found")
	ErrDepth     = errors.New("graph: depth must be between 1 and 3")
	ErrDirection = errors.New(`graph: direction must be "out", "in" or "both"`)
	ErrLimit     = errors.New("graph: limit must not be negative")
	ErrRelation  = errors.New("graph: unknown relation")
)

// Traversal bounds.
const (
	MaxNeighborDepth = 3
	DefaultLimit     = 100
	MaxLimit         = 1000
	MaxPathDepth     = 6
)

// Directions for NeighborQuery.
const (
	Out  = "out"
	In   = "in"
	Both = "both"
)

// NeighborQuery asks for the nodes within Depth hops of Node.
type NeighborQuery struct {
	Workspace string
	Node      string
	Depth     int      // 1..3
	Relations []string // only edges with these relations; empty: all
	// Direction "out" follows edges from→to, "in" follows them to→from,
	// "both" (or "") follows either way.
	Direction string
	// Limit caps the hops returned: 0 means DefaultLimit, more than
	// MaxLimit means MaxLimit.
	Limit int
	// IncludeArchived makes archived nodes visible and traversable. Without
	// it an archived start node is ErrNotFound.
	IncludeArchived bool
}

// Hop is one node reached by a traversal.
type Hop struct {
	Node     string // node reached
	Depth    int    // hops from the start
	Via      string // id of the edge that reached it
	Relation string // relation of that edge
	From     string // node the traversal came from (the hop's parent)
	// Forward is true when the edge points From → Node, false when it was
	// followed against its direction.
	Forward bool
}

// Neighbors returns the nodes within q.Depth hops of q.Node by breadth-first
// search, ordered by depth then node id, the start node excluded. Each node
// appears once, at its smallest depth. The search stops early once Limit
// nodes have been found at completed depths, so a hub's depth-3
// neighbourhood costs no more than its first levels.
func (x *Index) Neighbors(q NeighborQuery) ([]Hop, error) {
	if q.Workspace == "" {
		return nil, ErrWorkspace
	}
	if q.Depth < 1 || q.Depth > MaxNeighborDepth {
		return nil, ErrDepth
	}
	var out, in bool
	switch q.Direction {
	case "", Both:
		out, in = true, true
	case Out:
		out = true
	case In:
		in = true
	default:
		return nil, ErrDirection
	}
	limit, err := clampLimit(q.Limit)
	if err != nil {
		return nil, err
	}
	for _, r := range q.Relations {
		if !ValidRelation(r) {
			return nil, ErrRelation
		}
	}

	x.mu.RLock()
	defer x.mu.RUnlock()
	g := x.ws[q.Workspace]
	if g == nil {
		return nil, ErrNotFound
	}
	start, ok := g.ids[q.Node]
	if !ok || !g.usable(start, q.IncludeArchived) {
		return nil, ErrNotFound
	}
	allow := x.relFilter(q.Relations)
	s := x.getScratch(len(g.nodes))
	defer x.putScratch(s)

	s.visit(start, 0, -1, -1)
	// s.list holds every node found, level after level; bounds[d] is where
	// level d+1 starts.
	frontier := []int32{start}
	var bounds []int
	for d := 1; d <= q.Depth && len(frontier) > 0; d++ {
		lo := len(s.list)
		for _, u := range frontier {
			if out {
				x.expand(g, s, u, g.nodes[u].out, true, d, allow, q.IncludeArchived)
			}
			if in {
				x.expand(g, s, u, g.nodes[u].in, false, d, allow, q.IncludeArchived)
			}
		}
		bounds = append(bounds, lo)
		frontier = s.list[lo:]
		if len(s.list) >= limit {
			break
		}
	}
	bounds = append(bounds, len(s.list))

	hops := make([]Hop, 0, min(limit, len(s.list)))
	for i := 0; i+1 < len(bounds) && len(hops) < limit; i++ {
		level := s.list[bounds[i]:bounds[i+1]]
		level = smallestByID(g, level, limit-len(hops))
		for _, o := range level {
			hops = append(hops, x.hop(g, s, o))
		}
	}
	return hops, nil
}

// expand visits, at depth d, the neighbours of u over the edges in adj
// (u's out list when forward, its in list otherwise).
func (x *Index) expand(g *wsGraph, s *scratch, u int32, adj []int32, forward bool, d int, allow []bool, archived bool) {
	for _, eo := range adj {
		e := &g.edges[eo]
		if e.invalid || (allow != nil && (int(e.rel) >= len(allow) || !allow[e.rel])) {
			continue
		}
		v := e.to
		if !forward {
			v = e.from
		}
		if v == u || !g.usable(v, archived) {
			continue
		}
		if s.seen(v) {
			if int(s.depth[v]) == d && g.betterParent(u, eo, s.parent[v], s.via[v]) {
				s.parent[v], s.via[v] = u, eo
			}
			continue
		}
		s.visit(v, d, u, eo)
		s.list = append(s.list, v)
	}
}

// betterParent reports whether (u, eo) sorts before (pu, peo): smaller
// parent id first, then smaller edge id.
func (g *wsGraph) betterParent(u, eo, pu, peo int32) bool {
	if u != pu {
		return g.nodes[u].id < g.nodes[pu].id
	}
	return g.edges[eo].id < g.edges[peo].id
}

func (x *Index) hop(g *wsGraph, s *scratch, o int32) Hop {
	e := &g.edges[s.via[o]]
	return Hop{
		Node:     g.nodes[o].id,
		Depth:    int(s.depth[o]),
		Via:      e.id,
		Relation: x.relName(e.rel),
		From:     g.nodes[s.parent[o]].id,
		Forward:  e.to == o && e.from == s.parent[o],
	}
}

// relFilter returns the allowed relation codes, or nil for all.
func (x *Index) relFilter(rels []string) []bool {
	if len(rels) == 0 {
		return nil
	}
	allow := make([]bool, len(x.relOf))
	for _, r := range rels {
		if c, ok := x.rels[r]; ok {
			allow[c] = true
		}
	}
	return allow
}

// relName maps a relation code to its name ("" for noRel).
func (x *Index) relName(c uint16) string {
	if int(c) < len(x.relOf) {
		return x.relOf[c]
	}
	return ""
}

func clampLimit(l int) (int, error) {
	switch {
	case l < 0:
		return 0, ErrLimit
	case l == 0:
		return DefaultLimit, nil
	case l > MaxLimit:
		return MaxLimit, nil
	}
	return l, nil
}

// smallestByID sorts list by node id in place and returns its first k
// elements; for a long list it selects them first with a bounded max-heap.
func smallestByID(g *wsGraph, list []int32, k int) []int32 {
	byID := func(a, b int32) int { return strings.Compare(g.nodes[a].id, g.nodes[b].id) }
	if k <= 0 {
		return nil
	}
	if len(list) > 4*k {
		// list[:k] is a max-heap of the k smallest seen so far.
		h := list[:k]
		for i := k/2 - 1; i >= 0; i-- {
			siftDown(h, i, byID)
		}
		for _, o := range list[k:] {
			if byID(o, h[0]) < 0 {
				h[0] = o
				siftDown(h, 0, byID)
			}
		}
		list = h
	}
	slices.SortFunc(list, byID)
	return list[:min(k, len(list))]
}

func siftDown(h []int32, i int, less func(a, b int32) int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && less(h[c+1], h[c]) > 0 {
			c++
		}
		if less(h[c], h[i]) <= 0 {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// Path returns a shortest path from → to of at most maxDepth hops, found by
// breadth-first search over edges followed in either direction (Hop.Forward
// tells which), through non-archived nodes only and over the given
// relations (empty: all; unknown names match nothing). maxDepth ≤ 0 means
// MaxPathDepth, and larger values are cut to MaxPathDepth. Among shortest
// paths it returns the one whose hops have the smallest parents (see the
// package doc). The hops run from the first step after from to to; from ==
// to gives an empty path. It reports false when no such path exists.
func (x *Index) Path(ws, from, to string, maxDepth int, relations []string) ([]Hop, bool) {
	if maxDepth <= 0 || maxDepth > MaxPathDepth {
		maxDepth = MaxPathDepth
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	g := x.ws[ws]
	if g == nil {
		return nil, false
	}
	src, ok1 := g.ids[from]
	dst, ok2 := g.ids[to]
	if !ok1 || !ok2 || !g.usable(src, false) || !g.usable(dst, false) {
		return nil, false
	}
	if src == dst {
		return []Hop{}, true
	}
	allow := x.relFilter(relations)
	s := x.getScratch(len(g.nodes))
	defer x.putScratch(s)
	s.visit(src, 0, -1, -1)
	frontier := []int32{src}
	for d := 1; d <= maxDepth && len(frontier) > 0; d++ {
		lo := len(s.list)
		for _, u := range frontier {
			x.expand(g, s, u, g.nodes[u].out, true, d, allow, false)
			x.expand(g, s, u, g.nodes[u].in, false, d, allow, false)
		}
		if s.seen(dst) {
			hops := make([]Hop, d)
			for o := dst; o != src; o = s.parent[o] {
				hops[s.depth[o]-1] = x.hop(g, s, o)
			}
			return hops, true
		}
		frontier = s.list[lo:]
	}
	return nil, false
}

// ByLabels lists the ids of workspace ws's nodes whose label is one of
// labels (empty: any label), sorted, starting after the id after (a page
// cursor: pass the last id of the previous page), at most limit of them
// (0: DefaultLimit; above MaxLimit: MaxLimit). Labels match exactly.
func (x *Index) ByLabels(ws string, labels []string, includeArchived bool, after string, limit int) []string {
	limit, err := clampLimit(limit)
	if err != nil {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	g := x.ws[ws]
	if g == nil {
		return nil
	}
	var cand []int32
	keep := func(o int32) {
		r := &g.nodes[o]
		if r.present && (includeArchived || !r.archived) && r.id > after {
			cand = append(cand, o)
		}
	}
	if len(labels) == 0 {
		for o := range g.nodes {
			keep(int32(o))
		}
	} else {
		seen := make(map[string]bool, len(labels))
		for _, l := range labels {
			if seen[l] {
				continue
			}
			seen[l] = true
			for o := range g.labels[l] {
				keep(o)
			}
		}
	}
	cand = smallestByID(g, cand, limit)
	ids := make([]string, len(cand))
	for i, o := range cand {
		ids[i] = g.nodes[o].id
	}
	return ids
}
