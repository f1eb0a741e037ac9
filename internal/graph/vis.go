package graph

import "slices"

// Visibility. The index does not know memgate's access rules; it keeps,
// per node and per restricted edge, who may see it as a bit set of access
// levels plus a list of owners, and a traversal asked on behalf of a
// viewer crosses only what the viewer sees. The caller (internal/core)
// builds both from the record access check, so that checking a node costs
// one flag test for a node open to everyone and a few comparisons
// otherwise: traversal never goes back to the store.

// Public is the level bit of what everyone in the workspace may see. A
// node whose Vis holds it is marked open, the traversal's fast path.
const Public uint8 = 1

// Vis says who may see a node or an edge: viewers holding one of the level
// bits in Levels, and viewers whose Owner is one of Owners. The zero Vis
// is seen by no viewer (only by a nil *Viewer).
type Vis struct {
	Levels uint8
	Owners []string
}

// Viewer is on whose behalf a query runs: the level bits it holds and
// the owner name whose owned items it sees. A nil *Viewer sees everything
// (memgate's own jobs, tests and benchmarks).
type Viewer struct {
	Levels uint8
	Owner  string
}

// Sees reports whether v may see what s guards.
func (v *Viewer) Sees(s Vis) bool {
	if v == nil || s.Levels&v.Levels != 0 {
		return true
	}
	return v.Owner != "" && slices.Contains(s.Owners, v.Owner)
}

// visible reports whether node slot o is visible to v.
func (g *wsGraph) visible(o int32, v *Viewer) bool {
	if v == nil || (g.flags[o]&open != 0 && v.Levels&Public != 0) {
		return true
	}
	return v.Sees(g.nodes[o].vis)
}

// crossable reports whether edge slot eo is visible to v on its own
// account (its ends are checked separately).
func (g *wsGraph) crossable(eo int32, v *Viewer) bool {
	return v == nil || !g.hot[eo].restricted || v.Sees(g.edges[eo].vis)
}

// Visible reports whether the node is present, not archived, and visible
// to v.
func (x *Index) Visible(ws, id string, v *Viewer) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	g := x.ws[ws]
	if g == nil {
		return false
	}
	o, ok := g.ids[id]
	return ok && g.usable(o, false) && g.visible(o, v)
}
