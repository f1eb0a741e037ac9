package retrieve

import (
	"context"
	"slices"
	"testing"
)

// TestOpeningBoostLiftsTheUsersOpeningTurns: for a how-many question the
// user's opening turn of each session outranks the assistant's replies
// that repeat the question's words; not for other questions, not at
// weight 0, and never an opening turn the assistant said.
func TestOpeningBoostLiftsTheUsersOpeningTurns(t *testing.T) {
	e := New(Options{})
	e.Upsert("w", rec(1, "I went to my cousin's wedding last weekend", session("a"), spoken("user")))
	e.Upsert("w", rec(2, "Weddings are lovely! Wedding gifts, wedding speeches, wedding dances: a wedding guide", session("a"), spoken("assistant")))
	e.Upsert("w", rec(3, "My college roommate's wedding was on Saturday", session("b"), spoken("user")))
	e.Upsert("w", rec(4, "A wedding toast: for a wedding, keep the wedding toast short", session("b"), spoken("assistant")))
	e.Upsert("w", rec(5, "Wedding planning tips for any wedding", session("c"), spoken("assistant")))
	search := func(text string, w float64) []string {
		res, err := e.Search(context.Background(), Query{Text: text, Filter: Filter{Workspace: "w", Access: everyone}, Opening: w, K: 2})
		if err != nil {
			t.Fatal(err)
		}
		return ids(res)
	}
	openings := []string{rec(1, "").ID, rec(3, "").ID}
	sorted := func(x []string) []string { x = slices.Clone(x); slices.Sort(x); return x }
	if got := search("How many weddings did I attend?", 1); !slices.Equal(sorted(got), openings) {
		t.Fatalf("how-many question, opening 1: top 2 %v, want the user's opening turns %v", got, openings)
	}
	if got := search("How many weddings did I attend?", 0); slices.Equal(sorted(got), openings) {
		t.Fatalf("opening 0 should leave the fused order (the assistant's wedding-heavy replies first), got %v", got)
	}
	if got := search("What did I say about the wedding?", 1); slices.Equal(sorted(got), openings) {
		t.Fatalf("a question not asking for every instance should not be boosted, got %v", got)
	}
	if got := search("How many weddings did I attend?", 1); slices.Contains(got, rec(5, "").ID) {
		t.Fatalf("the assistant's opening turn should not be boosted, got %v", got)
	}
}
