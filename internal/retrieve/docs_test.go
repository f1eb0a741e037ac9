package retrieve

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/memory"
)

// TestRecordsAtScale drives the key table through several growths and
// the word and entity arenas through compactions, with canonical and odd
// ids in two workspaces, updates, forgets and revivals; every record must
// stay findable under its name, its fields intact, and a snapshot must
// restore the same state.
func TestRecordsAtScale(t *testing.T) {
	e := New(Options{})
	r := rand.New(rand.NewPCG(3, 4))
	want := map[string]docView{} // by ws NUL id: the last write
	id := func(i int) string {
		if i%9 == 4 {
			return fmt.Sprintf("odd-%d", i)
		}
		return fmt.Sprintf("00000000-0000-7000-8000-%012d", i)
	}
	write := func(i int, ws string, round int) {
		words := make([]string, 5+r.IntN(30))
		for j := range words {
			words[j] = fmt.Sprintf("w%d", r.IntN(3000))
		}
		rc := rec(0, strings.Join(words, " "), func(rc *memory.Record) {
			rc.ID = id(i)
			rc.Type = []memory.Type{memory.Belief, memory.Episode, memory.Type("custom")}[r.IntN(3)]
			rc.Entities = []string{fmt.Sprintf("e%d", r.IntN(50)), fmt.Sprintf("e%d", round)}[:r.IntN(3)]
			rc.Version = round + 1
			rc.Scope.ProjectID = fmt.Sprintf("p%d", i%7)
		})
		if i%13 == 0 {
			rc.ContentSHA256 = "odd-hash"
		}
		e.Upsert(ws, rc)
		v := docView{ws: ws, id: rc.ID, alive: true}
		want[ws+"\x00"+rc.ID] = v
	}
	const n = 6000
	for round := range 4 {
		for i := range n {
			if r.IntN(4) == 0 && round > 0 {
				continue
			}
			ws := []string{"w1", "w2"}[i%2]
			if r.IntN(10) == 0 {
				e.Upsert(ws, memory.Record{ID: id(i), Status: memory.Forgotten})
				if _, ok := want[ws+"\x00"+id(i)]; ok {
					want[ws+"\x00"+id(i)] = docView{ws: ws, id: id(i)}
				}
				continue
			}
			write(i, ws, round)
		}
	}
	check := func(e *Engine, what string) {
		t.Helper()
		if e.keyTab.n != len(e.docs) || len(e.docs) != len(want) {
			t.Fatalf("%s: %d filed, %d docs, %d names written", what, e.keyTab.n, len(e.docs), len(want))
		}
		for name, w := range want {
			ws, rid, _ := strings.Cut(name, "\x00")
			k, ok := e.lookup(ws, rid)
			if !ok {
				t.Fatalf("%s: %q not found", what, name)
			}
			v := e.view(k)
			if v.ws != w.ws || v.id != w.id || v.alive != w.alive {
				t.Fatalf("%s: %q is %+v", what, name, v)
			}
			if v.alive && (v.typ == memory.Episode) != (v.words == nil) {
				t.Fatalf("%s: %q (%s) has words %v", what, name, v.typ, v.words)
			}
		}
		if _, ok := e.lookup("w1", id(1)); ok { // odd keys live in w2
			t.Fatalf("%s: found in the wrong workspace", what)
		}
	}
	check(e, "built")
	if e.words.garbage > len(e.words.v)/2 && e.words.garbage >= 1<<14 {
		t.Fatalf("word arena not compacted: %d of %d garbage", e.words.garbage, len(e.words.v))
	}
	var buf bytes.Buffer
	if err := e.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	got := New(Options{})
	if err := got.ReadSnapshot(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	check(got, "restored")
	for k := range e.docs {
		if a, b := e.view(uint32(k)), got.view(uint32(k)); !reflect.DeepEqual(a, b) {
			t.Fatalf("doc %d:\n%+v\n%+v", k, a, b)
		}
	}
	if got.words.garbage != 0 || len(got.words.v) > len(e.words.v)-e.words.garbage {
		t.Fatalf("restored word arena: %d entries, %d garbage (live %d)", len(got.words.v), got.words.garbage, len(e.words.v)-e.words.garbage)
	}
}
