package graph

import (
	"math"
	"slices"
	"strings"
	"sync"
)

// Node is what the index keeps of a graph node.
type Node struct {
	ID        string
	Workspace string
	Label     string
	Key       string // natural key; recognised in text with '_' and '-' read as spaces
	Name      string // display name, e.g. properties.name, or the key
	Aliases   []string
	Archived  bool
	Vis       Vis // who may see it (see Viewer)
}

// Edge is what the index keeps of a graph edge. Weight ≤ 0, NaN or ±Inf
// (including an unset 0) counts as 1.
type Edge struct {
	ID          string
	Workspace   string
	From, To    string
	Relation    string
	Weight      float64
	Invalidated bool
	// Vis, when not nil, restricts who may cross the edge beyond seeing
	// both of its ends.
	Vis *Vis
}

// Index is the in-memory graph index. The zero value is not usable; call New.
type Index struct {
	mu     sync.RWMutex
	ws     map[string]*wsGraph
	nodes  int // present nodes, all workspaces
	edges  int // stored edges, all workspaces
	rels   map[string]uint16
	relOf  []string // relation code -> name
	scPool sync.Pool
}

// noRel is the relation code given to relation strings once the intern
// table is full; no filter ever selects it.
const noRel = math.MaxUint16

// nodeRec is one node slot: the cold data, read once per node visited. A
// slot is in use when id != "". A slot that is not present (see
// wsGraph.flags) is a placeholder for an id named by edges only.
type nodeRec struct {
	id      string
	label   string
	key     string
	name    string
	aliases []string
	vis     Vis
	out, in []adj
}

// adj is one adjacency entry (8 bytes): the node across the edge and the
// edge's ordinal. Holding the neighbour here spares traversal a visit to the
// edge record.
type adj struct{ nbr, edge int32 }

// Node flags.
const (
	present  uint8 = 1 << iota // a node, not a placeholder
	archived                   // hidden unless asked for
	open                       // visible to every viewer holding Public
)

// edgeRec is the cold part of an edge slot. A slot is in use when id != "".
type edgeRec struct {
	id       string
	from, to int32
	vis      Vis // when restricted
}

// edgeHot is the part of an edge that traversal reads for every edge it
// crosses (8 bytes).
type edgeHot struct {
	weight     float32
	rel        uint16
	invalid    bool
	restricted bool // check edgeRec.vis
}

// wsGraph is one workspace's graph. Per-node and per-edge data are split in
// parallel slices by how often traversal reads them: flags and idKey are
// dense and hot, nodeRec is touched once per expanded node; edgeHot is read
// for every edge crossed, edgeRec only to report a hop.
type wsGraph struct {
	ids       map[string]int32
	nodes     []nodeRec
	flags     []uint8
	idKey     []uint64 // first 8 bytes of the id, big-endian: a fast id order
	deg       []int32  // len(out) + len(in)
	freeNodes []int32
	edgeIDs   map[string]int32
	edges     []edgeRec
	hot       []edgeHot
	freeEdges []int32
	labels    map[string]map[int32]struct{}
	phrases   map[string][]int32 // normalised name -> present nodes
	phraseLen [maxPhraseWords + 1]int
}

// New returns an empty index.
func New() *Index {
	x := &Index{ws: make(map[string]*wsGraph), rels: make(map[string]uint16)}
	for _, r := range relationList {
		x.intern(r)
	}
	return x
}

func (x *Index) intern(rel string) uint16 {
	if c, ok := x.rels[rel]; ok {
		return c
	}
	if len(x.relOf) >= noRel {
		return noRel
	}
	c := uint16(len(x.relOf))
	x.rels[rel] = c
	x.relOf = append(x.relOf, rel)
	return c
}

func (x *Index) graph(ws string, create bool) *wsGraph {
	g := x.ws[ws]
	if g == nil && create {
		g = &wsGraph{
			ids:     make(map[string]int32),
			edgeIDs: make(map[string]int32),
			labels:  make(map[string]map[int32]struct{}),
			phrases: make(map[string][]int32),
		}
		x.ws[ws] = g
	}
	return g
}

// PutNode inserts the node or replaces the node with the same workspace and
// id. A node with an empty ID or Workspace is ignored.
func (x *Index) PutNode(n Node) {
	if n.ID == "" || n.Workspace == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	g := x.graph(n.Workspace, true)
	o := g.ord(n.ID)
	if g.flags[o]&present != 0 {
		g.unindex(o)
	} else {
		x.nodes++
	}
	r := &g.nodes[o]
	r.label, r.key, r.name = n.Label, n.Key, n.Name
	r.aliases = slices.Clone(n.Aliases)
	r.vis = Vis{Levels: n.Vis.Levels, Owners: slices.Clone(n.Vis.Owners)}
	g.flags[o] = present
	if n.Archived {
		g.flags[o] |= archived
	}
	if n.Vis.Levels&Public != 0 {
		g.flags[o] |= open
	}
	g.index(o)
}

