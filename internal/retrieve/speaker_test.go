package retrieve

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

func TestSpeakerOf(t *testing.T) {
	for speaker, want := range map[string][]string{
		"Caroline":             {"caroline"},
		"user":                 {"user"},
		"Dr. Jane O'Neill":     {"dr", "jane", "o'neill"},
		"one two three four":   nil, // too long a name
		"Melanie (mom)":        nil,
		"":                     nil,
		"ops@example.com team": nil,
	} {
		meta, _ := json.Marshal(map[string]any{"speaker": speaker, "role": "user"})
		if got := speakerOf(meta); !slices.Equal(got, want) {
			t.Errorf("speakerOf(%s) = %q, want %q", meta, got, want)
		}
	}
	for _, meta := range []string{``, `{}`, `{"speaker": 7}`, `not json`} {
		if got := speakerOf(json.RawMessage(meta)); got != nil {
			t.Errorf("speakerOf(%s) = %q, want none", meta, got)
		}
	}
}

// TestSpeakerComesFromMetadata: the speaker is the metadata's, never a
// name parsed back out of the content, so a turn whose text happens to
// start "Name: " is not indexed as spoken by Name, and a turn whose
// content does not start with its speaker still is.
func TestSpeakerComesFromMetadata(t *testing.T) {
	e := New(Options{})
	e.Upsert("w", rec(1, "Note: the pottery class starts at six"))
	e.Upsert("w", rec(2, "the pottery class starts at six", spoken("Caroline")))
	if e.lex.HasTerm(0, "\x00speaker\x00note") {
		t.Error("a speaker parsed out of the content")
	}
	if !e.lex.HasTerm(1, "\x00speaker\x00caroline") {
		t.Error("the metadata's speaker is not indexed")
	}
}

// spoken sets the turn's speaker in its metadata, as the gateway does.
func spoken(name string) func(*memory.Record) {
	return func(r *memory.Record) {
		r.Metadata, _ = json.Marshal(map[string]any{"speaker": name})
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
	e.Upsert("w", rec(1, "Melanie: Caroline, the pottery class sounds fun", session("s1"), spoken("Melanie")))
	e.Upsert("w", rec(2, "Caroline: I signed up for a class last week after work", session("s2"), spoken("Caroline")))
	e.Upsert("w", rec(3, "Melanie: the kids painted a bowl", session("s3"), spoken("Melanie")))
	e.Upsert("w", rec(4, "Caroline: I went hiking", session("s4"), spoken("Caroline")))
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
	e.Upsert("w", rec(1, "Caroline: I signed up for a pottery class", spoken("Caroline")))
	e2 := restored(t, e)
	if !e2.lex.HasTerm(0, "\x00speaker\x00caroline") {
		t.Fatal("the speaker field term is lost in the snapshot")
	}
}
