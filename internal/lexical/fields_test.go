package lexical

import (
	"testing"
)

func TestFieldTerms(t *testing.T) {
	ix := New(DefaultOptions())
	spk := FieldTerm("speaker", "caroline")
	ix.AddWithFields(1, "Caroline: I went to the support group", []string{spk})
	ix.AddWithFields(2, "Melanie: Caroline, that sounds great", []string{FieldTerm("speaker", "melanie")})
	if !ix.HasTerm(1, spk) || ix.HasTerm(2, spk) {
		t.Fatal("HasTerm does not tell which document holds the field term")
	}
	if got := ix.DocLen(1); got != len(Analyze("Caroline: I went to the support group", true))+1 {
		t.Errorf("DocLen = %d: a field term counts as one token", got)
	}
	// A query never matches a field term by its words.
	for _, h := range ix.Search("speaker", 10, nil) {
		t.Errorf("the query %q matched document %d through a field term", "speaker", h.Key)
	}
	var keys []uint32
	ix.Postings(Analyze("Caroline", true)[0], func(k uint32, tf int) { keys = append(keys, k) })
	if len(keys) != 2 {
		t.Errorf("Postings(caroline) = %v, want both documents", keys)
	}
	// Field terms survive a snapshot.
	ix2 := roundTrip(t, ix)
	if !ix2.HasTerm(1, spk) || ix2.HasTerm(2, spk) {
		t.Error("field terms lost in the snapshot")
	}
	ix.Remove(1)
	if ix.HasTerm(1, spk) || ix.DocFreq(spk) != 0 {
		t.Error("a removed document keeps its field term")
	}
}
