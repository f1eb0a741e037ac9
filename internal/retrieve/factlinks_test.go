package retrieve

import (
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

// factOf is a preference extracted from the turns ids.
func factOf(id int, content string, access memory.Access, turns ...memory.Record) memory.Record {
	return rec(id, content, func(r *memory.Record) {
		r.Type, r.Access, r.Source.Kind = memory.Preference, access, memory.Inferred
		for _, t := range turns {
			r.Source.Evidence = append(r.Source.Evidence, t.ID)
		}
	})
}

// TestFactRanksItsSourceTurn: a search for turns matches the question
// against the facts extracted from them. The turn says "the clay wheel",
// its fact "Melanie likes pottery"; a question about pottery finds the
// turn through the fact, which is itself not a result (the search asks
// for turns). A fact the searcher may not read lends nothing; a forgotten
// fact lends nothing; the link survives a snapshot.
func TestFactRanksItsSourceTurn(t *testing.T) {
	e := New(Options{})
	turn := rec(1, "Melanie: I spend every Sunday at the clay wheel these days")
	e.Upsert("w", turn)
	e.Upsert("w", rec(2, "Caroline: I adopted a kitten"))
	fact := factOf(3, "Melanie likes pottery", memory.Public, turn)
	e.Upsert("w", fact)
	q := Query{Text: "Who likes pottery?", Filter: Filter{Workspace: "w", Types: []memory.Type{memory.Episode},
		Access: []memory.Access{memory.Public}}}
	search := func(e *Engine) []string {
		res, err := e.Search(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		return ids(res)
	}
	if got := search(e); !slices.Equal(got, []string{turn.ID}) {
		t.Fatalf("turns %v, want the fact's source turn %s only", got, turn.ID)
	}

	e2 := restored(t, e)
	if got := search(e2); !slices.Equal(got, []string{turn.ID}) {
		t.Fatalf("after a snapshot round trip: turns %v, want %s", got, turn.ID)
	}

	hidden := factOf(3, "Melanie likes pottery", memory.Sensitive, turn)
	hidden.Version = 2
	e.Upsert("w", hidden)
	if got := search(e); len(got) != 0 {
		t.Fatalf("a sensitive fact ranked its turn for a public search: %v", got)
	}
	fact.Version, fact.Status = 3, memory.Forgotten
	e.Upsert("w", fact)
	if got := search(e); len(got) != 0 {
		t.Fatalf("a forgotten fact still ranks its turn: %v", got)
	}
}
