package graph

import (
	"testing"
)

// TestViewerFilters: a traversal on behalf of a viewer crosses only the
// nodes and edges it sees, on every operation — neighbors, path, PPR and
// recognition — and a nil viewer sees everything.
func TestViewerFilters(t *testing.T) {
	x := New()
	const ws = "w"
	open := Vis{Levels: Public}
	for id, v := range map[string]Vis{
		"a": open, "b": open, "c": open,
		"hidden":  {Levels: 1 << 4},                          // e.g. sensitive
		"owned":   {Levels: 1 << 1, Owners: []string{"bob"}}, // e.g. agent-level of bob
		"nothing": {},
	} {
		n := node(ws, id)
		n.Name, n.Vis = id+" thing", v
		x.PutNode(n)
	}
	x.PutEdge(edge(ws, "e1", "a", "hidden", "USES"))
	x.PutEdge(edge(ws, "e2", "hidden", "c", "USES"))
	x.PutEdge(edge(ws, "e3", "a", "owned", "USES"))
	x.PutEdge(edge(ws, "e4", "a", "nothing", "USES"))
	restricted := edge(ws, "e5", "a", "b", "USES")
	restricted.Vis = &Vis{Levels: 1 << 1, Owners: []string{"bob"}}
	x.PutEdge(restricted)

	alice := &Viewer{Levels: Public, Owner: "alice"}
	bob := &Viewer{Levels: Public, Owner: "bob"}
	oper := &Viewer{Levels: Public | 1<<1 | 1<<2 | 1<<4}
	for _, c := range []struct {
		name string
		v    *Viewer
		want string
	}{
		{"alice", alice, ""},
		{"bob", bob, "b,owned"},
		{"operator", oper, "b,hidden,owned"},
		{"nil", nil, "b,hidden,nothing,owned"},
	} {
		hs := mustNeighbors(t, x, NeighborQuery{Workspace: ws, Node: "a", Depth: 1, Viewer: c.v})
		if got := hopNodes(hs); got != c.want {
			t.Errorf("%s: neighbors of a = %q, want %q", c.name, got, c.want)
		}
	}
	if _, err := x.Neighbors(NeighborQuery{Workspace: ws, Node: "hidden", Depth: 1, Viewer: alice}); err != ErrNotFound {
		t.Errorf("start node hidden from the viewer: %v, want ErrNotFound", err)
	}
	if _, ok := x.PathFor(ws, "a", "c", 4, nil, alice); ok {
		t.Error("alice's path a→c goes through a node she may not see")
	}
	if _, ok := x.PathFor(ws, "a", "c", 4, nil, oper); !ok {
		t.Error("the operator's path a→c")
	}
	if got := x.RecogniseFor(ws, "what about the hidden thing", alice); len(got) != 0 {
		t.Errorf("alice recognises %v", got)
	}
	if got := x.RecogniseFor(ws, "what about the hidden thing", oper); len(got) != 1 {
		t.Errorf("operator recognises %v", got)
	}
	scores := x.PPR(ws, map[string]float64{"a": 1}, PPROptions{Viewer: alice})
	for id := range scores {
		if id != "a" {
			t.Errorf("alice's PPR reaches %s", id)
		}
	}
	if scores := x.PPR(ws, map[string]float64{"hidden": 1}, PPROptions{Viewer: alice}); len(scores) != 0 {
		t.Errorf("a hidden seed: %v", scores)
	}
	if !x.Visible(ws, "owned", bob) || x.Visible(ws, "owned", alice) || !x.Visible(ws, "nothing", nil) {
		t.Error("Visible")
	}
}
