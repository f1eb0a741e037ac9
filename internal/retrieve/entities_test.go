package retrieve

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

func TestTextEntities(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Caroline: Thanks! This necklace is a gift from my grandma in my home country, Sweden.", []string{"sweden"}},
		{"Melanie: We saw the Perseid meteor shower at Yosemite National Park last August.", []string{"perseid", "yosemite national park"}},
		{"user: I've been using my Fitbit Charge 3 since I joined Connected LGBTQ Activists.", []string{"fitbit charge 3", "connected lgbtq activists"}},
		// Sentence openings, the pronoun, greetings and the calendar are
		// not names (a name opening a sentence is missed: there is no
		// telling it from "Yesterday"); a possessive is the name.
		{"Hey Mel! I went there on Monday. Yesterday was fun, and Oscar's bowl is new, said Jon's sister.", []string{"mel", "oscar", "jon"}},
		{"no capital letters here", nil},
		// Five capitalised words in a row are a title, not a name.
		{"we read The Very Long Title Of Book today", nil},
	}
	for _, c := range cases {
		if got := textEntities(c.in, maxTurnEntities); !slices.Equal(got, c.want) {
			t.Errorf("textEntities(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := textEntities("Anna, Ben, Cleo, Dan and Eve met Fay", 3); len(got) != 3 {
		t.Errorf("limit 3 gave %q", got)
	}
}

// TestNamesKeepTheirCase: Names finds what textEntities finds, as
// written: the graph's nodes are named as the conversation names them.
func TestNamesKeepTheirCase(t *testing.T) {
	in := "Caroline: My grandma in Sweden gave it to me; Oscar's bowl is from IKEA, and the Fitbit Charge 3 too. Sweden!"
	want := []string{"Sweden", "Oscar", "IKEA", "Fitbit Charge 3"}
	if got := Names(in, maxTurnEntities); !slices.Equal(got, want) {
		t.Errorf("Names = %q, want %q", got, want)
	}
	lower := textEntities(in, maxTurnEntities)
	if len(lower) != len(want) {
		t.Fatalf("textEntities = %q", lower)
	}
	for i, n := range want {
		if lower[i] != strings.ToLower(n) {
			t.Errorf("textEntities[%d] = %q, want %q", i, lower[i], strings.ToLower(n))
		}
	}
	if got := Names("Anna, Ben, Cleo, Dan and Eve met Fay", 2); !slices.Equal(got, []string{"Ben", "Cleo"}) {
		t.Errorf("limit 2 gave %q", got)
	}
}

// TestForgetErasesEntityKeys: a turn's entity keys are derived keys like
// its category keys: a forget removes them, the snapshot written after it
// holds none, and the entity walk no longer passes through the turn.
func TestForgetErasesEntityKeys(t *testing.T) {
	e := New(Options{})
	a := rec(1, "Caroline: I met Anneliese at the Louvre on my trip")
	e.Upsert("w", a)
	e.Upsert("w", rec(2, "Melanie: my aunt Anneliese sent me a card from Marseille"))
	ent := lexical.FieldTerm(entField, "louvre")
	if e.lex.DocFreq(ent) != 1 {
		t.Fatalf("entity key not indexed: df %d", e.lex.DocFreq(ent))
	}
	walk := func() []uint32 {
		keys, _ := e.entityWalk("What did I see at the Louvre?", 10, func(uint32) bool { return true })
		return keys
	}
	if got := walk(); len(got) != 2 {
		t.Fatalf("walk from louvre reached %d turns, want the turn naming it and, through anneliese, the other", len(got))
	}
	a.Status = memory.Forgotten
	e.Upsert("w", a)
	if e.lex.DocFreq(ent) != 0 || e.lex.DocFreq(lexical.FieldTerm(entField, "anneliese")) != 1 {
		t.Fatalf("forget left entity keys: louvre %d anneliese %d", e.lex.DocFreq(ent),
			e.lex.DocFreq(lexical.FieldTerm(entField, "anneliese")))
	}
	if got := walk(); len(got) != 0 {
		t.Fatalf("the walk still passes through the forgotten turn: %v", got)
	}
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("louvre")) {
		t.Fatal("the snapshot written after the forget still holds the turn's entity key")
	}
}

// TestEntityWalkReachesTheSecondHop: the question names Marseille; the
// turn about Marseille names Anneliese, so the turn about Anneliese that
// shares no word with the question ranks in the graph signal, below the
// turn naming the seed. Without the graph signal asked for, nothing of
// the walk runs.
func TestEntityWalkReachesTheSecondHop(t *testing.T) {
	e := New(Options{})
	e.Upsert("w", rec(1, "Melanie: my friend Anneliese lives in Marseille"))
	e.Upsert("w", rec(2, "Melanie: guess what, Anneliese adopted two kittens"))
	e.Upsert("w", rec(3, "Caroline: I painted a sunset over the lake"))
	f := Filter{Workspace: "w", Access: []memory.Access{memory.Public}}
	res, err := e.Search(t.Context(), Query{Text: "Which pets does the friend in Marseille have?", Route: RouteMultiHop,
		Signals: []string{SignalGraph}, Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(res), []string{rec(1, "").ID, rec(2, "").ID}; !slices.Equal(got, want) {
		t.Fatalf("graph hits %v, want %v", got, want)
	}
	res, err = e.Search(t.Context(), Query{Text: "Which pets does the friend in Marseille have?", Route: RouteMultiHop,
		Signals: []string{SignalLexical}, Filter: f})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.Signals, SignalGraph) {
		t.Fatalf("signals %v: the walk ran without the graph signal", res.Signals)
	}
}
