package retrieve

import (
	"context"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
)

// TestGraphSignalRunsOutsideTheLock: the graph signal reads the graph and
// the store through the service, which may write to the engine while it
// runs (a commit publishing a record). Called under the engine's read
// lock, as it was, the write below waits for the search that waits for
// the signal: a deadlock. The signal's candidates are still filtered by
// the search's filter and ranked by score.
func TestGraphSignalRunsOutsideTheLock(t *testing.T) {
	e := New(Options{})
	e.Upsert("w", rec(1, "Alice met Bob in Paris"))
	e.Upsert("other", rec(2, "Alice met Bob in Paris"))
	hidden := rec(3, "Alice met Bob in Rome")
	hidden.Access = memory.Sensitive
	e.Upsert("w", hidden)
	e.SetGraph(func(ctx context.Context, f Filter, query string) ([]Scored, error) {
		e.Upsert("w", rec(4, "Bob moved to Lyon")) // takes the write lock
		return []Scored{
			{ID: rec(2, "").ID, Score: 9}, // indexed in another workspace only
			{ID: rec(3, "").ID, Score: 8}, // not admitted by the filter
			{ID: rec(4, "").ID, Score: 2},
			{ID: rec(1, "").ID, Score: 1},
			{ID: "unknown", Score: 5},
		}, nil
	})
	done := make(chan Result, 1)
	go func() {
		res, err := e.Search(t.Context(), Query{Text: "Where did Alice meet Bob", Route: RouteMultiHop,
			Signals: []string{SignalGraph}, Filter: Filter{Workspace: "w", Access: []memory.Access{memory.Public}}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case res := <-done:
		got := ids(res)
		want := []string{rec(4, "").ID, rec(1, "").ID}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("graph hits %v, want %v", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("search deadlocked: the graph signal ran under the engine's lock")
	}
}
