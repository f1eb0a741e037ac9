package lexical

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// dictOf is the dictionary as a map, read from the table (callers hold
// ix.mu or own ix).
func dictOf(ix *Index) map[string]uint32 {
	m := map[string]uint32{}
	for _, s := range ix.slots {
		if s != 0 {
			m[ix.termName(s-1)] = s - 1
		}
	}
	return m
}

// The dictionary through churn: terms added and removed in random order
// (removals shift probe chains back; reused ids; the name arena
// compacted) are found by name exactly while they have a posting and not
// after, and the table agrees with the terms.
func TestDictionaryChurn(t *testing.T) {
	ix := New(DefaultOptions())
	rng := rand.New(rand.NewPCG(1, 2))
	live := map[uint32]string{} // key → its one word
	compacted, garbage := false, 0
	for step := range 20000 {
		key := uint32(rng.IntN(3000))
		if _, ok := live[key]; ok && rng.IntN(2) == 0 {
			ix.Remove(key)
			delete(live, key)
		} else {
			w := "w" + strconv.Itoa(step) // a new term every time
			ix.Add(key, w)
			live[key] = w
		}
		compacted = compacted || ix.nameGarbage < garbage // only compaction lowers it
		garbage = ix.nameGarbage
		if step%97 == 0 {
			checkDictionary(t, ix, live)
		}
	}
	checkDictionary(t, ix, live)
	if !compacted {
		t.Fatalf("the name arena was never compacted (%d bytes for %d terms)", len(ix.names), len(live))
	}
	if 2*ix.nterms > len(ix.slots) {
		t.Fatalf("table more than half full: %d terms in %d slots", ix.nterms, len(ix.slots))
	}
}

func checkDictionary(t *testing.T, ix *Index, live map[uint32]string) {
	t.Helper()
	checkInvariants(t, ix)
	want := map[string]bool{}
	for _, w := range live {
		want[w] = true
	}
	if ix.nterms != len(want) {
		t.Fatalf("%d terms in the table, %d live", ix.nterms, len(want))
	}
	for key, w := range live {
		if got := ix.DocFreq(w); got != 1 {
			t.Fatalf("DocFreq(%q) = %d, want 1", w, got)
		}
		if hits := ix.Search(w, 2, nil); len(hits) != 1 || hits[0].Key != key {
			t.Fatalf("Search(%q) = %v, want key %d", w, hits, key)
		}
	}
	if ix.DocFreq("w-none") != 0 {
		t.Fatal("found a term never added")
	}
}

// The point of the dictionary's shape: however many terms an index
// holds, its names and its table are not pointers the garbage collector
// must follow on every cycle — no map, no string per term; a term's only
// pointers are its postings' two arrays.
func TestDictionaryHoldsNoPointers(t *testing.T) {
	var ptrs []string
	for f := range reflect.TypeFor[term]().Fields() {
		switch f.Type.Kind() {
		case reflect.String, reflect.Map, reflect.Pointer, reflect.Interface:
			t.Errorf("term.%s is a %s", f.Name, f.Type.Kind())
		case reflect.Slice:
			ptrs = append(ptrs, f.Name)
		}
	}
	if !slices.Equal(ptrs, []string{"keys", "tfs"}) {
		t.Errorf("term's slices: %v, want only the postings' keys and tfs", ptrs)
	}
	for f := range reflect.TypeFor[Index]().Fields() {
		if k := f.Type.Kind(); k == reflect.Map || k == reflect.String {
			t.Errorf("Index.%s is a %s", f.Name, k)
		}
	}
}