// RemoveNode removes the node and every edge that starts or ends at it.
func (x *Index) RemoveNode(ws, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	g := x.ws[ws]
	if g == nil {
		return
	}
	o, ok := g.ids[id]
	if !ok {
		return
	}
	if g.flags[o]&present != 0 {
		g.unindex(o)
		g.flags[o] = 0
		x.nodes--
	}
	for len(g.nodes[o].out) > 0 {
		x.edges--
		g.removeEdge(g.nodes[o].out[len(g.nodes[o].out)-1].edge, o)
	}
	for len(g.nodes[o].in) > 0 {
		x.edges--
		g.removeEdge(g.nodes[o].in[len(g.nodes[o].in)-1].edge, o)
	}
	g.freeNode(o)
}

// PutEdge inserts the edge or replaces the edge with the same workspace and
// id. An edge with an empty ID, Workspace, From or To is ignored. The
// endpoints need not exist yet (see the package doc).
func (x *Index) PutEdge(e Edge) {
	if e.ID == "" || e.Workspace == "" || e.From == "" || e.To == "" {
		return
	}
	w := float32(e.Weight)
	if !(e.Weight > 0) || math.IsInf(float64(w), 0) || w == 0 {
		w = 1
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	rel := x.intern(e.Relation)
	g := x.graph(e.Workspace, true)
	if eo, ok := g.edgeIDs[e.ID]; ok {
		r := &g.edges[eo]
		if g.nodes[r.from].id == e.From && g.nodes[r.to].id == e.To {
			g.hot[eo] = edgeHot{weight: w, rel: rel, invalid: e.Invalidated, restricted: e.Vis != nil}
			r.vis = edgeVis(e)
			return
		}
		g.removeEdge(eo, -1)
		x.edges--
	}
	f := g.ord(e.From)
	t := g.ord(e.To)
	var eo int32
	if n := len(g.freeEdges); n > 0 {
		eo = g.freeEdges[n-1]
		g.freeEdges = g.freeEdges[:n-1]
	} else {
		eo = int32(len(g.edges))
		g.edges = append(g.edges, edgeRec{})
		g.hot = append(g.hot, edgeHot{})
	}
	g.edges[eo] = edgeRec{id: e.ID, from: f, to: t, vis: edgeVis(e)}
	g.hot[eo] = edgeHot{weight: w, rel: rel, invalid: e.Invalidated, restricted: e.Vis != nil}
	g.edgeIDs[e.ID] = eo
	g.nodes[f].out = append(g.nodes[f].out, adj{nbr: t, edge: eo})
	g.nodes[t].in = append(g.nodes[t].in, adj{nbr: f, edge: eo})
	g.deg[f]++
	g.deg[t]++
	x.edges++
}

// RemoveEdge removes the edge.
func (x *Index) RemoveEdge(ws, id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	g := x.ws[ws]
	if g == nil {
		return
	}
	if eo, ok := g.edgeIDs[id]; ok {
		g.removeEdge(eo, -1)
		x.edges--
	}
}

// DropWorkspace forgets every node and edge of the workspace.
func (x *Index) DropWorkspace(ws string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	g := x.ws[ws]
	if g == nil {
		return
	}
	for _, f := range g.flags {
		if f&present != 0 {
			x.nodes--
		}
	}
	x.edges -= len(g.edgeIDs)
	delete(x.ws, ws)
}

// Stats returns the number of nodes and of stored edges (inert and
// invalidated edges included) over all workspaces.
func (x *Index) Stats() (nodes, edges int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.nodes, x.edges
}

// Node returns the node as the index knows it.
func (x *Index) Node(ws, id string) (Node, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	g := x.ws[ws]
	if g == nil {
		return Node{}, false
	}
	o, ok := g.ids[id]
	if !ok || g.flags[o]&present == 0 {
		return Node{}, false
	}
	r := &g.nodes[o]
	return Node{ID: r.id, Workspace: ws, Label: r.label, Key: r.key, Name: r.name,
		Aliases: slices.Clone(r.aliases), Archived: g.flags[o]&archived != 0,
		Vis: Vis{Levels: r.vis.Levels, Owners: slices.Clone(r.vis.Owners)}}, true
}

func edgeVis(e Edge) Vis {
	if e.Vis == nil {
		return Vis{}
	}
	return Vis{Levels: e.Vis.Levels, Owners: slices.Clone(e.Vis.Owners)}
}

// ord returns the slot of id, allocating a placeholder if needed.
func (g *wsGraph) ord(id string) int32 {
	if o, ok := g.ids[id]; ok {
		return o
	}
	var o int32
	if n := len(g.freeNodes); n > 0 {
		o = g.freeNodes[n-1]
		g.freeNodes = g.freeNodes[:n-1]
	} else {
		o = int32(len(g.nodes))
		g.nodes = append(g.nodes, nodeRec{})
		g.flags = append(g.flags, 0)
		g.idKey = append(g.idKey, 0)
		g.deg = append(g.deg, 0)
	}
	g.nodes[o] = nodeRec{id: id, out: g.nodes[o].out[:0], in: g.nodes[o].in[:0]}
	g.flags[o] = 0
	g.idKey[o] = idKey(id)
	g.ids[id] = o
	return o
}

// freeNode releases slot o if it is a placeholder without edges.
func (g *wsGraph) freeNode(o int32) {
	r := &g.nodes[o]
	if r.id == "" || g.flags[o]&present != 0 || len(r.out) > 0 || len(r.in) > 0 {
		return
	}
	delete(g.ids, r.id)
	*r = nodeRec{out: r.out[:0], in: r.in[:0]}
	g.freeNodes = append(g.freeNodes, o)
}

// removeEdge unlinks and frees edge eo, then frees endpoint placeholders
// left without edges, except keep (the node being removed frees itself).
func (g *wsGraph) removeEdge(eo int32, keep int32) {
	e := g.edges[eo]
	f, t := &g.nodes[e.from], &g.nodes[e.to]
	if i := slices.Index(f.out, adj{e.to, eo}); i >= 0 {
		f.out = slices.Delete(f.out, i, i+1)
	}
	if i := slices.Index(t.in, adj{e.from, eo}); i >= 0 {
		t.in = slices.Delete(t.in, i, i+1)
	}
	g.deg[e.from]--
	g.deg[e.to]--
	delete(g.edgeIDs, e.id)
	g.edges[eo] = edgeRec{}
	g.hot[eo] = edgeHot{}
	g.freeEdges = append(g.freeEdges, eo)
	if e.from != keep {
		g.freeNode(e.from)
	}
	if e.to != keep && e.to != e.from {
		g.freeNode(e.to)
	}
}

// index adds present node o to the label and phrase indexes.
func (g *wsGraph) index(o int32) {
	r := &g.nodes[o]
	set := g.labels[r.label]
	if set == nil {
		set = make(map[int32]struct{})
		g.labels[r.label] = set
	}
	set[o] = struct{}{}
	for _, p := range nodePhrases(r) {
		list := g.phrases[p.text]
		if len(list) == 0 {
			g.phraseLen[p.words]++
		}
		g.phrases[p.text] = append(list, o)
	}
}

// unindex removes present node o from the label and phrase indexes.
func (g *wsGraph) unindex(o int32) {
	r := &g.nodes[o]
	if set := g.labels[r.label]; set != nil {
		delete(set, o)
		if len(set) == 0 {
			delete(g.labels, r.label)
		}
	}
	for _, p := range nodePhrases(r) {
		list := g.phrases[p.text]
		if i := slices.Index(list, o); i >= 0 {
			list = slices.Delete(list, i, i+1)
		}
		if len(list) == 0 {
			delete(g.phrases, p.text)
			g.phraseLen[p.words]--
		} else {
			g.phrases[p.text] = list
		}
	}
}

// usable reports whether slot o is a present node visible under the
// archived rule.
func (g *wsGraph) usable(o int32, includeArchived bool) bool {
	f := g.flags[o]
	return f&present != 0 && (includeArchived || f&archived == 0)
}

// idKey packs the first 8 bytes of id, big-endian, so that comparing keys
// orders ids like strings.Compare does whenever the keys differ.
func idKey(id string) uint64 {
	var k uint64
	for i := range 8 {
		k <<= 8
		if i < len(id) {
			k |= uint64(id[i])
		}
	}
	return k
}

// cmpID orders slots by node id.
func (g *wsGraph) cmpID(a, b int32) int {
	ka, kb := g.idKey[a], g.idKey[b]
	switch {
	case ka < kb:
		return -1
	case ka > kb:
		return 1
	}
	return strings.Compare(g.nodes[a].id, g.nodes[b].id)
}
