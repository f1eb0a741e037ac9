package retrieve

import (
	"context"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
)

func TestTimeSpans(t *testing.T) {
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }
	// Tuesday 30 May 2023, evening: the reference, not the processing time.
	// (Months count as Go's AddDate does: three months before 30 May is
	// "30 February", 2 March.)
	ref := time.Date(2023, 5, 30, 23, 45, 0, 0, time.UTC)
	cases := []struct {
		text string
		ref  time.Time
		want []Span
	}{
		{"What did Tim say on 16 November, 2023?", time.Time{}, []Span{{d(2023, 11, 16), d(2023, 11, 17)}}},
		{"What book did Tim finish on 8th December, 2023?", time.Time{}, []Span{{d(2023, 12, 8), d(2023, 12, 9)}}},
		{"Which team did John sign with on May 21, 2023?", time.Time{}, []Span{{d(2023, 5, 21), d(2023, 5, 22)}}},
		{"What did Tim start learning in August 2023?", time.Time{}, []Span{{d(2023, 8, 1), d(2023, 9, 1)}}},
		{"Which achievements did John have in 2023?", time.Time{}, []Span{{d(2023, 1, 1), d(2024, 1, 1)}}},
		{"May I ask what you did last week?", time.Time{}, nil}, // relative: no reference, nothing
		{"May I ask what you recommended?", ref, nil},           // "may" the verb is no month
		{"How many days did I spend at workshops in April?", ref, []Span{{d(2023, 4, 1), d(2023, 5, 1)}}},
		{"What did I do in December?", ref, []Span{{d(2022, 12, 1), d(2023, 1, 1)}}},
		{"How many times did I bake in the past two weeks?", ref, []Span{{d(2023, 5, 16), d(2023, 5, 31)}}},
		{"What game did I finally beat last weekend?", ref, []Span{{d(2023, 5, 27), d(2023, 5, 29)}}},
		{"What certification did I complete last month?", ref, []Span{{d(2023, 4, 1), d(2023, 5, 1)}}},
		{"Where did I go last Friday?", ref, []Span{{d(2023, 5, 26), d(2023, 5, 27)}}},
		{"What did I buy yesterday?", ref, []Span{{d(2023, 5, 29), d(2023, 5, 30)}}},
		{"What did I cook three days ago?", ref, []Span{{d(2023, 5, 26), d(2023, 5, 29)}}},
		{"the order of the trips in the past three months", ref, []Span{{d(2023, 3, 2), d(2023, 5, 31)}}},
		{"What did I plant in the spring?", ref, []Span{{d(2023, 3, 1), d(2023, 6, 1)}}},
		{"What did I plant last spring?", ref, []Span{{d(2022, 3, 1), d(2022, 6, 1)}}},
	}
	for _, c := range cases {
		got := TimeSpans(c.text, c.ref)
		if len(got) != len(c.want) {
			t.Errorf("%q: %v, want %v", c.text, got, c.want)
			continue
		}
		for i := range got {
			if !got[i].From.Equal(c.want[i].From) || !got[i].To.Equal(c.want[i].To) {
				t.Errorf("%q: span %d %v – %v, want %v – %v", c.text, i, got[i].From, got[i].To, c.want[i].From, c.want[i].To)
			}
		}
	}
}

// TestTimeBoostPrefersTurnsInTheSpan: two turns alike in words; the
// question names "last weekend" relative to its own date, so the turn of
// the session held that weekend (or shortly after) ranks first, and
// without the boost the order is the words' (ids break the tie).
func TestTimeBoostPrefersTurnsInTheSpan(t *testing.T) {
	at := func(y int, m time.Month, d int) func(*memory.Record) {
		return func(r *memory.Record) { v := time.Date(y, m, d, 12, 0, 0, 0, time.UTC); r.ValidFrom = &v }
	}
	e := New(Options{})
	e.Upsert("w", rec(1, "user: last weekend I finally beat the game Hollow Knight", session("s1"), at(2023, 3, 4)))
	e.Upsert("w", rec(2, "user: I finally beat the game Celeste", session("s2"), at(2023, 5, 28)))
	e.Upsert("w", rec(3, "user: my cat likes the sofa", session("s3"), at(2023, 5, 28)))
	ref := time.Date(2023, 5, 30, 21, 26, 0, 0, time.UTC)
	search := func(w float64, now time.Time) []string {
		res, err := e.Search(context.Background(), Query{Text: "What game did I finally beat last weekend?",
			Filter: Filter{Workspace: "w", Access: everyone}, Time: w, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return ids(res)
	}
	if got := search(0.5, ref); len(got) < 2 || got[0] != rec(2, "").ID {
		t.Errorf("with the time boost: %v, want record 2 first", got)
	}
	if got := search(0, ref); len(got) < 2 || got[0] != rec(1, "").ID {
		t.Errorf("without the boost: %v, want record 1 first (its words match better)", got)
	}
	// Asked a year later, last weekend is another weekend: no boost.
	if got := search(0.5, ref.AddDate(1, 0, 0)); len(got) < 2 || got[0] != rec(1, "").ID {
		t.Errorf("asked a year later: %v, want record 1 first", got)
	}
}

// BenchmarkTimeSpans is the time boost's per-query cost before the boost
// itself (a pass over the fused candidates).
func BenchmarkTimeSpans(b *testing.B) {
	ref := time.Date(2023, 5, 30, 23, 45, 0, 0, time.UTC)
	qs := []string{"How many times did I bake something in the past two weeks?",
		"What did Tim say about his injury on 16 November, 2023?",
		"I was going through our previous conversation about atmospheric correction methods, and I wanted to confirm - you mentioned that 6S, MAJA, and Sen2Cor are all available?"}
	i := 0
	for b.Loop() {
		TimeSpans(qs[i%len(qs)], ref)
		i++
	}
}
