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

// TestKeysDoNotLengthenTheDocument: key terms find the document but leave
// its length, and so its words' BM25 weight, as without them; a snapshot
// keeps that length.
func TestKeysDoNotLengthenTheDocument(t *testing.T) {
	ix := New(Options{})
	ix.AddWithFields(1, "wireguard keeps the tunnel up", nil)
	ix.AddWithKeys(2, "wireguard keeps the tunnel up", nil, []string{FieldTerm("ent", "wireguard"), FieldTerm("ent", "vpn")})
	ix.AddWithKeys(3, "wireguard keeps the tunnel up", []string{FieldTerm("key", "network")}, nil)
	if ix.DocLen(2) != ix.DocLen(1) || ix.DocLen(3) != ix.DocLen(1)+1 {
		t.Fatalf("lengths %d %d %d: keys must not count, fields must", ix.DocLen(1), ix.DocLen(2), ix.DocLen(3))
	}
	if ix.DocFreq(FieldTerm("ent", "vpn")) != 1 {
		t.Fatal("a key term is not indexed")
	}
	hits := ix.Search("wireguard tunnel", 3, nil)
	if len(hits) != 3 {
		t.Fatalf("hits %v, want 3", hits)
	}
	sc := map[uint32]float32{}
	for _, h := range hits {
		sc[h.Key] = h.Score
	}
	if sc[1] != sc[2] {
		t.Fatalf("scores %v: keys changed the words' weight", sc)
	}
	ix2 := roundTrip(t, ix)
	if ix2.DocLen(2) != ix.DocLen(2) {
		t.Fatalf("a snapshot changed the keyed length %d → %d", ix.DocLen(2), ix2.DocLen(2))
	}
}
