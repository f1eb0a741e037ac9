package graph

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// sample builds, in workspace "w":
//
//	g -MENTIONS-> a -CAUSES-> b -CAUSES-> c -CAUSES-> d -CAUSES-> e
//	              a -USES-> f
//	              b -PART_OF-> h (archived) -USES-> i
//	z (isolated)
func sample(t *testing.T) *Index {
	t.Helper()
	x := New()
	for _, id := range []string{"a", "b", "c", "d", "e", "f", "g", "i", "z"} {
		x.PutNode(node("w", id))
	}
	h := node("w", "h")
	h.Archived = true
	x.PutNode(h)
	for _, e := range []Edge{
		edge("w", "e1", "a", "b", "CAUSES"),
		edge("w", "e2", "b", "c", "CAUSES"),
		edge("w", "e3", "c", "d", "CAUSES"),
		edge("w", "e4", "d", "e", "CAUSES"),
		edge("w", "e5", "a", "f", "USES"),
		edge("w", "e6", "g", "a", "MENTIONS"),
		edge("w", "e7", "b", "h", "PART_OF"),
		edge("w", "e8", "h", "i", "USES"),
	} {
		x.PutEdge(e)
	}
	checkStats(t, x, 10, 8)
	return x
}

func TestNeighbors(t *testing.T) {
	x := sample(t)
	cases := []struct {
		name string
		q    NeighborQuery
		want string
	}{
		{"depth 1 both", NeighborQuery{Node: "a", Depth: 1},
			"b@1<-a/e1/CAUSES f@1<-a/e5/USES g@1<-a/e6/~MENTIONS"},
		{"depth 1 out", NeighborQuery{Node: "a", Depth: 1, Direction: Out},
			"b@1<-a/e1/CAUSES f@1<-a/e5/USES"},
		{"depth 1 in", NeighborQuery{Node: "a", Depth: 1, Direction: In},
			"g@1<-a/e6/~MENTIONS"},
		{"depth 2 hides archived and what lies behind it", NeighborQuery{Node: "a", Depth: 2},
			"b@1<-a/e1/CAUSES f@1<-a/e5/USES g@1<-a/e6/~MENTIONS c@2<-b/e2/CAUSES"},
		{"depth 3", NeighborQuery{Node: "a", Depth: 3},
			"b@1<-a/e1/CAUSES f@1<-a/e5/USES g@1<-a/e6/~MENTIONS c@2<-b/e2/CAUSES d@3<-c/e3/CAUSES"},
		{"depth 3 include archived", NeighborQuery{Node: "a", Depth: 3, IncludeArchived: true},
			"b@1<-a/e1/CAUSES f@1<-a/e5/USES g@1<-a/e6/~MENTIONS c@2<-b/e2/CAUSES h@2<-b/e7/PART_OF d@3<-c/e3/CAUSES i@3<-h/e8/USES"},
		{"relation filter", NeighborQuery{Node: "a", Depth: 3, Relations: []string{"CAUSES"}},
			"b@1<-a/e1/CAUSES c@2<-b/e2/CAUSES d@3<-c/e3/CAUSES"},
		{"two relations", NeighborQuery{Node: "b", Depth: 2, Relations: []string{"USES", "CAUSES"}},
			"a@1<-b/e1/~CAUSES c@1<-b/e2/CAUSES d@2<-c/e3/CAUSES f@2<-a/e5/USES"},
		{"in, depth 3 from the chain's end", NeighborQuery{Node: "e", Depth: 3, Direction: In},
			"d@1<-e/e4/~CAUSES c@2<-d/e3/~CAUSES b@3<-c/e2/~CAUSES"},
		{"out from the chain's end", NeighborQuery{Node: "e", Depth: 3, Direction: Out}, ""},
		{"limit cuts in order", NeighborQuery{Node: "a", Depth: 3, Limit: 2},
			"b@1<-a/e1/CAUSES f@1<-a/e5/USES"},
		{"limit inside a later level", NeighborQuery{Node: "a", Depth: 3, Limit: 4, IncludeArchived: true},
			"b@1<-a/e1/CAUSES f@1<-a/e5/USES g@1<-a/e6/~MENTIONS c@2<-b/e2/CAUSES"},
		{"isolated", NeighborQuery{Node: "z", Depth: 3}, ""},
		{"archived start with IncludeArchived", NeighborQuery{Node: "h", Depth: 1, IncludeArchived: true},
			"b@1<-h/e7/~PART_OF i@1<-h/e8/USES"},
	}
	for _, c := range cases {
		c.q.Workspace = "w"
		got := hopsString(mustNeighbors(t, x, c.q))
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestNeighborsErrors(t *testing.T) {
	x := sample(t)
	cases := []struct {
		q    NeighborQuery
		want error
	}{
		{NeighborQuery{Workspace: "w", Node: "a", Depth: 0}, ErrDepth},
		{NeighborQuery{Workspace: "w", Node: "a", Depth: 4}, ErrDepth},
		{NeighborQuery{Workspace: "w", Node: "a", Depth: -1}, ErrDepth},
		{NeighborQuery{Node: "a", Depth: 1}, ErrWorkspace},
		{NeighborQuery{Workspace: "w", Node: "a", Depth: 1, Direction: "up"}, ErrDirection},
		{NeighborQuery{Workspace: "w", Node: "a", Depth: 1, Limit: -1}, ErrLimit},
		{NeighborQuery{Workspace: "w", Node: "a", Depth: 1, Relations: []string{"causes"}}, ErrRelation},
		{NeighborQuery{Workspace: "w", Node: "nope", Depth: 1}, ErrNotFound},
		{NeighborQuery{Workspace: "other", Node: "a", Depth: 1}, ErrNotFound},
		{NeighborQuery{Workspace: "w", Node: "h", Depth: 1}, ErrNotFound}, // archived
	}
	for _, c := range cases {
		if _, err := x.Neighbors(c.q); !errors.Is(err, c.want) {
			t.Errorf("Neighbors(%+v) error = %v, want %v", c.q, err, c.want)
		}
	}
}

func TestNeighborsLimitBounds(t *testing.T) {
	x := New()
	x.PutNode(node("w", "hub"))
	for i := range 1500 {
		id := string(rune('A'+i%26)) + itoa(i)
		x.PutNode(node("w", id))
		x.PutEdge(edge("w", "e"+itoa(i), "hub", id, "USES"))
	}
	for _, c := range []struct{ limit, want int }{{0, DefaultLimit}, {7, 7}, {MaxLimit + 500, MaxLimit}} {
		hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "hub", Depth: 2, Limit: c.limit})
		if len(hs) != c.want {
			t.Errorf("limit %d: %d hops, want %d", c.limit, len(hs), c.want)
		}
		if !slices.IsSortedFunc(hs, func(a, b Hop) int {
			if a.Depth != b.Depth {
				return a.Depth - b.Depth
			}
			return cmpString(a.Node, b.Node)
		}) {
			t.Errorf("limit %d: hops not sorted by depth then id", c.limit)
		}
	}
	// The first page must be the smallest ids, not the first inserted.
	hs := mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "hub", Depth: 1, Limit: 3})
	if got := hopNodes(hs); got != "A0,A1014,A104" {
		t.Errorf("smallest ids = %s", got)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// The hop reported for a node reachable several ways is the same whatever
// the order in which the graph was built.
func TestNeighborsDeterministicParents(t *testing.T) {
	edges := []Edge{
		edge("w", "e1", "s", "p2", "USES"),
		edge("w", "e2", "s", "p1", "USES"),
		edge("w", "e3", "p2", "x", "USES"),
		edge("w", "e4", "p1", "x", "CAUSES"),
		edge("w", "e9", "s", "y", "USES"),
		edge("w", "e10", "s", "y", "CAUSES"), // parallel edge with a smaller id
	}
	build := func(order []int) *Index {
		x := New()
		for _, id := range []string{"x", "y", "p2", "p1", "s"} {
			x.PutNode(node("w", id))
		}
		for _, i := range order {
			x.PutEdge(edges[i])
		}
		return x
	}
	want := "p1@1<-s/e2/USES p2@1<-s/e1/USES y@1<-s/e10/CAUSES x@2<-p1/e4/CAUSES"
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {2, 5, 0, 3, 1, 4}} {
		got := hopsString(mustNeighbors(t, build(order), NeighborQuery{Workspace: "w", Node: "s", Depth: 2}))
		if got != want {
			t.Errorf("order %v:\n got %s\nwant %s", order, got, want)
		}
		p, ok := build(order).Path("w", "s", "x", 0, nil)
		if got := hopsString(p); !ok || got != "p1@1<-s/e2/USES x@2<-p1/e4/CAUSES" {
			t.Errorf("order %v: path %s, %v", order, got, ok)
		}
	}
}

