package lexical

import (
	"slices"
	"testing"
)

func TestFieldTermsOfADocument(t *testing.T) {
	ix := New(Options{})
	ix.AddWithFields(1, "a walk in Paris", []string{FieldTerm("ent", "paris"), FieldTerm("ent", "louvre"), FieldTerm("key", "travel")})
	ix.AddWithFields(2, "nothing", []string{FieldTerm("ent", "rome")})
	got := ix.FieldTerms(1, "ent")
	slices.Sort(got)
	if want := []string{FieldTerm("ent", "louvre"), FieldTerm("ent", "paris")}; !slices.Equal(got, want) {
		t.Fatalf("FieldTerms(1, ent) = %q, want %q", got, want)
	}
	if got := ix.FieldTerms(1, "speaker"); got != nil {
		t.Fatalf("FieldTerms(1, speaker) = %q, want none", got)
	}
	ix.Remove(1)
	if got := ix.FieldTerms(1, "ent"); got != nil {
		t.Fatalf("a removed document still lists %q", got)
	}
}
