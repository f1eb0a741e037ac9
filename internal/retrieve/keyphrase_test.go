package retrieve

import (
	"bytes"
	"slices"
	"testing"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

func TestTextPhrases(t *testing.T) {
	got := textPhrases(clauses("Melanie: I just signed up for a pottery class yesterday. Pride, parade and the big pottery class!"), 10)
	want := []string{"pottery class", "class yesterday", "big pottery"}
	for i, w := range want {
		want[i] = analysedPair(w)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("phrases %q, want %q (a stop word, a comma or a full stop breaks a pair; no repeats)", got, want)
	}
	if got := textPhrases(clauses("one two three four five six"), 3); len(got) != 3 {
		t.Fatalf("%d phrases past the limit of 3: %q", len(got), got)
	}
}

// analysedPair is a two-word phrase as the index analyses it.
func analysedPair(p string) string {
	ws := lexical.Analyze(p, true)
	return ws[0] + " " + ws[1]
}

// phraseTurns: the long turn holds "pride parade" as a phrase; the short
// one holds both words apart, so BM25 over words ranks it first.
func phraseTurns(e *Engine, access memory.Access) {
	e.Upsert("w", rec(1, "Caroline: last week we all marched in the pride parade downtown with the whole crew from the centre", session("a"),
		func(r *memory.Record) { r.Access = access }))
	e.Upsert("w", rec(2, "Melanie: pride matters to me; the parade was loud", session("a")))
	e.Upsert("w", rec(3, "Melanie: I painted a sunset over the lake", session("b")))
}

// TestKeyphraseRanksTheTurn: the question's phrase lifts the turn holding
// it above a shorter turn holding its words apart; without the phrase
// list (old code) the shorter turn ranks first.
func TestKeyphraseRanksTheTurn(t *testing.T) {
	e := New(Options{})
	phraseTurns(e, memory.Public)
	search := func(w float64) Result {
		res, err := e.Search(t.Context(), Query{Text: "When was the pride parade?",
			Filter: Filter{Workspace: "w", Access: everyone}, Weights: map[string]float64{SignalPhrases: w}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	one, two := rec(1, "").ID, rec(2, "").ID
	if got := ids(search(0)); len(got) < 2 || got[0] != two {
		t.Fatalf("without the phrase list the short turn should rank first, got %v", got)
	}
	res := search(0.1)
	if got := ids(res); len(got) < 2 || got[0] != one {
		t.Fatalf("with the phrase list the turn holding the phrase should rank first, got %v", got)
	}
	if _, ok := res.Hits[0].Signals[SignalPhrases]; !ok {
		t.Fatalf("the phrase list is not in the hit's explanation: %v", res.Hits[0].Signals)
	}
}

// TestKeyphraseRespectsTheFilter: a turn the searcher may not read is
// never ranked by its phrases, and lends nothing to the turns beside it.
func TestKeyphraseRespectsTheFilter(t *testing.T) {
	e := New(Options{})
	phraseTurns(e, memory.Sensitive)
	res, err := e.Search(t.Context(), Query{Text: "the pride parade", Filter: Filter{Workspace: "w", Access: []memory.Access{memory.Public}},
		Weights: map[string]float64{SignalPhrases: 10}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Hits {
		if h.ID == rec(1, "").ID {
			t.Fatalf("a sensitive turn was returned to a searcher of public turns: %v", ids(res))
		}
		if _, ok := h.Signals[SignalPhrases]; ok {
			t.Fatalf("hit %s ranked by a phrase only the unreadable turn holds: %v", h.ID, h.Signals)
		}
	}
}

// TestForgetErasesKeyphraseKeys: forgetting a turn removes its phrase
// keys from the index and from a snapshot written afterwards.
func TestForgetErasesKeyphraseKeys(t *testing.T) {
	e := New(Options{})
	a := rec(1, "Caroline: we marched in the pride parade downtown", session("a"))
	e.Upsert("w", a)
	e.Upsert("w", rec(2, "Melanie: the parade was loud", session("a")))
	key := lexical.FieldTerm(phraseField, analysedPair("pride parade"))
	if e.lex.DocFreq(key) != 1 {
		t.Fatalf("phrase key not indexed: df %d", e.lex.DocFreq(key))
	}
	a.Status = memory.Forgotten
	e.Upsert("w", a)
	if e.lex.DocFreq(key) != 0 {
		t.Fatalf("forget left the phrase key: df %d", e.lex.DocFreq(key))
	}
	res, err := e.Search(t.Context(), Query{Text: "the pride parade", Filter: Filter{Workspace: "w", Access: everyone},
		Weights: map[string]float64{SignalPhrases: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(res), a.ID) {
		t.Fatalf("the forgotten turn was found: %v", ids(res))
	}
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte(analysedPair("pride parade"))) || bytes.Contains(buf.Bytes(), []byte("marched")) {
		t.Fatal("the snapshot written after the forget still holds the turn's phrase key")
	}
}

// TestKeyphrasesDoNotLengthenTheTurn: phrase keys are uncounted, so BM25
// weighs a turn's words as before they were derived.
func TestKeyphrasesDoNotLengthenTheTurn(t *testing.T) {
	e := New(Options{})
	e.Upsert("w", rec(1, "Caroline: we marched in the pride parade downtown"))
	e.Upsert("w", rec(2, "Caroline: marched, pride, parade, downtown")) // the same words, no phrase
	k1, _ := e.lookup("w", rec(1, "").ID)
	k2, _ := e.lookup("w", rec(2, "").ID)
	if len(e.lex.FieldTerms(k1, phraseField)) == 0 || len(e.lex.FieldTerms(k2, phraseField)) != 0 {
		t.Fatalf("phrase keys %q and %q, want some and none", e.lex.FieldTerms(k1, phraseField), e.lex.FieldTerms(k2, phraseField))
	}
	if l1, l2 := e.lex.DocLen(k1), e.lex.DocLen(k2); l1 != l2 {
		t.Fatalf("turn lengths %d and %d: the phrase keys count towards the length", l1, l2)
	}
}
