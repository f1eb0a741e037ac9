package graph

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func recogniser() *Index {
	x := New()
	put := func(id, name, key string, aliases ...string) {
		x.PutNode(Node{ID: id, Workspace: "w", Label: "concept", Name: name, Key: key, Aliases: aliases})
	}
	put("ny", "New York", "new_york", "NYC", "the Big Apple")
	put("york", "York", "york")
	put("nyc-sub", "New York City Subway", "nyc_subway")
	put("go", "Go", "golang")
	put("pay", "Payment Service", "payment_service", "payments-api")
	put("k8s", "Kubernetes", "kubernetes", "K8s")
	put("c", "C", "c-lang") // one letter: only its key is recognisable
	put("oneill", "Alice O'Neill", "alice_oneill")
	put("zurich", "Zürich", "zurich")
	put("db1", "Postgres", "postgres-primary")
	put("db2", "Postgres", "postgres-replica") // shares a name with db1
	a := Node{ID: "old", Workspace: "w", Name: "Legacy Billing", Key: "legacy_billing", Archived: true}
	x.PutNode(a)
	put("billing", "Billing", "billing")
	return x
}

func TestRecognise(t *testing.T) {
	x := recogniser()
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", nil},
		{"multi-word, case-insensitive", "I moved to NEW YORK last year", []string{"ny"}},
		{"longest match wins", "the new york city subway is late", []string{"nyc-sub"}},
		{"shorter name alone", "York is in England", []string{"york"}},
		{"alias", "k8s and the big apple", []string{"k8s", "ny"}},
		{"alias abbreviation", "NYC!", []string{"ny"}},
		{"key with underscores matches spaces", "the payment service failed", []string{"pay"}},
		{"key spelled with dashes", "payment-service failed, payments_api too", []string{"pay"}},
		{"punctuation around", "(Go), \"kubernetes\"; york.", []string{"go", "k8s", "york"}},
		{"no partial words", "going gopher goes yorkshire newyork", nil},
		{"word inside a word", "ago, cargo, go-to", []string{"go"}},
		{"order of first mention, deduplicated", "york go York GO golang", []string{"york", "go"}},
		{"one letter names are not matched", "I write C code in c", nil},
		{"one letter name's key is", "c-lang and c_lang", []string{"c"}},
		{"apostrophe", "ask Alice O'Neill or alice o neill", []string{"oneill"}},
		{"unicode case", "ZÜRICH and zurich", []string{"zurich"}},
		{"shared name names all", "postgres is down", []string{"db1", "db2"}},
		{"archived hidden, shorter name instead", "legacy billing is gone", []string{"billing"}},
		{"split across lines", "New\nYork", []string{"ny"}},
	}
	for _, c := range cases {
		got := x.Recognise("w", c.text)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: Recognise(%q) = %v, want %v", c.name, c.text, got, c.want)
		}
	}
}

func TestRecogniseUpdates(t *testing.T) {
	x := recogniser()
	// Renaming drops the old spelling.
	x.PutNode(Node{ID: "york", Workspace: "w", Name: "Eboracum", Key: "eboracum"})
	if got := x.Recognise("w", "york and eboracum"); !slices.Equal(got, []string{"york"}) {
		t.Errorf("after rename: %v", got)
	}
	if got := x.Recognise("w", "visiting york"); got != nil {
		t.Errorf("old name still recognised: %v", got)
	}
	x.RemoveNode("w", "db1")
	if got := x.Recognise("w", "postgres"); !slices.Equal(got, []string{"db2"}) {
		t.Errorf("after removing db1: %v", got)
	}
	x.RemoveNode("w", "db2")
	if got := x.Recognise("w", "postgres"); got != nil {
		t.Errorf("after removing db2: %v", got)
	}
	// Unarchiving makes the longer name win again.
	x.PutNode(Node{ID: "old", Workspace: "w", Name: "Legacy Billing", Key: "legacy_billing"})
	if got := x.Recognise("w", "legacy billing"); !slices.Equal(got, []string{"old"}) {
		t.Errorf("after unarchiving: %v", got)
	}
}

func TestSplitWords(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"Hello, World!", "hello world"},
		{"payment_service-v2", "payment service v2"},
		{"  many   spaces\t\n", "many spaces"},
		{"ÉCOLE Straße", "école straße"},
		{"cafe\u0301s", "cafe\u0301s"},
		{"ab\xffcd", "ab cd"},
		{"O'Neill's", "o neill s"},
	}
	for _, c := range cases {
		var w words
		w.split(c.in)
		if got := string(w.buf); got != c.want {
			t.Errorf("split(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := strings.Fields(c.want); len(got) != w.len() {
			t.Errorf("split(%q): %d words, want %d", c.in, w.len(), len(got))
		}
	}
}

func FuzzRecognise(f *testing.F) {
	for _, s := range []string{"New York city", "go going", "k8s, NYC!", "ab\xffcd", "Zürich\u0301", ""} {
		f.Add(s)
	}
	x := recogniser()
	f.Fuzz(func(t *testing.T, text string) {
		var w words
		w.split(text)
		if !utf8.Valid(w.buf) {
			t.Fatalf("split(%q) produced invalid UTF-8 %q", text, w.buf)
		}
		for i := range w.len() {
			word := string(w.buf[w.start[i]:w.end[i]])
			if word == "" || strings.Contains(word, " ") {
				t.Fatalf("split(%q): bad word %q", text, word)
			}
			if i > 0 && w.start[i] != w.end[i-1]+1 {
				t.Fatalf("split(%q): words not separated by one space", text)
			}
		}
		got := x.Recognise("w", text)
		if again := x.Recognise("w", text); !slices.Equal(got, again) {
			t.Fatalf("Recognise(%q) not deterministic: %v, %v", text, got, again)
		}
		seen := map[string]bool{}
		for _, id := range got {
			if seen[id] || id == "old" {
				t.Fatalf("Recognise(%q) = %v: duplicate or archived", text, got)
			}
			seen[id] = true
		}
	})
}
