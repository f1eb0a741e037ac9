package lexical

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Analyze splits text into index terms. The same function is used for
// documents and for queries, so anything that matches here matches in the
// index. The rules, in order:
//
//   - Tokens are maximal runs of Unicode letters and digits (combining marks
//     stay attached to the token they follow); everything else separates.
//     Letters are lower-cased with unicode.ToLower.
//   - Apostrophes (' ’ ‘ ＇) inside a word: a possessive "'s" at the end of a
//     word is dropped ("alice's" → "alice"); any other apostrophe between two
//     word characters joins them ("don't" → "dont", "o'neill" → "oneill").
//     Leading or trailing apostrophes separate ("students'" → "students").
//   - Single-character tokens are dropped, except digits and CJK/Hangul/kana
//     characters (which are words on their own).
//   - English stop words (StopWords) are dropped. Negations ("not", "no",
//     "nor", "never", "cannot", and joined contractions such as "dont") are
//     deliberately not stop words: they change the meaning of a fact.
//   - With stem set, tokens made only of ASCII letters go through a light,
//     deterministic suffix stripper (see stemASCII). Tokens containing digits
//     ("2023", "covid19", "1990s") or non-ASCII letters are never stemmed.
//
// The result keeps duplicates and document order.
func Analyze(text string, stem bool) []string {
	tb := getTokens()
	analyzeInto(tb, text, stem)
	out := tb.strings()
	putTokens(tb)
	return out
}

// tokenList is a reusable token buffer: token i is buf[ends[i-1]:ends[i]].
// It lets Add and Search analyse text without a string allocation per token.
type tokenList struct {
	buf  []byte
	ends []int
	ids  []uint32 // scratch for Add
}

var tokenPool = sync.Pool{New: func() any { return new(tokenList) }}

func getTokens() *tokenList { return tokenPool.Get().(*tokenList) }

func putTokens(tb *tokenList) {
	if cap(tb.buf) > 1<<16 || cap(tb.ends) > 1<<14 {
		return // do not pin buffers grown by one huge text
	}
	tokenPool.Put(tb)
}

func (tb *tokenList) len() int { return len(tb.ends) }

func (tb *tokenList) token(i int) []byte {
	start := 0
	if i > 0 {
		start = tb.ends[i-1]
	}
	return tb.buf[start:tb.ends[i]]
}

// strings converts the tokens with a single allocation for the bytes.
func (tb *tokenList) strings() []string {
	if len(tb.ends) == 0 {
		return []string{}
	}
	all := string(tb.buf)
	out := make([]string, len(tb.ends))
	start := 0
	for i, end := range tb.ends {
		out[i] = all[start:end]
		start = end
	}
	return out
}

// tokenizer state while scanning one text.
type tokenizer struct {
	tb    *tokenList
	stem  bool
	start int  // offset of the current token in tb.buf
	runes int  // runes in the current token
	first rune // first rune of the current token (for the length-1 rule)
	plain bool // current token is ASCII lower-case letters only
}

func analyzeInto(tb *tokenList, text string, stem bool) {
	tb.buf = tb.buf[:0]
	tb.ends = tb.ends[:0]
	t := tokenizer{tb: tb, stem: stem, plain: true}
	i := 0
	for i < len(text) {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z':
				t.addASCII(c, true)
			case 'A' <= c && c <= 'Z':
				t.addASCII(c+('a'-'A'), true)
			case '0' <= c && c <= '9':
				t.addASCII(c, false)
			case c == '\'':
				i = t.apostrophe(text, i+1)
				continue
			default:
				t.flush()
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || (t.runes > 0 && unicode.Is(unicode.M, r)):
			t.addRune(unicode.ToLower(r))
		case isApostrophe(r):
			i = t.apostrophe(text, i+size)
			continue
		default:
			t.flush()
		}
		i += size
	}
	t.flush()
}

func isApostrophe(r rune) bool {
	return r == '\'' || r == '\u2019' || r == '\u2018' || r == '\uFF07'
}

// isWordRune reports whether r continues a word (used for apostrophe look-ahead).
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r)
}

func (t *tokenizer) addASCII(c byte, letter bool) {
	if t.runes == 0 {
		t.first = rune(c)
	}
	t.tb.buf = append(t.tb.buf, c)
	t.runes++
	if !letter {
		t.plain = false
	}
}

