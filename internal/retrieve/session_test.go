package retrieve

import (
	"context"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/lexical"
)

func TestSessionPriorPrefersTheMatchingSession(t *testing.T) {
	e := New(Options{})
	// Turns 1 and 4 match the question equally; turn 4's session talks
	// about the trip as a whole.
	e.Upsert("w", rec(1, "user: my camping stove broke", session("b")))
	e.Upsert("w", rec(2, "user: what should I cook tonight", session("b")))
	e.Upsert("w", rec(3, "user: the Yosemite trip was last month", session("a")))
	e.Upsert("w", rec(4, "user: my camping stove broke", session("a")))
	e.Upsert("w", rec(5, "assistant: for the trip, pack layers", session("a")))
	e.Upsert("w", rec(6, "user: unrelated chatter about taxes", session("c")))
	search := func(w float64) []string {
		res, err := e.Search(context.Background(), Query{Text: "which stove broke on the camping trip to Yosemite",
			Filter: Filter{Workspace: "w", Access: everyone}, Session: w})
		if err != nil {
			t.Fatal(err)
		}
		return ids(res)
	}
	one, four := rec(1, "").ID, rec(4, "").ID
	pos := func(list []string, id string) int { return slices.Index(list, id) }
	if got := search(0); pos(got, one) > pos(got, four) {
		t.Fatalf("without the prior equal turns rank by id, got %v", got)
	}
	if got := search(1); pos(got, four) > pos(got, one) {
		t.Fatalf("with the prior the turn of the matching session should rank first, got %v", got)
	}
}

func TestSessionScores(t *testing.T) {
	e := New(Options{})
	e.Upsert("w", rec(1, "user: camping stove", session("a")))
	e.Upsert("w", rec(2, "user: yosemite trip", session("a")))
	e.Upsert("w", rec(3, "user: camping stove", session("b")))
	e.Upsert("w", rec(4, "no session: camping yosemite"))
	e.mu.RLock()
	defer e.mu.RUnlock()
	f := Filter{Workspace: "w", Access: everyone}
	sc := e.sessionScores(lexical.Analyze("camping yosemite", true), e.allow(f), e.scopeDocs(f))
	if len(sc) != 2 {
		t.Fatalf("scores for %d sessions, want 2 (a turn without a session has none): %v", len(sc), sc)
	}
	if !(sc[0] > sc[2]) || sc[2] <= 0 {
		t.Errorf("session a (both terms) should outscore session b (one term): %v", sc)
	}
}