func TestPath(t *testing.T) {
	x := sample(t)
	cases := []struct {
		name     string
		from, to string
		max      int
		rels     []string
		want     string
		ok       bool
	}{
		{"chain", "a", "e", 6, nil, "b@1<-a/e1/CAUSES c@2<-b/e2/CAUSES d@3<-c/e3/CAUSES e@4<-d/e4/CAUSES", true},
		{"exact depth", "a", "e", 4, nil, "b@1<-a/e1/CAUSES c@2<-b/e2/CAUSES d@3<-c/e3/CAUSES e@4<-d/e4/CAUSES", true},
		{"cut off", "a", "e", 3, nil, "", false},
		{"default depth", "g", "e", 0, nil, "a@1<-g/e6/MENTIONS b@2<-a/e1/CAUSES c@3<-b/e2/CAUSES d@4<-c/e3/CAUSES e@5<-d/e4/CAUSES", true},
		{"against edge direction", "e", "c", 6, nil, "d@1<-e/e4/~CAUSES c@2<-d/e3/~CAUSES", true},
		{"undirected across", "f", "g", 6, nil, "a@1<-f/e5/~USES g@2<-a/e6/~MENTIONS", true},
		{"relation filter blocks", "f", "c", 6, []string{"CAUSES"}, "", false},
		{"relation filter allows", "f", "c", 6, []string{"CAUSES", "USES"}, "a@1<-f/e5/~USES b@2<-a/e1/CAUSES c@3<-b/e2/CAUSES", true},
		{"unknown relation", "a", "b", 6, []string{"NOPE"}, "", false},
		{"disconnected", "a", "z", 6, nil, "", false},
		{"through archived", "a", "i", 6, nil, "", false},
		{"to archived", "a", "h", 6, nil, "", false},
		{"missing node", "a", "nope", 6, nil, "", false},
		{"same node", "a", "a", 6, nil, "", true},
	}
	for _, c := range cases {
		hs, ok := x.Path("w", c.from, c.to, c.max, c.rels)
		if got := hopsString(hs); ok != c.ok || got != c.want {
			t.Errorf("%s: Path(%s, %s, %d) = %q, %v; want %q, %v", c.name, c.from, c.to, c.max, got, ok, c.want, c.ok)
		}
	}
	// A path over 7 hops is beyond MaxPathDepth even when asked for more.
	y := New()
	for i := range 8 {
		y.PutNode(node("w", itoa(i)))
		if i > 0 {
			y.PutEdge(edge("w", "e"+itoa(i), itoa(i-1), itoa(i), "FOLLOWS"))
		}
	}
	if _, ok := y.Path("w", "0", "7", 100, nil); ok {
		t.Error("7-hop path found with maxDepth 100; MaxPathDepth is 6")
	}
	if hs, ok := y.Path("w", "0", "6", 100, nil); !ok || len(hs) != 6 {
		t.Errorf("6-hop path: %d hops, %v", len(hs), ok)
	}
}