func (t *tokenizer) addRune(r rune) {
	if r < utf8.RuneSelf { // e.g. 'İ' and the Kelvin sign lower-case to ASCII
		t.addASCII(byte(r), 'a' <= r && r <= 'z')
		return
	}
	if t.runes == 0 {
		t.first = r
	}
	t.tb.buf = utf8.AppendRune(t.tb.buf, r)
	t.runes++
	t.plain = false
}

// apostrophe handles an apostrophe whose encoding ends at text[next:] and
// returns the index to continue scanning from.
func (t *tokenizer) apostrophe(text string, next int) int {
	if t.runes == 0 {
		return next // leading apostrophe: a separator
	}
	if next >= len(text) {
		t.flush()
		return next
	}
	r1, s1 := utf8.DecodeRuneInString(text[next:])
	if r1 == 's' || r1 == 'S' {
		after := next + s1
		if after >= len(text) {
			t.flush()
			return after
		}
		if r2, _ := utf8.DecodeRuneInString(text[after:]); !isWordRune(r2) {
			t.flush() // possessive 's: drop it
			return after
		}
	}
	if isWordRune(r1) {
		return next // joiner: "don't" → "dont"
	}
	t.flush()
	return next
}

func (t *tokenizer) flush() {
	tb := t.tb
	if t.runes == 0 {
		return
	}
	tok := tb.buf[t.start:]
	keep := true
	switch {
	case t.runes == 1 && !keepSingle(t.first):
		keep = false
	case t.plain && isStopWord(tok):
		keep = false
	}
	if keep {
		if t.stem && t.plain {
			tok = stemASCII(tok)
			tb.buf = tb.buf[:t.start+len(tok)]
		}
		tb.ends = append(tb.ends, len(tb.buf))
		t.start = len(tb.buf)
	} else {
		tb.buf = tb.buf[:t.start]
	}
	t.runes = 0
	t.plain = true
}

func keepSingle(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsDigit(r) || unicode.In(r, unicode.Han, unicode.Hangul, unicode.Hiragana, unicode.Katakana)
}

// StopWords is the English stop list applied by Analyze (lower-case, ASCII).
// It is a conventional list of function words (articles, pronouns,
// auxiliaries, prepositions, conjunctions, a few adverbs) plus the
// apostrophe-joined forms of pronoun contractions ("im", "youre", ...).
// Negations are deliberately absent.
var StopWords = strings.Fields(`
a about above after again against all also am an and any are as at
be because been before being below between both but by
can could did do does doing down during
each few for from further
had has have having he her here hers herself him himself his how
i if in into is it its itself just
me might more most must my myself
of off on once only or other others ought our ours ourselves out over own
same shall she should so some such
than that the their theirs them themselves then there these they this those through to too
under until up upon us very
was we were what when where which while who whom whose why will with would
you your yours yourself yourselves
im ive youre youve youll youd hes shes theyre theyve theyll theyd weve
thats theres heres whats whos
may yet however thus therefore whether either neither else ever
`)

var stopSet = func() map[string]struct{} {
	m := make(map[string]struct{}, len(StopWords))
	for _, w := range StopWords {
		m[w] = struct{}{}
	}
	return m
}()

func isStopWord(tok []byte) bool {
	if len(tok) > 10 {
		return false
	}
	_, ok := stopSet[string(tok)]
	return ok
}

// ---- light stemmer --------------------------------------------------------

// maxStemLen: longer tokens are not English words (and the Porter measure is
// quadratic in runs of y), so they are left alone.
const maxStemLen = 32

