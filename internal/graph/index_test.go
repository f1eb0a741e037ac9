package graph

import (
	"slices"
	"testing"
)

func TestWorkspaceIsolation(t *testing.T) {
	x := New()
	// The same ids, keys and names in two workspaces.
	for _, ws := range []string{"w1", "w2"} {
		for _, id := range []string{"a", "b", "c"} {
			n := node(ws, id)
			n.Name = "Alpha " + id
			x.PutNode(n)
		}
	}
	x.PutEdge(edge("w1", "e1", "a", "b", "USES"))
	x.PutEdge(edge("w2", "e1", "b", "c", "USES")) // same edge id, other workspace
	// An edge of w1 naming a node that lives only in w2.
	x.PutNode(node("w2", "only2"))
	x.PutEdge(edge("w1", "ex", "a", "only2", "USES"))
	checkStats(t, x, 7, 3)

	want := map[string]string{"w1/a": "b", "w1/b": "a", "w1/c": "", "w2/a": "", "w2/b": "c", "w2/c": "b", "w2/only2": ""}
	for k, w := range want {
		ws, id := k[:2], k[3:]
		got := hopNodes(mustNeighbors(t, x, NeighborQuery{Workspace: ws, Node: id, Depth: 3}))
		if got != w {
			t.Errorf("Neighbors %s = %q, want %q", k, got, w)
		}
	}
	if _, ok := x.Path("w1", "a", "only2", 6, nil); ok {
		t.Error("path w1 a → only2 crosses workspaces")
	}
	if _, ok := x.Path("w2", "a", "c", 6, nil); ok {
		t.Error("w2 a → c found through w1's edge")
	}
	if hs, ok := x.Path("w2", "b", "c", 6, nil); !ok || hopsString(hs) != "c@1<-b/e1/USES" {
		t.Errorf("w2 b → c = %s, %v", hopsString(hs), ok)
	}
	if s := x.PPR("w1", map[string]float64{"a": 1}, PPROptions{}); s["only2"] != 0 || s["c"] != 0 || s["b"] == 0 {
		t.Errorf("PPR w1 from a = %v", s)
	}
	if got := x.Recognise("w2", "alpha b and alpha c"); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("Recognise w2 = %v", got)
	}
	if got := x.Recognise("w3", "alpha b"); got != nil {
		t.Errorf("Recognise in an unknown workspace = %v", got)
	}
	if _, ok := x.Node("w3", "a"); ok {
		t.Error("Node found in an unknown workspace")
	}

	// Removing in one workspace leaves the other alone.
	x.RemoveNode("w1", "b")
	if hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w2", Node: "c", Depth: 1}); hopNodes(hs) != "b" {
		t.Errorf("w2 c after removing w1 b: %s", hopNodes(hs))
	}
	x.RemoveEdge("w1", "e1") // already gone with w1 b; w2's e1 must survive
	if hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w2", Node: "b", Depth: 1}); hopNodes(hs) != "c" {
		t.Errorf("w2 b after RemoveEdge(w1, e1): %s", hopNodes(hs))
	}
	checkStats(t, x, 6, 2)

	x.DropWorkspace("w2")
	checkStats(t, x, 2, 1)
	if _, err := x.Neighbors(NeighborQuery{Workspace: "w2", Node: "b", Depth: 1}); err == nil {
		t.Error("dropped workspace still answers")
	}
}

// An edge put before its endpoint is inert until the node arrives.
func TestEdgeBeforeNode(t *testing.T) {
	x := New()
	x.PutNode(node("w", "a"))
	x.PutEdge(edge("w", "e1", "a", "later", "USES"))
	checkStats(t, x, 1, 1)
	if hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 1}); len(hs) != 0 {
		t.Errorf("edge to a missing node traversed: %s", hopsString(hs))
	}
	x.PutNode(node("w", "later"))
	if hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 1}); hopNodes(hs) != "later" {
		t.Errorf("after the node arrives: %s", hopsString(hs))
	}
	// Removing the placeholder's only edge frees it: putting the node later
	// gives a fresh, edgeless node.
	x.PutEdge(edge("w", "e2", "a", "ghost", "USES"))
	x.RemoveEdge("w", "e2")
	x.PutNode(node("w", "ghost"))
	if hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "ghost", Depth: 1}); len(hs) != 0 {
		t.Errorf("removed edge came back: %s", hopsString(hs))
	}
	checkStats(t, x, 3, 1)
}

