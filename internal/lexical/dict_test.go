package lexical

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
// must follow on every cycle — no map, no string per term, and no slice
// per term for its postings (postings.go).
func TestDictionaryHoldsNoPointers(t *testing.T) {
	var ptrs []string
	for f := range reflect.TypeFor[entry]().Fields() {
		switch f.Type.Kind() {
		case reflect.String, reflect.Map, reflect.Pointer, reflect.Interface:
			t.Errorf("entry.%s is a %s", f.Name, f.Type.Kind())
		case reflect.Slice:
			ptrs = append(ptrs, f.Name)
		}
	}
	if len(ptrs) > 0 {
		t.Errorf("entry's slices: %v, want none (the postings are regions of the index's slabs)", ptrs)
	}
	for f := range reflect.TypeFor[Index]().Fields() {
		if k := f.Type.Kind(); k == reflect.Map || k == reflect.String {
			t.Errorf("Index.%s is a %s", f.Name, k)
		}
	}
}

// The postings slabs through churn with compaction forced often: every
// list stays in a region of its own (checkSlabs), the postings stay those
// of the documents (checkInvariants), and searches give what an index
// built afresh from the surviving documents gives.
func TestPostingsSlabsCompaction(t *testing.T) {
	oldMin, oldChunk := postCompactMin, postChunk
	postCompactMin, postChunk = 64, 128 // lists longer than a chunk too
	t.Cleanup(func() { postCompactMin, postChunk = oldMin, oldChunk })
	r := rand.New(rand.NewPCG(31, 32))
	ix := New(DefaultOptions())
	docs := map[uint32]string{}
	compactions, garbage := 0, 0
	for step := range 20000 {
		k := uint32(r.IntN(600))
		if r.IntN(3) == 0 {
			ix.Remove(k)
			delete(docs, k)
		} else {
			text := randomDoc(r) + " common words everywhere" + strings.Repeat(" again", r.IntN(4))
			ix.Add(k, text)
			docs[k] = text
		}
		if ix.post.garbage < garbage {
			compactions++
		}
		garbage = ix.post.garbage
		if step%1000 == 0 {
			checkInvariants(t, ix)
		}
		if step%700 == 0 { // besides those garbage triggers
			ix.mu.Lock()
			ix.compactPostings()
			ix.mu.Unlock()
		}
	}
	checkInvariants(t, ix)
	if compactions < 20 || len(ix.post.keys) < 10 {
		t.Fatalf("%d compactions, %d chunks", compactions, len(ix.post.keys))
	}
	fresh := New(DefaultOptions())
	for k, text := range docs {
		fresh.Add(k, text)
	}
	postings := func(ix *Index, name string) map[uint32]int {
		m := map[uint32]int{}
		ix.Postings(name, func(key uint32, tf int) { m[key] = tf })
		return m
	}
	freshDict := dictOf(fresh)
	if len(freshDict) != len(dictOf(ix)) {
		t.Fatalf("churned index has %d terms, a fresh one %d", len(dictOf(ix)), len(freshDict))
	}
	for name := range freshDict {
		if got, want := postings(ix, name), postings(fresh, name); !maps.Equal(got, want) {
			t.Fatalf("%q: churned postings %v, fresh %v", name, got, want)
		}
	}
	for _, q := range []string{"common", "words everywhere", "again", "again " + randomDoc(r), randomDoc(r), randomDoc(r), randomDoc(r)} {
		got, want := ix.Search(q, 20, nil), fresh.Search(q, 20, nil)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: churned index gives %v, a fresh one %v", q, got, want)
		}
	}
}

// A term removed with its last document leaves no trace of its name in
// the arena (an erased record's words must not stay in the process).
func TestRemovedTermNameZeroed(t *testing.T) {
	ix := New(DefaultOptions())
	ix.Add(1, "common zanzibarite")
	ix.Add(2, "common words")
	word := Analyze("zanzibarite", true)[0]
	if !bytes.Contains(ix.names, []byte(word)) {
		t.Fatalf("%q is not in the arena: %q", word, ix.names)
	}
	ix.Remove(1)
	if bytes.Contains(ix.names, []byte(word)) {
		t.Fatalf("the removed term's name is still in the arena: %q", ix.names)
	}
	if !bytes.Contains(ix.names, []byte("common")) {
		t.Fatalf("a live term's name is gone: %q", ix.names)
	}
}

// A restored list keeps room to grow (an eighth of its length), so the
// first postings added after a restore do not move the long lists of
// common words.
func TestRestoredListsHaveRoom(t *testing.T) {
	ix := New(DefaultOptions())
	for k := range 400 {
		ix.Add(uint32(k), "common words "+strconv.Itoa(k))
	}
	got := roundTrip(t, ix)
	checkInvariants(t, got)
	id, ok := got.lookup("common")
	if !ok {
		t.Fatal("common not restored")
	}
	e := got.terms[id]
	if e.n != 400 || e.cap < 400+400/8 {
		t.Fatalf("restored list of %d postings in a region of %d", e.n, e.cap)
	}
	got.Add(400, "common words again")
	if after := got.terms[id]; after.chunk != e.chunk || after.off != e.off || after.n != 401 {
		t.Fatalf("adding a posting moved the restored list: %+v -> %+v", e, after)
	}
	checkInvariants(t, got)
}

// roundTrip is ix written to a snapshot and read back.
func roundTrip(t *testing.T, ix *Index) *Index {
	t.Helper()
	var buf bytes.Buffer
	if _, err := ix.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := ReadIndex(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return got
}
