package lexical

import (
	"slices"
	"testing"
)

func TestWordTermsOfADocument(t *testing.T) {
	ix := New(Options{})
	ix.AddWithKeys(1, "Paris walks", []string{FieldTerm("speaker", "ann")}, []string{FieldTerm("ent", "paris")})
	got := ix.WordTerms(1)
	slices.Sort(got)
	want := Analyze("Paris walks", false)
	slices.Sort(want)
	want = slices.Compact(want)
	if !slices.Equal(got, want) {
		t.Fatalf("WordTerms(1) = %q, want %q (words only, no field or key terms)", got, want)
	}
	ix.Remove(1)
	if got := ix.WordTerms(1); got != nil {
		t.Fatalf("a removed document still lists %q", got)
	}
}
