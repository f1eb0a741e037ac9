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
	// DegreeNormalized divides each score by the node's weighted degree
	// (ACL's sweep order). Raw PPR favours well-connected nodes, and a hub
	// next to a low-degree seed can outscore the seed; normalised scores
	// never rank any node above a single seed, damp hubs, and still sum
	// to at most 1.
	DegreeNormalized bool
	// Viewer, when not nil, limits the walk to the nodes and edges it
	// sees: mass never flows through what it may not see.
	Viewer *Viewer
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
// It runs the forward push of Andersen, Chung and Lang (2006) on the lazy
// random walk: the seeds' mass starts as residual r; pushing node u moves
// Alpha·r(u) into its score, keeps (1−Alpha)·r(u)/2 as u's residual and
// spreads (1−Alpha)·r(u)/2 over u's traversable edges in proportion to
// their weights. The lazy walk makes scores fall off with distance even
// from a seed of degree 1, where the plain walk ranks the seed's only
// neighbour above it. Edges are followed in both
// directions; invalidated edges, archived nodes and inert edges are not
// traversed; a node with no traversable edge keeps all of its residual as
// score. Mass is conserved: scores sum to at most 1, the rest being the
// residual left when the push stops (threshold, Iterations or MaxNodes).
// The cost depends on Epsilon, Alpha and MaxNodes, not on the graph's size.
func (x *Index) PPR(ws string, seeds map[string]float64, opt PPROptions) map[string]float64 {
	opt = opt.withDefaults()
	x.mu.RLock()
	defer x.mu.RUnlock()
	g := x.ws[ws]
	if g == nil {
		return nil
	}
	ids := make([]string, 0, len(seeds))
	total := 0.0
	for id, w := range seeds {
		if o, ok := g.ids[id]; ok && w > 0 && !math.IsInf(w, 0) && g.usable(o, false) && g.visible(o, opt.Viewer) {
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
	touched := s.touch[:0] // every slot with p or r > 0, in first-touch order
	queue, next := s.queue[:0], s.next[:0]
	for _, id := range ids {
		o := g.ids[id]
		touched = append(touched, o)
		s.r[o] = seeds[id] / total
		s.inq[o] = true
		queue = append(queue, o)
	}

	for sweep := 0; sweep < opt.Iterations && len(queue) > 0 && (sweep == 0 || len(touched) < opt.MaxNodes); sweep++ {
		next = next[:0]
		for _, u := range queue {
			touched, next = g.push(s, u, opt, touched, next)
			if len(touched) >= opt.MaxNodes {
				break
			}
		}
		queue, next = next, queue
	}

	scores := make(map[string]float64, len(touched))
	for _, o := range touched {
		if v := s.p[o]; v > 0 {
			if opt.DegreeNormalized {
				v /= max(1, g.weightedDegree(o, opt.Viewer))
			}
			scores[g.nodes[o].id] = v
		}
		s.p[o], s.r[o], s.inq[o] = 0, 0, false
	}
	s.touch, s.queue, s.next = touched[:0], queue[:0], next[:0]
	return scores
}

// withDefaults is o with the defaults in place of unset or out-of-range
// values.
func (o PPROptions) withDefaults() PPROptions {
	if !(o.Alpha > 0 && o.Alpha < 1) {
		o.Alpha = DefaultPPRAlpha
	}
	if o.Iterations <= 0 {
		o.Iterations = DefaultPPRIterations
	}
	if !(o.Epsilon > 0) {
		o.Epsilon = DefaultPPREpsilon
	}
	if o.MaxNodes <= 0 {
		o.MaxNodes = DefaultPPRMaxNodes
	}
	return o
}

// push pushes node u (dequeued): Alpha of its residual goes to its score,
// half the rest stays, half spreads over its traversable edges. Nodes
// first reached are appended to touched, nodes whose residual crosses the
// push threshold (u included) to next.
func (g *wsGraph) push(s *scratch, u int32, opt PPROptions, touched, next []int32) ([]int32, []int32) {
	alpha, eps := opt.Alpha, opt.Epsilon
	s.inq[u] = false
	ru := s.r[u]
	if ru == 0 {
		return touched, next
	}
	wsum := g.weightedDegree(u, opt.Viewer)
	if wsum == 0 {
		// A lazy walk from a node without traversable edges
		// never leaves it.
		s.p[u] += ru
		s.r[u] = 0
		return touched, next
	}
	s.p[u] += alpha * ru
	s.r[u] = (1 - alpha) * ru / 2
	share := (1 - alpha) * ru / 2 / wsum
	for _, list := range [2][]adj{g.nodes[u].out, g.nodes[u].in} {
		for _, a := range list {
			h := g.hot[a.edge]
			v := a.nbr
			if h.invalid || !g.usable(v, false) || !g.visible(v, opt.Viewer) || !g.crossable(a.edge, opt.Viewer) {
				continue
			}
			if s.r[v] == 0 && s.p[v] == 0 {
				touched = append(touched, v)
			}
			s.r[v] += share * float64(h.weight)
			if !s.inq[v] && s.r[v] >= g.pushThreshold(v, eps) {
				s.inq[v] = true
				next = append(next, v)
			}
		}
	}
	if !s.inq[u] && s.r[u] >= g.pushThreshold(u, eps) {
		s.inq[u] = true
		next = append(next, u)
	}
	return touched, next
}

// weightedDegree sums the weights of o's traversable edges.
func (g *wsGraph) weightedDegree(o int32, v *Viewer) float64 {
	w := 0.0
	for _, list := range [2][]adj{g.nodes[o].out, g.nodes[o].in} {
		for _, a := range list {
			if h := g.hot[a.edge]; !h.invalid && g.usable(a.nbr, false) && g.visible(a.nbr, v) && g.crossable(a.edge, v) {
				w += float64(h.weight)
			}
		}
	}
	return w
}

// pushThreshold is the residual above which v is pushed. It uses the stored
// degree, not the traversable one, to stay O(1).
func (g *wsGraph) pushThreshold(v int32, eps float64) float64 {
	return eps * float64(max(1, g.deg[v]))
}
