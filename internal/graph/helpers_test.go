package graph

import (
	"fmt"
	"strings"
	"testing"
)

func node(ws, id string) Node {
	return Node{ID: id, Workspace: ws, Label: "concept", Key: id, Name: id}
}

func edge(ws, id, from, to, rel string) Edge {
	return Edge{ID: id, Workspace: ws, From: from, To: to, Relation: rel, Weight: 1}
}

// hopsString renders hops compactly: "node@depth<-from/via/REL", with "~"
// before the relation when the edge was followed backwards.
func hopsString(hs []Hop) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		dir := ""
		if !h.Forward {
			dir = "~"
		}
		parts[i] = fmt.Sprintf("%s@%d<-%s/%s/%s%s", h.Node, h.Depth, h.From, h.Via, dir, h.Relation)
	}
	return strings.Join(parts, " ")
}

func hopNodes(hs []Hop) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Node
	}
	return strings.Join(parts, ",")
}

func mustNeighbors(t *testing.T, x *Index, q NeighborQuery) []Hop {
	t.Helper()
	hs, err := x.Neighbors(q)
	if err != nil {
		t.Fatalf("Neighbors(%+v): %v", q, err)
	}
	return hs
}

func checkStats(t *testing.T, x *Index, nodes, edges int) {
	t.Helper()
	if n, e := x.Stats(); n != nodes || e != edges {
		t.Errorf("Stats() = %d nodes, %d edges; want %d, %d", n, e, nodes, edges)
	}
}