// stemASCII is a small, deterministic suffix stripper for lower-case ASCII
// words, modelled on step 1 of the Porter (1980) algorithm plus Porter's
// final-e rule and a guarded "-ly" rule:
//
//	plurals:  sses→ss, ies→y (ie for short words: "ties"→"tie"), ss/us/is kept,
//	          otherwise a final s is dropped from words of 4+ letters
//	past/-ing: eed→ee when the stem has measure > 0; ied→y; ed/ing dropped when
//	          the stem (2+ letters) has a vowel, then at/bl/iz→+e, a double
//	          consonant (not l/s/z) is undoubled in stems of 4+ letters, and a
//	          short consonant-vowel-consonant stem gets its e back ("hoping"→"hope")
//	-ly:      dropped when 4+ letters remain and the remainder does not end in
//	          a, b, f, i, o, p or u ("quickly"→"quick", but "family", "butterfly",
//	          "supply" stay)
//	final e:  dropped when the measure is > 1, or 1 and the stem is not
//	          consonant-vowel-consonant ("created"/"create"→"creat", "like" stays)
//
// Words longer than maxStemLen are not touched. w is modified in
// place; the result is never longer than the input and
// never shorter than 2 bytes.
func stemASCII(w []byte) []byte {
	if len(w) < 3 || len(w) > maxStemLen {
		return w
	}
	w = stemPlural(w)
	w = stemPast(w)
	w = stemLy(w)
	w = stemFinalE(w)
	return w
}

func hasSuffix(w []byte, s string) bool {
	return len(w) >= len(s) && string(w[len(w)-len(s):]) == s
}

// isCons reports whether w[i] is a consonant in Porter's sense: y is a
// consonant at the start of a word or after a vowel.
func isCons(w []byte, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !isCons(w, i-1)
	}
	return true
}

func hasVowel(w []byte) bool {
	for i := range w {
		if !isCons(w, i) {
			return true
		}
	}
	return false
}

// measure is Porter's m: the number of vowel→consonant sequences.
func measure(w []byte) int {
	n, i, m := len(w), 0, 0
	for i < n && isCons(w, i) {
		i++
	}
	for i < n {
		for i < n && !isCons(w, i) {
			i++
		}
		if i >= n {
			break
		}
		for i < n && isCons(w, i) {
			i++
		}
		m++
	}
	return m
}

// cvc is Porter's *o: the word ends consonant-vowel-consonant and the last
// consonant is not w, x or y.
func cvc(w []byte) bool {
	n := len(w)
	if n < 3 || !isCons(w, n-1) || isCons(w, n-2) || !isCons(w, n-3) {
		return false
	}
	switch w[n-1] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

func stemPlural(w []byte) []byte {
	n := len(w)
	switch {
	case hasSuffix(w, "sses"):
		return w[:n-2]
	case hasSuffix(w, "ies"):
		if n-3 >= 2 {
			w[n-3] = 'y'
			return w[:n-2]
		}
		return w[:n-1]
	case hasSuffix(w, "ss"), hasSuffix(w, "us"), hasSuffix(w, "is"):
		return w
	case w[n-1] == 's' && n >= 4:
		return w[:n-1]
	}
	return w
}

func stemPast(w []byte) []byte {
	n := len(w)
	if hasSuffix(w, "eed") {
		if measure(w[:n-3]) > 0 {
			return w[:n-1]
		}
		return w
	}
	if hasSuffix(w, "ied") && n-3 >= 2 {
		w[n-3] = 'y'
		return w[:n-2]
	}
	var stem []byte
	switch {
	case hasSuffix(w, "ing"):
		stem = w[:n-3]
	case hasSuffix(w, "ed"):
		stem = w[:n-2]
	default:
		return w
	}
	if len(stem) < 2 || !hasVowel(stem) {
		return w
	}
	k := len(stem)
	switch {
	case hasSuffix(stem, "at"), hasSuffix(stem, "bl"), hasSuffix(stem, "iz"):
		w[k] = 'e' // the suffix was at least 2 bytes, so w[k] exists
		return w[:k+1]
	case k >= 4 && stem[k-1] == stem[k-2] && isCons(stem, k-1) &&
		stem[k-1] != 'l' && stem[k-1] != 's' && stem[k-1] != 'z':
		return stem[:k-1]
	case measure(stem) == 1 && cvc(stem):
		w[k] = 'e'
		return w[:k+1]
	}
	return stem
}

func stemLy(w []byte) []byte {
	n := len(w)
	if n < 6 || !hasSuffix(w, "ly") {
		return w
	}
	switch w[n-3] {
	case 'a', 'b', 'f', 'i', 'o', 'p', 'u':
		return w
	}
	return w[:n-2]
}

func stemFinalE(w []byte) []byte {
	n := len(w)
	if n < 3 || w[n-1] != 'e' {
		return w
	}
	stem := w[:n-1]
	if m := measure(stem); m > 1 || (m == 1 && !cvc(stem)) {
		return stem
	}
	return w
}
