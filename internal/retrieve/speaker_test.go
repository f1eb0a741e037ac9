package retrieve

import (
	"bytes"
	"context"
	"slices"
	"testing"
)

func TestSpeakerOf(t *testing.T) {
	for content, want := range map[string][]string{
		"Caroline: I went to a support group": {"caroline"},
		"user: how do I fix my bike?":         {"user"},
		"Dr. Jane O'Neill: take two a day":    {"dr", "jane", "o'neill"},
		"Note:no space after the colon":       nil,
		"The plan is simple: ship on friday":  nil, // four words before the colon
		"deploy failed at 10:30 on friday":    nil,
		"one two three four: too long a name": nil,
		"Melanie (mom): the kids loved it":    nil,
		": empty name":                        nil,
		"no colon at all":                     nil,
	} {
		if got := speakerOf(content); !slices.Equal(got, want) {
			t.Errorf("speakerOf(%q) = %q, want %q", content, got, want)
		}
	}
}

func TestQuerySpeakers(t *testing.T) {
	has := func(q, speaker string) bool {
		return slices.Contains(querySpeakers(q), "\x00speaker\x00"+speaker)
	}
	if !has("What did Dr. Jane say?", "dr") || !has("What did Caroline's friends give her?", "caroline") {
		t.Error("a named speaker (possessive) is not pointed at")
	}
	if !has("Where did I get my guitar serviced?", speakerUser) || has("Where did I get my guitar serviced?", speakerAssistant) {
		t.Error("a first-person question should point at the user only")
	}
	if q := "Can you remind me of the restaurant you recommended?"; !has(q, speakerAssistant) || has(q, speakerUser) {
		t.Error("a question about what the assistant said should point at the assistant only")
	}
	if q := "Can you suggest some activities for my commute?"; has(q, speakerAssistant) || !has(q, speakerUser) {
		t.Error("a request to the assistant is not a question about what it said")
	}
}

func TestSpeakerBoostPrefersTheNamedSpeaker(t *testing.T) {
	e := New(Options{})
	// Melanie's turn matches the words better; the question is about
	// Caroline.
	e.Upsert("w", rec(1, "Melanie: Caroline, the pottery class sounds fun", session("s1")))
	e.Upsert("w", rec(2, "Caroline: I signed up for a class last week after work", session("s2")))
	e.Upsert("w", rec(3, "Melanie: the kids painted a bowl", session("s3")))
	e.Upsert("w", rec(4, "Caroline: I went hiking", session("s4")))
	search := func(boost float64) []string {
		res, err := e.Search(context.Background(), Query{Text: "What class did Caroline take, pottery?",
			Filter: Filter{Workspace: "w", Access: everyone}, Speaker: boost})
		if err != nil {
			t.Fatal(err)
		}
		return ids(res)
	}
	if got := search(0); got[0] != rec(1, "").ID {
		t.Fatalf("without the boost the better word match ranks first, got %v", got)
	}
	if got := search(1); got[0] != rec(2, "").ID {
		t.Fatalf("with the boost Caroline's turn should rank first, got %v", got)
	}
}

func TestSpeakerTermsSurviveTheSnapshot(t *testing.T) {
	e := New(Options{})
	e.Upsert("w", rec(1, "Caroline: I signed up for a pottery class"))
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	e2 := New(Options{})
	if err := e2.ReadSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if !e2.lex.HasTerm(0, "\x00speaker\x00caroline") {
		t.Fatal("the speaker field term is lost in the snapshot")
	}
}
