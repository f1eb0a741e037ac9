package graph

import (
	"math"
	"slices"
)

// PPROptions tunes PPR. Zero values take the defaults.
type PPROptions struct {
	// Alpha is the restart (teleport) probability; default 0.15.
	Alpha float64
	// Iterations caps the push sweeps; default 20. A sweep pushes every
	// node queued by the previous one, like one step of power iteration
	// restricted to the active set.
	Iterations int
	// Epsilon is the push threshold: a node is pushed while its residual is
	// at least Epsilon × its degree; default 1e-4. Total work is at most
	// about 1/(Epsilon·Alpha) edge visits whatever the graph's size.
	Epsilon float64
	// MaxNodes stops the push once this many nodes hold mass; default 10000.
	MaxNodes int
}

// PPR defaults.
const (
	DefaultPPRAlpha      = 0.15
	DefaultPPRIterations = 20
	DefaultPPREpsilon    = 1e-4
	DefaultPPRMaxNodes   = 10000
)

// PPR computes personalised PageRank in workspace ws from the seeds (node id
// → weight; weights need not sum to 1, non-positive ones and unknown or
// archived nodes are ignored) and returns node id → score for every node
// that received any, seeds included.
//
// It runs the forward push of Andersen, Chung and Lang (2006), in its
// non-lazy form: the seeds' mass starts as residual r; pushing node u moves
// Alpha·r(u) into its score and spreads (1−Alpha)·r(u) over its traversable
// edges in proportion to their weights. Edges are followed in both
// directions; invalidated edges, archived nodes and inert edges are not
// traversed; a node with no traversable edge keeps all of its residual as
// score. Mass is conserved: scores sum to at most 1, the rest being the
// residual left when the push stops (threshold, Iterations or MaxNodes).
// The cost depends on Epsilon, Alpha and MaxNodes, not on the graph's size.
func (x *Index) PPR(ws string, seeds map[string]float64, o PPROptions) map[string]float64 {
	alpha := o.Alpha
	if !(alpha > 0 && alpha < 1) {
		alpha = DefaultPPRAlpha
	}
	iters := o.Iterations
	if iters <= 0 {
		iters = DefaultPPRIterations
	}
	eps := o.Epsilon
	if !(eps > 0) {
		eps = DefaultPPREpsilon
	}
	maxNodes := o.MaxNodes
	if maxNodes <= 0 {
		maxNodes = DefaultPPRMaxNodes
	}

	x.mu.RLock()
	defer x.mu.RUnlock()
	g := x.ws[ws]
	if g == nil {
		return nil
	}
	ids := make([]string, 0, len(seeds))
	total := 0.0
	for id, w := range seeds {
		if o, ok := g.ids[id]; ok && w > 0 && !math.IsInf(w, 0) && g.usable(o, false) {
			ids = append(ids, id)
			total += w
		}
	}
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)

	s := x.getScratch(len(g.nodes))
	defer x.putScratch(s)
	s.growPPR(len(g.nodes))
	touched := s.list // every node with p or r > 0, in first-touch order
	var queue, next []int32
	for _, id := range ids {
		o := g.ids[id]
		touched = append(touched, o)
		s.r[o] = seeds[id] / total
		s.inq[o] = true
		queue = append(queue, o)
	}

	for sweep := 0; sweep < iters && len(queue) > 0 && len(touched) < maxNodes; sweep++ {
		next = next[:0]
		for _, u := range queue {
			s.inq[u] = false
			ru := s.r[u]
			if ru == 0 {
				continue
			}
			adj := [2][]int32{g.nodes[u].out, g.nodes[u].in}
			wsum := 0.0
			for dir, list := range adj {
				for _, eo := range list {
					if _, ok := g.pprEdge(u, eo, dir == 0); ok {
						wsum += float64(g.edges[eo].weight)
					}
				}
			}
			s.r[u] = 0
			if wsum == 0 {
				s.p[u] += ru
				continue
			}
			s.p[u] += alpha * ru
			share := (1 - alpha) * ru / wsum
			for dir, list := range adj {
				for _, eo := range list {
					v, ok := g.pprEdge(u, eo, dir == 0)
					if !ok {
						continue
					}
					if s.r[v] == 0 && s.p[v] == 0 {
						touched = append(touched, v)
					}
					s.r[v] += share * float64(g.edges[eo].weight)
					if !s.inq[v] && s.r[v] >= eps*float64(len(g.nodes[v].out)+len(g.nodes[v].in)) {
						s.inq[v] = true
						next = append(next, v)
					}
				}
			}
			if len(touched) >= maxNodes {
				break
			}
		}
		queue, next = next, queue
	}

	scores := make(map[string]float64, len(touched))
	for _, o := range touched {
		if s.p[o] > 0 {
			scores[g.nodes[o].id] = s.p[o]
		}
		s.p[o], s.r[o], s.inq[o] = 0, 0, false
	}
	s.list = touched[:0]
	return scores
}

// pprEdge returns the node across edge eo from u when PPR may follow it.
func (g *wsGraph) pprEdge(u, eo int32, out bool) (int32, bool) {
	e := &g.edges[eo]
	if e.invalid {
		return 0, false
	}
	v := e.to
	if !out {
		v = e.from
	}
	return v, g.usable(v, false)
}