func TestRemoval(t *testing.T) {
	x := sample(t)
	x.RemoveNode("w", "b") // drops e1, e2, e7
	checkStats(t, x, 9, 5)
	if got := hopNodes(mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 3})); got != "f,g" {
		t.Errorf("after removing b: %s", got)
	}
	if _, ok := x.Node("w", "b"); ok {
		t.Error("removed node still found")
	}
	// Putting b back does not bring its edges back.
	x.PutNode(node("w", "b"))
	if hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "b", Depth: 1, IncludeArchived: true}); len(hs) != 0 {
		t.Errorf("re-put b has edges: %s", hopsString(hs))
	}
	x.RemoveEdge("w", "e5")
	x.RemoveEdge("w", "e5") // twice is harmless
	x.RemoveEdge("w", "nope")
	x.RemoveNode("w", "nope")
	x.RemoveNode("nows", "a")
	checkStats(t, x, 10, 4)
	if got := hopNodes(mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 3})); got != "g" {
		t.Errorf("after removing e5: %s", got)
	}
	// Slots are reused: the graph keeps working after churn.
	for i := range 50 {
		id := "t" + itoa(i)
		x.PutNode(node("w", id))
		x.PutEdge(edge("w", "te"+itoa(i), "a", id, "USES"))
	}
	for i := range 50 {
		if i%2 == 0 {
			x.RemoveNode("w", "t"+itoa(i))
		}
	}
	hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 1, Limit: 1000})
	if len(hs) != 26 { // 25 odd t's and g
		t.Errorf("after churn: %d neighbours, want 26", len(hs))
	}
	checkStats(t, x, 35, 29)
}

func TestEdgeReplace(t *testing.T) {
	x := sample(t)
	// Same id, new endpoints and relation: moves the edge.
	x.PutEdge(edge("w", "e5", "a", "z", "SOLVES"))
	checkStats(t, x, 10, 8)
	got := hopsString(mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 1}))
	if want := "b@1<-a/e1/CAUSES g@1<-a/e6/~MENTIONS z@1<-a/e5/SOLVES"; got != want {
		t.Errorf("after moving e5:\n got %s\nwant %s", got, want)
	}
	if hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "f", Depth: 1}); len(hs) != 0 {
		t.Errorf("f still linked: %s", hopsString(hs))
	}
	// Same endpoints, new relation.
	x.PutEdge(edge("w", "e5", "a", "z", "USES"))
	if hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 1, Relations: []string{"USES"}}); hopNodes(hs) != "z" {
		t.Errorf("relation not replaced: %s", hopsString(hs))
	}
}

func TestInvalidatedEdges(t *testing.T) {
	x := sample(t)
	inv := edge("w", "e2", "b", "c", "CAUSES")
	inv.Invalidated = true
	x.PutEdge(inv)
	checkStats(t, x, 10, 8)
	if got := hopNodes(mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 3})); got != "b,f,g" {
		t.Errorf("traversed an invalidated edge: %s", got)
	}
	if _, ok := x.Path("w", "a", "e", 6, nil); ok {
		t.Error("path through an invalidated edge")
	}
	if s := x.PPR("w", map[string]float64{"b": 1}, PPROptions{}); s["c"] != 0 {
		t.Errorf("PPR crossed an invalidated edge: %v", s)
	}
	inv.Invalidated = false
	x.PutEdge(inv)
	if got := hopNodes(mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 3})); got != "b,f,g,c,d" {
		t.Errorf("revalidated edge not traversed: %s", got)
	}
}

func TestArchiveToggle(t *testing.T) {
	x := sample(t)
	h := node("w", "h")
	x.PutNode(h) // unarchive
	if got := hopNodes(mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "b", Depth: 2})); got != "a,c,h,d,f,g,i" {
		t.Errorf("after unarchiving h: %s", got)
	}
	if _, ok := x.Path("w", "a", "i", 6, nil); !ok {
		t.Error("no path through unarchived h")
	}
	n, ok := x.Node("w", "h")
	if !ok || n.Archived || n.Label != "concept" || n.Workspace != "w" {
		t.Errorf("Node(h) = %+v, %v", n, ok)
	}
}

func TestIgnoredWrites(t *testing.T) {
	x := New()
	x.PutNode(Node{ID: "a"})
	x.PutNode(Node{Workspace: "w"})
	x.PutEdge(Edge{ID: "e", Workspace: "w", From: "a"})
	x.PutEdge(Edge{ID: "e", From: "a", To: "b"})
	x.PutEdge(Edge{Workspace: "w", From: "a", To: "b"})
	checkStats(t, x, 0, 0)
}

// Weights that are not positive and finite count as 1.
func TestEdgeWeights(t *testing.T) {
	scores := func(w float64) map[string]float64 {
		x := New()
		for _, id := range []string{"s", "a", "b"} {
			x.PutNode(node("w", id))
		}
		e := edge("w", "ea", "s", "a", "USES")
		e.Weight = w
		x.PutEdge(e)
		x.PutEdge(edge("w", "eb", "s", "b", "USES"))
		return x.PPR("w", map[string]float64{"s": 1}, PPROptions{Iterations: 2})
	}
	for _, w := range []float64{0, -2, nan(), inf()} {
		if s := scores(w); s["a"] != s["b"] || s["a"] == 0 {
			t.Errorf("weight %v: a %v, b %v; want equal", w, s["a"], s["b"])
		}
	}
	if s := scores(3); !(s["a"] > 2*s["b"]) {
		t.Errorf("weight 3: a %v, b %v", s["a"], s["b"])
	}
}
