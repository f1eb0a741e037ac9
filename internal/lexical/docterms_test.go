package lexical

import (
	"bytes"
	"slices"
	"testing"
)

// wordTerms lists the word terms (not field terms, see FieldTerm) that
// document key holds; nil when it is not indexed: what WordOverlaps
// totals with a weight of one.
func wordTerms(ix *Index, key uint32) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.has(key) {
		return nil
	}
	var out []string
	ix.eachTerm(ix.docs[key], func(id uint32) {
		if n := ix.nameOf(id); !bytes.HasPrefix(n, []byte{0}) {
			out = append(out, string(n))
		}
	})
	return out
}

// TestWordOverlaps: the weights of the words documents share with each
// head document, field and key terms aside, and none for a document not
// indexed.
func TestWordOverlaps(t *testing.T) {
	ix := New(Options{})
	ix.AddWithKeys(1, "red apples and green pears", []string{FieldTerm("speaker", "ann")}, nil)
	ix.AddWithKeys(2, "green apples", []string{FieldTerm("speaker", "ann")}, nil)
	ix.Add(3, "blue sky")
	one := func(int) float64 { return 1 }
	shared, total := ix.WordOverlaps([]uint32{1, 3, 9}, []uint32{2, 3, 9, 1}, one)
	words := float64(len(wordTerms(ix, 1)))
	if !slices.Equal(total, []float64{words, 2, 0}) {
		t.Fatalf("totals %v, want [%v 2 0]", total, words)
	}
	want := [][]float64{{2, 0, 0, words}, {0, 2, 0, 0}, {0, 0, 0, 0}}
	for h := range want {
		if !slices.Equal(shared[h], want[h]) {
			t.Fatalf("shared with head %d: %v, want %v (apples and green; not the speaker)", h, shared[h], want[h])
		}
	}
	// The weight sees each term's document frequency.
	byDF := func(df int) float64 { return float64(df) }
	if shared, _ := ix.WordOverlaps([]uint32{2}, []uint32{1}, byDF); shared[0][0] != 4 {
		t.Fatalf("shared weights %v, want 4 (apples and green are in two documents each)", shared)
	}
}

// TestTermMasks: WordOverlapsAndMasks' masks (no heads) say what HasTerm says, for every key and term:
// words, field terms, a term no document holds, a term named twice, a
// key not indexed and a removed document.
func TestTermMasks(t *testing.T) {
	ix := New(Options{})
	ix.AddWithKeys(1, "red apples and green pears", []string{FieldTerm("speaker", "ann")}, nil)
	ix.AddWithKeys(2, "green apples", []string{FieldTerm("speaker", "bob")}, []string{FieldTerm("key", "fruit")})
	ix.Add(3, "blue sky and green grass")
	ix.Add(4, "green tea")
	ix.Remove(4)
	terms := []string{"green", FieldTerm("speaker", "ann"), "nothing", "appl", FieldTerm("key", "fruit"), "green", "sky"}
	keys := []uint32{3, 9, 1, 2, 4}
	masks := []uint64{99, 99, 99, 99, 99, 99}
	ix.WordOverlapsAndMasks(nil, keys, nil, terms, masks)
	for i, k := range keys {
		for j, term := range terms {
			if got, want := masks[i]&(1<<j) != 0, ix.HasTerm(k, term); got != want {
				t.Errorf("key %d, term %q: mask says %v, HasTerm %v", k, term, got, want)
			}
		}
	}
	if masks[2] == 0 || masks[5] != 99 {
		t.Fatalf("masks %v: document 1 holds terms; the entry past the keys is left alone", masks)
	}
}
