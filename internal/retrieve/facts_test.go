package retrieve

import (
	"fmt"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

// factFilter is the filter extraction reconciles with: the user's live
// facts.
var factFilter = Filter{Workspace: "w", Types: factTypes, Statuses: []memory.Status{memory.Active},
	Scope: memory.Scope{UserID: "u"}, Access: everyone}

func typed(t memory.Type) func(*memory.Record) {
	return func(r *memory.Record) { r.Type, r.Scope.UserID = t, "u" }
}

// TestSimilarFactsWalkDoesNotGrowWithTurns: the postings SimilarTo walks
// to find the user's facts like a new one stay the same however many of
// the user's conversation turns, which share the facts' words, are
// stored (before the fact index it walked every turn's posting of the
// query's terms), and the candidates are those the main index gives.
func TestSimilarFactsWalkDoesNotGrowWithTurns(t *testing.T) {
	e := New(Options{})
	facts := []string{"the user likes green tea in the morning", "the user works at a bakery in Lisbon",
		"the user prefers window seats on long flights", "the user decided to learn the violin"}
	for i, c := range facts {
		e.Upsert("w", rec(i+1, c, typed([]memory.Type{memory.Belief, memory.Preference, memory.Decision, memory.Belief}[i])))
	}
	turn := 100
	addTurns := func(n int) {
		for range n {
			turn++
			e.Upsert("w", rec(turn, fmt.Sprintf("I had green tea at the bakery in Lisbon before my violin lesson %d", turn), typed(memory.Episode)))
		}
	}
	query := "the user likes green tea with lunch in Lisbon"
	walk := func() ([]Similar, int64) {
		before := e.similarWalked.Load()
		got := e.SimilarTo(factFilter, query, WordSet(query), 5)
		return got, e.similarWalked.Load() - before
	}
	addTurns(100)
	small, walked := walk()
	addTurns(3000)
	large, walkedLarge := walk()
	if walked == 0 || walkedLarge != walked {
		t.Fatalf("walked %d postings with 100 turns stored, %d with 3,100", walked, walkedLarge)
	}
	if len(small) == 0 || small[0].ID != rec(1, "").ID || !slices.EqualFunc(small, large, func(a, b Similar) bool { return a.ID == b.ID }) {
		t.Fatalf("candidates %v, then %v", small, large)
	}
	// The same candidates as the main index restricted by the filter.
	e.mu.RLock()
	c := e.compile(&factFilter)
	terms := lexical.Analyze(query, true)
	want := e.lex.SearchTerms(terms, 5, c.ok)
	got, _ := e.lex.SearchTermsVia(e.facts, terms, 5, c.ok)
	e.mu.RUnlock()
	if !slices.Equal(got, want) || len(got) == 0 {
		t.Fatalf("fact index %v, main index %v", got, want)
	}
}

// TestFactIndexFollowsTypeAndLife: a record enters the fact index as a
// fact, leaves it when its type changes or it is forgotten, and the
// index is rebuilt when the engine is read from a snapshot.
func TestFactIndexFollowsTypeAndLife(t *testing.T) {
	e := New(Options{})
	r := rec(1, "the user likes green tea", typed(memory.Belief))
	e.Upsert("w", r)
	e.Upsert("w", rec(2, "green tea again", typed(memory.Episode)))
	if e.facts.Len() != 1 {
		t.Fatalf("fact index holds %d documents, want 1", e.facts.Len())
	}
	e2 := restored(t, e)
	if got := e2.SimilarTo(factFilter, "likes green tea", WordSet("likes green tea"), 5); e2.facts.Len() != 1 || len(got) != 1 || got[0].ID != r.ID {
		t.Fatalf("after a snapshot: %d facts indexed, similar %v", e2.facts.Len(), got)
	}
	r.Type, r.Version = memory.Skill, 2
	e.Upsert("w", r)
	if e.facts.Len() != 0 {
		t.Fatal("a record no longer a fact stayed in the fact index")
	}
	r.Type, r.Version = memory.Preference, 3
	e.Upsert("w", r)
	if got := e.SimilarTo(factFilter, "likes green tea", WordSet("likes green tea"), 5); len(got) != 1 {
		t.Fatalf("a record become a fact again is not found: %v", got)
	}
	r.Status, r.Version = memory.Forgotten, 4
	e.Upsert("w", r)
	if e.facts.Len() != 0 {
		t.Fatal("a forgotten fact stayed in the fact index")
	}
}