func TestByLabels(t *testing.T) {
	x := New()
	for i, l := range []string{"person", "project", "person", "ticket", "person", "project"} {
		n := node("w", "n"+itoa(i))
		n.Label = l
		n.Archived = i == 4
		x.PutNode(n)
	}
	other := node("v", "n9")
	other.Label = "person"
	x.PutNode(other)
	cases := []struct {
		labels   []string
		archived bool
		after    string
		limit    int
		want     []string
	}{
		{[]string{"person"}, false, "", 0, []string{"n0", "n2"}},
		{[]string{"person"}, true, "", 0, []string{"n0", "n2", "n4"}},
		{[]string{"person", "project", "person"}, false, "", 0, []string{"n0", "n1", "n2", "n5"}},
		{[]string{"person", "project"}, false, "n1", 0, []string{"n2", "n5"}},
		{[]string{"person", "project"}, false, "", 2, []string{"n0", "n1"}},
		{nil, true, "n2", 0, []string{"n3", "n4", "n5"}},
		{[]string{"Person"}, false, "", 0, nil},
		{[]string{"ticket"}, false, "", -1, nil},
	}
	for _, c := range cases {
		got := x.ByLabels("w", c.labels, c.archived, c.after, c.limit)
		if !slices.Equal(got, c.want) {
			t.Errorf("ByLabels(%v, %v, %q, %d) = %v, want %v", c.labels, c.archived, c.after, c.limit, got, c.want)
		}
	}
	// Relabelling moves the node between labels.
	n := node("w", "n0")
	n.Label = "ticket"
	x.PutNode(n)
	if got := x.ByLabels("w", []string{"ticket"}, false, "", 0); !slices.Equal(got, []string{"n0", "n3"}) {
		t.Errorf("after relabel: ticket = %v", got)
	}
	if got := x.ByLabels("w", []string{"person"}, false, "", 0); !slices.Equal(got, []string{"n2"}) {
		t.Errorf("after relabel: person = %v", got)
	}
}

