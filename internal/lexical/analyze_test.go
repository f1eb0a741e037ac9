package lexical

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAnalyze(t *testing.T) {
	cases := []struct {
		name string
		in   string
		stem bool
		want []string
	}{
		{"empty", "", true, nil},
		{"only separators", " ,.;!? \t\n-- ", true, nil},
		{"case", "Hello WORLD MiXeD", false, []string{"hello", "world", "mixed"}},
		{"punctuation splits", "foo,bar;baz/qux-quux(zap)", false, []string{"foo", "bar", "baz", "qux", "quux", "zap"}},
		{"unicode lower", "ÉCOLE Straße ΑΘΗΝΑ Москва", false, []string{"école", "straße", "αθηνα", "москва"}},
		{"combining mark stays", "cafe\u0301 ok", false, []string{"cafe\u0301", "ok"}},
		{"cjk", "東京 我 喜欢", false, []string{"東京", "我", "喜欢"}},
		{"possessive", "Alice's cat; JAMES'S dog", false, []string{"alice", "cat", "james", "dog"}},
		{"curly possessive", "Alice\u2019s cat", false, []string{"alice", "cat"}},
		{"contraction joins", "don't won't can't o'neill rock'n'roll", false, []string{"dont", "wont", "cant", "oneill", "rocknroll"}},
		{"curly contraction", "doesn\u2019t", false, []string{"doesnt"}},
		{"edge apostrophes", "'quoted' students' 'sup", false, []string{"quoted", "students", "sup"}},
		{"s after apostrophe inside word", "it'sy", false, []string{"itsy"}},
		{"stop words", "The cat is on the mat and it was a good one", false, []string{"cat", "mat", "good", "one"}},
		{"negations kept", "I do not like it, no, never, nor can't", false, []string{"not", "like", "no", "never", "nor", "cant"}},
		{"pronoun contractions stop", "I'm sure you're right, it's fine", false, []string{"sure", "right", "fine"}},
		{"single letters dropped, digits kept", "x y z 7 a 0 b", false, []string{"7", "0"}},
		{"numbers", "born 1987, moved 2023-05-01 at 3.14pm, room 42B", false,
			[]string{"born", "1987", "moved", "2023", "05", "01", "3", "14pm", "room", "42b"}},
		{"invalid utf8 separates", "ab\xffcd", false, []string{"ab", "cd"}},
		{"stem plurals", "cats boxes cities classes ties status bus yes gas", true,
			[]string{"cat", "box", "city", "class", "tie", "status", "bus", "yes", "gas"}},
		{"stem verbs", "running hopped hoping hopping agreed needed created eating studied", true,
			[]string{"run", "hop", "hope", "hop", "agre", "need", "creat", "eat", "study"}},
		{"stem keeps short and vowelless stems", "thing sing bring red need", true,
			[]string{"thing", "sing", "bring", "red", "need"}},
		{"stem ly", "quickly really family butterfly supply early", true,
			[]string{"quick", "real", "family", "butterfly", "supply", "early"}},
		{"no stem with digits or non-ascii", "1990s covid19 niños", true, []string{"1990s", "covid19", "niños"}},
		{"no stem when off", "running cats", false, []string{"running", "cats"}},
		{"stem applies after possessive", "Alice's dogs", true, []string{"alic", "dog"}},
	}
	for _, c := range cases {
		got := Analyze(c.in, c.stem)
		if len(got) == 0 && len(c.want) == 0 {
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: Analyze(%q, %v) = %q, want %q", c.name, c.in, c.stem, got, c.want)
		}
	}
}

func TestStemVariantsAgree(t *testing.T) {
	groups := [][]string{
		{"run", "runs", "running"},
		{"hope", "hoped", "hopes", "hoping"},
		{"create", "created", "creates", "creating"},
		{"like", "liked", "likes", "liking"},
		{"city", "cities"},
		{"study", "studies", "studied", "studying"},
		{"box", "boxes"},
		{"watch", "watches", "watched", "watching"},
		{"house", "houses"},
		{"size", "sizes", "sized"},
		{"use", "used", "uses", "using"},
		{"agree", "agreed", "agrees"},
		{"final", "finally"},
		{"play", "played", "playing", "plays"},
		{"stop", "stopped", "stopping", "stops"},
		{"fall", "falling", "falls"},
		{"miss", "missed", "missing"},
		{"treat", "treated", "treating", "treats"},
	}
	for _, g := range groups {
		want := Analyze(g[0], true)
		for _, w := range g[1:] {
			if got := Analyze(w, true); !slices.Equal(got, want) {
				t.Errorf("stem(%q) = %q, want %q (as %q)", w, got, want, g[0])
			}
		}
	}
}

func TestStopWords(t *testing.T) {
	if n := len(StopWords); n < 120 || n > 200 {
		t.Errorf("stop list has %d words", n)
	}
	for _, w := range StopWords {
		if w != strings.ToLower(w) || !isPlainASCII(w) {
			t.Errorf("stop word %q is not lower-case ASCII", w)
		}
		if len(w) > 10 {
			t.Errorf("stop word %q longer than isStopWord's cut-off", w)
		}
	}
	for _, neg := range []string{"not", "no", "nor", "never", "cannot", "dont", "doesnt", "didnt", "isnt", "wasnt", "cant", "wont", "without"} {
		if _, ok := stopSet[neg]; ok {
			t.Errorf("negation %q is a stop word", neg)
		}
	}
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return true
}

func checkTokens(t *testing.T, in string, stem bool, toks []string) {
	t.Helper()
	for _, tok := range toks {
		if tok == "" {
			t.Fatalf("Analyze(%q, %v): empty token in %q", in, stem, toks)
		}
		if !utf8.ValidString(tok) {
			t.Fatalf("Analyze(%q, %v): invalid UTF-8 token %q", in, stem, tok)
		}
		if strings.ToLower(tok) != tok {
			t.Fatalf("Analyze(%q, %v): token %q not lower-case", in, stem, tok)
		}
		if _, ok := stopSet[tok]; ok && !stem {
			t.Fatalf("Analyze(%q, %v): stop word %q kept", in, stem, tok)
		}
		if utf8.RuneCountInString(tok) == 1 {
			r, _ := utf8.DecodeRuneInString(tok)
			if !keepSingle(r) {
				t.Fatalf("Analyze(%q, %v): single-rune token %q", in, stem, tok)
			}
		}
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"", "Alice's cat doesn't like the vet", "2023-05-01 3.14", "ÉCOLE Straße 東京",
		"'''s's", "a'", "'s", "x's", "cafe\u0301", "\xff\xfe", "İSTANBUL ǅ ẞ", "running hopped cities",
		"ies eed ing ed ly", "sses", "aaaeeed", "yyyy", "ying",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, stem := range []bool{false, true} {
			toks := Analyze(s, stem)
			checkTokens(t, s, stem, toks)
			if again := Analyze(s, stem); !slices.Equal(toks, again) {
				t.Fatalf("Analyze(%q, %v) not deterministic", s, stem)
			}
		}
		// Without stemming, analysis is idempotent over its own output.
		toks := Analyze(s, false)
		if again := Analyze(strings.Join(toks, " "), false); !slices.Equal(toks, again) {
			t.Fatalf("Analyze not idempotent: %q → %q → %q", s, toks, again)
		}
	})
}

func BenchmarkAnalyze(b *testing.B) {
	text := "Alice's favourite coffee shop closed in 2023; she doesn't go downtown anymore and prefers working from home on Fridays."
	b.SetBytes(int64(len(text)))
	tb := new(tokenList)
	for b.Loop() {
		analyzeInto(tb, text, true)
	}
}
