package graph

import (
	"errors"
	"slices"
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
	// Viewer, when not nil, limits the walk to the nodes and edges it
	// sees: a start node it does not see is ErrNotFound.
	Viewer *Viewer
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

// walk is the fixed part of one breadth-first search.
type walk struct {
	g        *wsGraph
	epoch    uint32
	allow    []bool // relation codes allowed; nil: all
	out, in  bool   // directions followed
	archived bool   // archived nodes traversable
	viewer   *Viewer
}

// Neighbors returns the nodes within q.Depth hops of q.Node by breadth-first
// search, ordered by depth then node id, the start node excluded. Each node
// appears once, at its smallest depth. The search stops early once Limit
// nodes have been found at completed depths; the last depth searched is
// searched fully, so that the page holds its smallest ids.
func (x *Index) Neighbors(q NeighborQuery) ([]Hop, error) {
	if q.Workspace == "" {
		return nil, ErrWorkspace
	}
	if q.Depth < 1 || q.Depth > MaxNeighborDepth {
		return nil, ErrDepth
	}
	w := walk{archived: q.IncludeArchived, viewer: q.Viewer}
	switch q.Direction {
	case "", Both:
		w.out, w.in = true, true
	case Out:
		w.out = true
	case In:
		w.in = true
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
	if !ok || !g.usable(start, q.IncludeArchived) || !g.visible(start, q.Viewer) {
		return nil, ErrNotFound
	}
	w.g, w.allow = g, x.relFilter(q.Relations)
	s := x.getScratch(len(g.nodes))
	defer x.putScratch(s)
	w.epoch = s.epoch
	sd := &s.side[0]
	w.visit(sd, start, 0, -1, -1)

	// sd.list holds every node found, level after level; level d starts
	// at bounds[d-1].
	var bounds []int
	lo := 0
	for d := 1; d <= q.Depth; d++ {
		n := len(sd.list)
		if d == 1 {
			w.expand(sd, start, 1)
		} else {
			for _, u := range sd.list[lo:n] {
				w.expand(sd, u, d)
			}
		}
		bounds = append(bounds, n)
		lo = n
		if len(sd.list) == n || len(sd.list) >= limit {
			break
		}
	}
	bounds = append(bounds, len(sd.list))

	hops := make([]Hop, 0, min(limit, len(sd.list)))
	for i := 0; i+1 < len(bounds) && len(hops) < limit; i++ {
		level := smallestByID(g, sd.list[bounds[i]:bounds[i+1]], limit-len(hops))
		for _, o := range level {
			hops = append(hops, x.hop(g, sd, o))
		}
	}
	return hops, nil
}

func (w *walk) visit(sd *side, o int32, depth int, parent, via int32) {
	sd.mark[o] = w.epoch
	sd.info[o] = visit{parent: parent, via: via, depth: uint8(depth)}
}

// expand visits, at depth d, the neighbours of u. A node already found at
// depth d keeps the smaller parent id (then the smaller edge id), so the
// reported hop does not depend on the order edges were added.
func (w *walk) expand(sd *side, u int32, d int) {
	r := &w.g.nodes[u]
	if w.out {
		w.expandList(sd, u, r.out, d)
	}
	if w.in {
		w.expandList(sd, u, r.in, d)
	}
}

func (w *walk) expandList(sd *side, u int32, list []adj, d int) {
	g := w.g
	for _, a := range list {
		h := g.hot[a.edge]
		if h.invalid || (w.allow != nil && (int(h.rel) >= len(w.allow) || !w.allow[h.rel])) {
			continue
		}
		v := a.nbr
		if v == u || !g.usable(v, w.archived) || !g.visible(v, w.viewer) || !g.crossable(a.edge, w.viewer) {
			continue
		}
		if sd.mark[v] == w.epoch {
			if in := &sd.info[v]; int(in.depth) == d && g.betterParent(u, a.edge, in.parent, in.via) {
				in.parent, in.via = u, a.edge
			}
			continue
		}
		w.visit(sd, v, d, u, a.edge)
		sd.list = append(sd.list, v)
	}
}

// betterParent reports whether (u, eo) sorts before (pu, peo): smaller
// parent id first, then smaller edge id.
func (g *wsGraph) betterParent(u, eo, pu, peo int32) bool {
	if u != pu {
		return g.cmpID(u, pu) < 0
	}
	return g.edges[eo].id < g.edges[peo].id
}

// hop reports how slot o was reached in sd.
func (x *Index) hop(g *wsGraph, sd *side, o int32) Hop {
	in := sd.info[o]
	return x.hopVia(g, in.parent, o, in.via, int(in.depth))
}

func (x *Index) hopVia(g *wsGraph, from, to, eo int32, depth int) Hop {
	e := &g.edges[eo]
	return Hop{
		Node:     g.nodes[to].id,
		Depth:    depth,
		Via:      e.id,
		Relation: x.relName(g.hot[eo].rel),
		From:     g.nodes[from].id,
		Forward:  e.from == from && e.to == to,
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

// smallestByID reorders list in place and returns its k smallest slots by
// node id, sorted; a long list goes through a bounded max-heap first.
func smallestByID(g *wsGraph, list []int32, k int) []int32 {
	if k <= 0 {
		return nil
	}
	if len(list) > 4*k {
		h := list[:k] // a max-heap of the k smallest seen so far
		for i := k/2 - 1; i >= 0; i-- {
			siftDown(g, h, i)
		}
		for _, o := range list[k:] {
			if g.cmpID(o, h[0]) < 0 {
				h[0] = o
				siftDown(g, h, 0)
			}
		}
		list = h
	}
	slices.SortFunc(list, g.cmpID)
	return list[:min(k, len(list))]
}

func siftDown(g *wsGraph, h []int32, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && g.cmpID(h[c+1], h[c]) > 0 {
			c++
		}
		if g.cmpID(h[c], h[i]) <= 0 {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// Path returns a shortest path from → to of at most maxDepth hops. Edges
// are followed in either direction (Hop.Forward tells which), through
// non-archived nodes only, over the given relations (empty: all; unknown
// names match nothing). maxDepth ≤ 0 means MaxPathDepth, and larger values
// are cut to MaxPathDepth. The hops run from the first step after from to
// to; from == to gives an empty path. It reports false when no such path
// exists.
//
// The search is bidirectional: breadth-first from both ends, a level at a
// time, always growing the side with the smaller frontier, until the two
// meet. Among several shortest paths it returns the one through the
// meeting node with the smallest id, each half following the smallest
// parents (see the package doc), so the answer depends only on the graph,
// not on the order it was built in.
func (x *Index) Path(ws, from, to string, maxDepth int, relations []string) ([]Hop, bool) {
	return x.PathFor(ws, from, to, maxDepth, relations, nil)
}

// PathFor is Path through the nodes and edges v sees only (nil: all).
func (x *Index) PathFor(ws, from, to string, maxDepth int, relations []string, v *Viewer) ([]Hop, bool) {
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
	if !ok1 || !ok2 || !g.usable(src, false) || !g.usable(dst, false) || !g.visible(src, v) || !g.visible(dst, v) {
		return nil, false
	}
	if src == dst {
		return []Hop{}, true
	}
	w := walk{g: g, allow: x.relFilter(relations), out: true, in: true, viewer: v}
	s := x.getScratch(len(g.nodes))
	defer x.putScratch(s)
	w.epoch = s.epoch
	fw, bw := &s.side[0], &s.side[1]
	w.visit(fw, src, 0, -1, -1)
	w.visit(bw, dst, 0, -1, -1)
	// frontier [lo, len(list)) of each side; the start is implicit.
	fLo, bLo := -1, -1 // -1: the frontier is the start alone
	df, db := 0, 0
	frontier := func(sd *side, lo int, start int32) []int32 {
		if lo < 0 {
			return []int32{start}
		}
		return sd.list[lo:]
	}
	for df+db < maxDepth {
		ff, bf := frontier(fw, fLo, src), frontier(bw, bLo, dst)
		if len(ff) == 0 || len(bf) == 0 {
			return nil, false
		}
		grow, other, d, lo := fw, bw, df+1, &fLo
		if len(bf) < len(ff) {
			grow, other, d, lo = bw, fw, db+1, &bLo
			ff = bf
		}
		n := len(grow.list)
		for _, u := range ff {
			w.expand(grow, u, d)
		}
		*lo = n
		if grow == fw {
			df++
		} else {
			db++
		}
		meet := int32(-1)
		for _, v := range grow.list[n:] {
			if other.mark[v] == w.epoch && (meet < 0 || g.cmpID(v, meet) < 0) {
				meet = v
			}
		}
		if meet < 0 {
			continue
		}
		hops := make([]Hop, df+db)
		// The forward half, from meet back to src.
		for o := meet; o != src; o = fw.info[o].parent {
			hops[fw.info[o].depth-1] = x.hop(g, fw, o)
		}
		// The backward half, from meet on to dst.
		for o, i := meet, df; o != dst; i++ {
			in := bw.info[o]
			hops[i] = x.hopVia(g, o, in.parent, in.via, i+1)
			o = in.parent
		}
		return hops, true
	}
	return nil, false
}

// ByLabels lists the ids of workspace ws's nodes whose label is one of
// labels (empty: any label), sorted, starting after the id after (a page
// cursor: pass the last id of the previous page), at most limit of them
// (0: DefaultLimit; above MaxLimit: MaxLimit; negative: none). Labels match
// exactly.
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
		if g.usable(o, includeArchived) && g.nodes[o].id > after {
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
			if !seen[l] {
				seen[l] = true
				for o := range g.labels[l] {
					keep(o)
				}
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