// Path agrees with a plain breadth-first search on the length of the
// shortest path, returns a real path, and returns the same one whatever
// the order the graph was built in.
func TestPathRandomGraphs(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 99))
		n := 10 + rng.IntN(40)
		var edges []Edge
		for i := range n + rng.IntN(2*n) {
			u, v := rng.IntN(n), rng.IntN(n)
			edges = append(edges, edge("w", "e"+itoa(i), "n"+itoa(u), "n"+itoa(v), "RELATED_TO"))
		}
		archivedNode := rng.IntN(n)
		build := func(order []int) *Index {
			x := New()
			for i := range n {
				nd := node("w", "n"+itoa(i))
				nd.Archived = i == archivedNode
				x.PutNode(nd)
			}
			for _, i := range order {
				x.PutEdge(edges[i])
			}
			return x
		}
		fwd := make([]int, len(edges))
		for i := range fwd {
			fwd[i] = i
		}
		rev := slices.Clone(fwd)
		slices.Reverse(rev)
		x, y := build(fwd), build(rev)
		// Reference distances by plain BFS.
		nbrs := make(map[string][]string)
		for _, e := range edges {
			nbrs[e.From] = append(nbrs[e.From], e.To)
			nbrs[e.To] = append(nbrs[e.To], e.From)
		}
		arch := "n" + itoa(archivedNode)
		for range 20 {
			a, b := "n"+itoa(rng.IntN(n)), "n"+itoa(rng.IntN(n))
			dist := map[string]int{a: 0}
			queue := []string{a}
			for len(queue) > 0 && a != arch {
				u := queue[0]
				queue = queue[1:]
				for _, v := range nbrs[u] {
					if _, ok := dist[v]; !ok && v != arch {
						dist[v] = dist[u] + 1
						queue = append(queue, v)
					}
				}
			}
			want, reachable := dist[b]
			reachable = reachable && b != arch && want <= MaxPathDepth
			got, ok := x.Path("w", a, b, 0, nil)
			if ok != reachable || (ok && len(got) != want) {
				t.Fatalf("seed %d: Path(%s, %s) = %d hops, %v; BFS says %d, %v", seed, a, b, len(got), ok, want, reachable)
			}
			if !ok {
				continue
			}
			prev := a
			for i, h := range got {
				if h.From != prev || h.Depth != i+1 || h.Node == arch {
					t.Fatalf("seed %d: broken path %s", seed, hopsString(got))
				}
				prev = h.Node
			}
			if prev != b {
				t.Fatalf("seed %d: path ends at %s, not %s", seed, prev, b)
			}
			if other, _ := y.Path("w", a, b, 0, nil); !slices.Equal(got, other) {
				t.Fatalf("seed %d: path depends on build order:\n%s\n%s", seed, hopsString(got), hopsString(other))
			}
			if want > 1 {
				if _, ok := x.Path("w", a, b, want-1, nil); ok {
					t.Fatalf("seed %d: path found with maxDepth %d < %d", seed, want-1, want)
				}
			}
		}
	}
}
