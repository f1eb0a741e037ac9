package retrieve

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

func validFrom(t time.Time) func(*memory.Record) {
	return func(r *memory.Record) { r.ValidFrom = &t }
}

func TestDerivedCategoryKeyRanksTheTurn(t *testing.T) {
	e := New(Options{})
	// The evidence shares no content word with the question; the other
	// turns share "Melanie" or nothing.
	e.Upsert("w", rec(1, "Melanie: I just signed up for a pottery class"))
	e.Upsert("w", rec(2, "Caroline: Melanie, that sounds lovely"))
	e.Upsert("w", rec(3, "Caroline: the weather was bad"))
	search := func(w float64) Result {
		res, err := e.Search(context.Background(), Query{Text: "What activities does Melanie partake in?",
			Filter: Filter{Workspace: "w", Access: everyone}, Weights: map[string]float64{SignalKeys: w}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := search(1)
	if len(res.Hits) == 0 || res.Hits[0].ID != rec(1, "").ID || !slices.Contains(res.Signals, SignalKeys) {
		t.Fatalf("the pottery turn should rank first through its derived key, got %v signals %v", ids(res), res.Signals)
	}
	if res := search(0); slices.Contains(res.Signals, SignalKeys) {
		t.Fatalf("weight 0 should disable the keys signal, got %v", res.Signals)
	}
}

func TestEventDaysResolveAgainstTheTurnsOwnTime(t *testing.T) {
	said := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	got := eventDays("I went hiking yesterday with my kids", said)
	if !slices.Equal(got, []string{"2023-05-07"}) {
		t.Fatalf("yesterday said on 8 May 2023 = %v, want 2023-05-07", got)
	}
	if got := eventDays("I went hiking yesterday", time.Time{}); got != nil {
		t.Fatalf("a turn without a time resolves nothing (never the processing time), got %v", got)
	}
	if got := eventDays("we moved here last year", said); got != nil {
		t.Fatalf("a year is too long a span for day keys, got %v", got)
	}
}

func TestTimeBoostUsesDerivedEventDays(t *testing.T) {
	e := New(Options{})
	// Said a month after the event: the session date is outside the span
	// and its slack; "last Saturday" resolved at write time is inside.
	e.Upsert("w", rec(1, "Melanie: last Saturday I ran a charity race", validFrom(time.Date(2023, 6, 12, 10, 0, 0, 0, time.UTC))))
	e.Upsert("w", rec(2, "Melanie: I ran a charity race again", validFrom(time.Date(2023, 7, 20, 10, 0, 0, 0, time.UTC))))
	res, err := e.Search(context.Background(), Query{Text: "What did Melanie do on 10 June, 2023?",
		Filter: Filter{Workspace: "w", Access: everyone}, Time: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Hits) < 2 || res.Hits[0].ID != rec(1, "").ID || res.Hits[0].Score <= res.Hits[1].Score {
		t.Fatalf("the turn whose 'last Saturday' is 10 June should be boosted first, got %v", ids(res))
	}
}

func TestForgetErasesDerivedKeys(t *testing.T) {
	e := New(Options{})
	said := time.Date(2023, 5, 8, 0, 0, 0, 0, time.UTC)
	r := rec(1, "Melanie: yesterday I signed up for a pottery class", validFrom(said))
	e.Upsert("w", r)
	key := lexical.FieldTerm(keyField, "activity")
	day := lexical.FieldTerm(dayField, "2023-05-07")
	if e.lex.DocFreq(key) != 1 || e.lex.DocFreq(day) != 1 {
		t.Fatalf("derived keys not indexed: key %d day %d", e.lex.DocFreq(key), e.lex.DocFreq(day))
	}
	r.Status = memory.Forgotten
	e.Upsert("w", r)
	if e.lex.DocFreq(key) != 0 || e.lex.DocFreq(day) != 0 {
		t.Fatalf("forget left derived keys: key %d day %d", e.lex.DocFreq(key), e.lex.DocFreq(day))
	}
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("2023-05-07")) || bytes.Contains(buf.Bytes(), []byte("pottery")) {
		t.Fatal("the snapshot written after the forget still holds a derived key or a word of the turn")
	}
}

func TestDerivedKeysSurviveTheSnapshot(t *testing.T) {
	e := New(Options{})
	e.Upsert("w", rec(1, "Melanie: I signed up for a pottery class"))
	e2 := restored(t, e)
	if e2.lex.DocFreq(lexical.FieldTerm(keyField, "activity")) != 1 {
		t.Fatal("a restored engine lost the derived keys")
	}
}

func TestKeyTermsAreTheQuestionsFocus(t *testing.T) {
	has := func(q, cat string) bool { return slices.Contains(keyTerms(q), lexical.FieldTerm(keyField, cat)) }
	if !has("What activities does Melanie partake in?", "activity") || !has("What kind of pets does Caroline have?", "pet") {
		t.Error("the focus of the question should be a key term")
	}
	if has("What did Melanie do with her family last week?", "family") {
		t.Error("a category word outside the question's focus should not ask for the category")
	}
}

// BenchmarkUpsertTurn: indexing a conversation turn, with its derived keys
// (Derived) and, for comparison, through the bare lexical index call the
// engine made before them (Plain).
func BenchmarkUpsertTurn(b *testing.B) {
	turns := []string{
		"Melanie: Yesterday I took the kids to a pottery class and we painted bowls.",
		"Caroline: I went to a LGBTQ support group last week and it was so powerful.",
		"user: Can you recommend a good hiking trail near Seattle for this weekend?",
		"assistant: Sure! Rattlesnake Ledge is a popular 4-mile hike with great views of the lake.",
	}
	said := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	b.Run("Derived", func(b *testing.B) {
		e := New(Options{})
		i := 0
		for b.Loop() {
			e.Upsert("w", rec(i%1000+1, turns[i%len(turns)]+" "+strconv.Itoa(i), validFrom(said)))
			i++
		}
	})
	b.Run("Plain", func(b *testing.B) {
		ix := lexical.New(lexical.DefaultOptions())
		i := 0
		for b.Loop() {
			r := rec(i%1000+1, turns[i%len(turns)]+" "+strconv.Itoa(i), validFrom(said))
			ix.AddWithFields(uint32(i%1000), lexicalText(&r), fieldTerms(&r))
			i++
		}
	})
	b.Run("DerivedFieldsOnly", func(b *testing.B) {
		i := 0
		for b.Loop() {
			r := rec(1, turns[i%len(turns)])
			_ = derivedFields(&r, said)
			i++
		}
	})
}

func TestTurnSpansBoundTheSentences(t *testing.T) {
	said := time.Date(2023, 5, 8, 0, 0, 0, 0, time.UTC)
	long := strings.Repeat("Nothing to see. ", 20) + strings.Repeat("Yesterday was fun. ", 2*maxTimeSentences)
	if got := len(turnSpans(long, said)); got != maxTimeSentences {
		t.Fatalf("%d spans resolved, want %d (sentences without a time word do not count)", got, maxTimeSentences)
	}
	if got := eventDays("Nothing here. Yesterday I went hiking! What about you?", said); !slices.Equal(got, []string{"2023-05-07"}) {
		t.Fatalf("sentence split lost the date: %v", got)
	}
}
