package core

import (
	"context"
	"slices"

	"github.com/memgate/memgate/internal/graph"
	"github.com/memgate/memgate/internal/retrieve"
)

// The graph retrieval signal (SPEC §5, issue 5): the nodes a query names
// (names, keys and aliases, recognised in its text) seed a personalised
// PageRank over the workspace's graph; a record scores the PageRank mass
// of the nodes it links to. The engine keeps the candidates the search's
// filter admits and ranks them (retrieve.GraphSignal).

// graphSeedNodes bounds how many top PageRank nodes lend their records.
const (
	graphSeedNodes   = 24
	graphNodeRecords = 200
)

// DefaultGraphSignal says whether searches run the graph signal when the
// request names no signals. Measured on the LoCoMo and LongMemEval dev
// files, with the walk over the turns' entities (retrieve/entitywalk.go)
// joining it, it costs a little recall there (docs/retrieval-rounds.md), so it
// is off by default and on when asked for (signals: ["graph", ...]).
var DefaultGraphSignal = false

func (s *Service) graphSignal(ctx context.Context, f retrieve.Filter, query string) ([]retrieve.Scored, error) {
	x, err := s.graphX(ctx)
	if err != nil {
		return nil, err
	}
	// The walk sees only the nodes and edges the searcher may see, so a
	// hidden node neither seeds it nor carries mass to visible ones.
	ws := f.Workspace
	v := &graph.Viewer{Owner: f.OwnAgent}
	for _, a := range f.Access {
		v.Levels |= levelBit(a)
	}
	seeds := x.RecogniseFor(ws, query, v)
	if len(seeds) == 0 {
		return nil, nil
	}
	m := make(map[string]float64, len(seeds))
	for _, id := range seeds {
		m[id] = 1
	}
	type nodeScore struct {
		id    string
		score float64
	}
	var nodes []nodeScore
	for id, sc := range x.PPR(ws, m, graph.PPROptions{Viewer: v}) {
		nodes = append(nodes, nodeScore{id, sc})
	}
	slices.SortFunc(nodes, func(a, b nodeScore) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		if a.id < b.id {
			return -1
		}
		return 1
	})
	nodes = nodes[:min(len(nodes), graphSeedNodes)]
	scores := map[string]float64{}
	for _, n := range nodes {
		node, ok := x.Node(ws, n.id)
		if !ok {
			continue
		}
		ids, err := s.store.MentioningRecords(ctx, ws, node.Label+":"+node.Key, graphNodeRecords)
		if err != nil {
			return nil, storeErr(err, "graph")
		}
		for _, id := range ids {
			scores[id] += n.score
		}
	}
	out := make([]retrieve.Scored, 0, len(scores))
	for id, sc := range scores {
		out = append(out, retrieve.Scored{ID: id, Score: sc})
	}
	return out, nil
}
