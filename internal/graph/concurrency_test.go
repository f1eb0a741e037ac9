package graph

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Readers see a consistent core graph while a writer churns the rest of it
// and another workspace. Run with -race.
func TestConcurrentReadersAndWriter(t *testing.T) {
	x := sample(t)
	for _, id := range []string{"a", "b", "c"} {
		n := node("w", id)
		n.Name = "Core " + id
		x.PutNode(n)
	}
	wantHops := hopsString(mustNeighbors(t, x, NeighborQuery{Workspace: "w", Node: "a", Depth: 3}))
	wantPath, _ := x.Path("w", "a", "e", 6, nil)
	wantPPR := x.PPR("w", map[string]float64{"a": 1}, PPROptions{})
	wantRec := []string{"b", "a"}

	const writes = 2000
	done := make(chan struct{})
	start := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		defer close(done)
		<-start
		for i := range writes {
			id := "t" + itoa(i%50)
			tn := node("w", id)
			tn.Label = "tmp"
			x.PutNode(tn)
			x.PutEdge(edge("w", "te"+itoa(i%50), "z", id, "USES"))
			x.PutNode(node("w2", id))
			x.PutEdge(edge("w2", "e"+itoa(i%50), id, "t"+itoa((i+1)%50), "USES"))
			if i%3 == 0 {
				x.RemoveNode("w", "t"+itoa((i+25)%50))
				x.RemoveEdge("w2", "e"+itoa((i+7)%50))
			}
			// Re-put a core node unchanged: it is re-indexed under the readers.
			c := node("w", "c")
			c.Name = "Core c"
			x.PutNode(c)
		}
	}()
	errs := make(chan string, 64)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for n := 0; ; n++ {
				select {
				case <-done:
					if n > 0 {
						return
					}
				default:
				}
				hs, err := x.Neighbors(NeighborQuery{Workspace: "w", Node: "a", Depth: 3})
				if err != nil || hopsString(hs) != wantHops {
					errs <- "neighbors: " + hopsString(hs)
					return
				}
				if p, ok := x.Path("w", "a", "e", 6, nil); !ok || !slices.Equal(p, wantPath) {
					errs <- "path: " + hopsString(p)
					return
				}
				if s := x.PPR("w", map[string]float64{"a": 1}, PPROptions{}); !maps.Equal(s, wantPPR) {
					errs <- "ppr changed"
					return
				}
				if got := x.Recognise("w", "core b meets core a"); !slices.Equal(got, wantRec) {
					errs <- "recognise: " + strings.Join(got, ",")
					return
				}
				if r == 0 {
					x.Neighbors(NeighborQuery{Workspace: "w2", Node: "t1", Depth: 3})
					x.PPR("w2", map[string]float64{"t1": 1}, PPROptions{})
					x.ByLabels("w", nil, true, "", 1000)
					x.Stats()
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	// Final state: i%50 ids were last put at i = 1950..1999 and removed
	// when (i+25)%50 hit them at i%3 == 0 afterwards.
	want := make(map[string]bool)
	for i := range writes {
		id := "t" + itoa(i%50)
		want[id] = true
		if i%3 == 0 {
			delete(want, "t"+itoa((i+25)%50))
		}
	}
	got := x.ByLabels("w", []string{"tmp"}, false, "", 1000)
	var wantIDs []string
	for id := range want {
		wantIDs = append(wantIDs, id)
	}
	slices.Sort(wantIDs)
	if !slices.Equal(got, wantIDs) {
		t.Errorf("final t nodes in w = %v, want %v", got, wantIDs)
	}
}
