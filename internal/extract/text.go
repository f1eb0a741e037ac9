package extract

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// token is one word of a sentence.
type token struct {
	w     string // lower-case form; contractions are split ("don't" → "do", "not")
	s, e  int    // byte span in the sentence text
	cap   bool   // written with an upper-case first letter
	first bool   // the first word of its sentence
	sub   bool   // second half of a split contraction ("n't", "'m"); shares no text of its own
	comma bool   // preceded by a comma, colon, semicolon or dash
}

// sentence is one sentence of a turn.
type sentence struct {
	text     string
	question bool // ended with "?"
}

// abbreviations whose trailing period does not end a sentence.
var abbreviations = map[string]bool{
	"e.g": true, "i.e": true, "etc": true, "vs": true, "mr": true, "mrs": true,
	"ms": true, "dr": true, "approx": true, "eg": true, "ie": true, "cf": true,
	"st": true, "no": true, "jan": true, "feb": true, "mar": true, "apr": true,
	"jun": true, "jul": true, "aug": true, "sep": true, "sept": true, "oct": true,
	"nov": true, "dec": true,
}

// splitSentences cuts text at ".", "!", "?", ";" and line breaks. A period
// inside a word ("node.js", "v1.2"), after an abbreviation or after a single
// letter does not end a sentence.
func splitSentences(text string) []sentence {
	var out []sentence
	start := 0
	emit := func(end int, q bool) {
		s := strings.TrimSpace(text[start:end])
		if s != "" {
			out = append(out, sentence{text: s, question: q})
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case '\n', ';':
			emit(i, false)
			start = i + 1
		case '!', '?':
			j := i
			q := false
			for j < len(text) && (text[j] == '!' || text[j] == '?') {
				q = q || text[j] == '?'
				j++
			}
			emit(i, q)
			start = j
			i = j - 1
		case '.':
			if i+1 < len(text) && !isSpace(text[i+1]) && text[i+1] != '"' && text[i+1] != '\'' && text[i+1] != ')' {
				continue // inside a word or a run of dots
			}
			// The word before the period.
			k := i
			for k > start && !isSpace(text[k-1]) {
				k--
			}
			w := strings.ToLower(strings.TrimRight(text[k:i], "."))
			if abbreviations[w] || len(w) == 1 && w[0] >= 'a' && w[0] <= 'z' {
				continue
			}
			emit(i, false)
			start = i + 1
		}
	}
	emit(len(text), false)
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// contractions splits a contracted word into a word and the word its
// ending stands for.
var contractions = map[string][2]string{
	"i'm": {"i", "am"}, "im": {"i", "am"}, "i've": {"i", "have"}, "i'd": {"i", "would"},
	"i'll": {"i", "will"}, "we're": {"we", "are"}, "we've": {"we", "have"},
	"we'll": {"we", "will"}, "we'd": {"we", "would"}, "you're": {"you", "are"},
	"you'll": {"you", "will"}, "you've": {"you", "have"}, "you'd": {"you", "would"},
	"it's": {"it", "is"}, "that's": {"that", "is"}, "there's": {"there", "is"},
	"they're": {"they", "are"}, "he's": {"he", "is"}, "she's": {"she", "is"},
	"don't": {"do", "not"}, "dont": {"do", "not"}, "doesn't": {"does", "not"},
	"didn't": {"did", "not"}, "can't": {"can", "not"}, "cant": {"can", "not"},
	"cannot": {"can", "not"}, "won't": {"will", "not"}, "isn't": {"is", "not"},
	"aren't": {"are", "not"}, "wasn't": {"was", "not"}, "weren't": {"were", "not"},
	"shouldn't": {"should", "not"}, "mustn't": {"must", "not"}, "haven't": {"have", "not"},
	"hasn't": {"has", "not"}, "wouldn't": {"would", "not"}, "couldn't": {"could", "not"},
	"let's": {"let's", ""}, "lets": {"lets", ""},
}

// tokenize splits a sentence into words. A word is a run of letters and
// digits, joined by inner ".", "-", "_", "'", "/", "+" or "#" ("node.js",
// "2024-03-03", "don't"); "c++", "c#", "f#" and ".net" are words too.
func tokenize(s string) []token {
	toks := make([]token, 0, 24)
	comma := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		startsNet := r == '.' && i+4 <= len(s) && strings.EqualFold(s[i:i+4], ".net") && (i+4 == len(s) || !isWordByte(s[i+4]))
		if !startsNet && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			if r == ',' || r == ':' || r == ';' || r == '-' || r == '–' || r == '—' || r == '(' {
				comma = true
			}
			i += size
			continue
		}
		start := i
		if startsNet {
			i += 4
		} else {
			i += size
		}
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				i += size
				continue
			}
			if r == '.' || r == '-' || r == '_' || r == '\'' || r == '’' || r == '/' || r == '+' || r == '#' {
				if j := i + size; j < len(s) {
					r2, _ := utf8.DecodeRuneInString(s[j:])
					if unicode.IsLetter(r2) || unicode.IsDigit(r2) {
						i = j
						continue
					}
				}
			}
			break
		}
		w := lower(s[start:i])
		if w == "c" || w == "f" {
			if i < len(s) && s[i] == '#' {
				i++
				w += "#"
			} else if w == "c" && strings.HasPrefix(s[i:], "++") {
				i += 2
				w = "c++"
			}
		}
		first, _ := utf8.DecodeRuneInString(s[start:])
		t := token{w: w, s: start, e: i, cap: unicode.IsUpper(first), first: len(toks) == 0, comma: comma}
		comma = false
		if c, ok := contractions[w]; ok {
			if c[1] == "" {
				t.w = c[0]
				toks = append(toks, t)
				continue
			}
			t.w = c[0]
			t2 := token{w: c[1], s: i, e: i, sub: true}
			t.e = i
			toks = append(toks, t, t2)
			continue
		}
		toks = append(toks, t)
	}
	return toks
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// lower lower-cases s and turns "’" into "'", without allocating when s is
// already lower-case ASCII.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ReplaceAll(strings.ToLower(s), "’", "'")
		}
	}
	return s
}

// clauseStarters are the words that open a clause of their own after
// "and", "but" or a comma, once the clause before has its own subject.
var clauseStarters = map[string]bool{"i": true, "we": true, "let's": true, "lets": true}

var conjunctions = map[string]bool{"and": true, "but": true, "so": true, "while": true, "whereas": true, "though": true, "although": true, "plus": true, "also": true}

// clauses cuts a sentence's words into clauses: "I love Go but I hate
// Java" is two clauses. A cut happens before a first-person subject that
// follows a conjunction or a comma, when the words before already have a
// first-person subject; so "For backend work, I prefer Go" stays whole.
func clauses(toks []token) [][]token {
	var out [][]token
	start := 0
	hasSubject := false
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if clauseStarters[t.w] {
			if hasSubject && i > start {
				end := i
				if conjunctions[toks[i-1].w] {
					end = i - 1
				}
				if end < i || t.comma {
					if end > start {
						out = append(out, toks[start:end])
					}
					start = i
				}
			}
			hasSubject = true
		}
	}
	if start < len(toks) {
		out = append(out, toks[start:])
	}
	return out
}

// Replacements of pronouns when a statement is retold in the third
// person; "%s" is the speaker.
var pronouns = map[string]string{
	"i": "%s", "me": "%s", "myself": "%s", "my": "%s's", "mine": "%s's",
	"we": "%s's team", "us": "%s's team", "our": "%s's", "ours": "%s's",
	"ourselves": "%s's team", "you": "the assistant", "your": "the assistant's",
	"yours": "the assistant's", "yourself": "the assistant",
}

// subjects are the pronouns after which the verb is conjugated.
var subjects = map[string]bool{"i": true, "we": true, "you": true}

// keptAdverbs may stand between a subject and its verb.
var keptAdverbs = map[string]bool{
	"usually": true, "mostly": true, "generally": true, "mainly": true, "primarily": true,
	"typically": true, "normally": true, "currently": true, "now": true, "always": true,
	"never": true, "often": true, "sometimes": true, "rarely": true, "still": true,
	"only": true, "strongly": true, "already": true,
}

// droppedAdverbs are intensifiers left out of rewritten statements.
var droppedAdverbs = map[string]bool{
	"really": true, "just": true, "honestly": true, "actually": true, "definitely": true,
	"absolutely": true, "totally": true, "personally": true, "kinda": true, "truly": true,
	"certainly": true, "seriously": true, "genuinely": true, "so": true, "def": true,
	"literally": true, "quite": true, "much": true, "also": true, "all": true,
	"too": true,
}

// rewriter retells part of a clause in the third person.
type rewriter struct {
	text    string  // sentence text
	toks    []token // clause words
	speaker string
	// dateFrom..dateTo (word indexes) is replaced by dateText.
	dateFrom, dateTo int
	dateText         string
}

// rewrite retells words [from, to) of the clause: pronouns become the
// speaker (or "the assistant"), the verb after a replaced subject is
// conjugated, contractions are spelled out, intensifiers are dropped and a
// relative date becomes an absolute one.
func (rw *rewriter) rewrite(from, to int) string {
	var b strings.Builder
	conj := false
	for i := from; i < to; i++ {
		t := rw.toks[i]
		if rw.dateText != "" && i >= rw.dateFrom && i < rw.dateTo {
			if i == rw.dateFrom {
				space(&b, i > from && (rw.toks[i-1].e < t.s || t.sub))
				b.WriteString(rw.dateText)
			}
			continue
		}
		if droppedAdverbs[t.w] && i+1 < to && !rw.toks[i+1].sub && conj {
			continue
		}
		if i > from {
			if t.sub {
				b.WriteByte(' ')
			} else {
				gap := rw.text[rw.toks[i-1].e:t.s]
				if rw.dateText != "" && i-1 >= rw.dateFrom && i-1 < rw.dateTo {
					gap = " "
				}
				if strings.TrimSpace(gap) == "" && b.Len() > 0 {
					gap = " "
				}
				b.WriteString(gap)
			}
		}
		w := t.w
		if r, ok := pronouns[w]; ok && !t.sub {
			b.WriteString(strings.ReplaceAll(r, "%s", rw.speaker))
			conj = subjects[w]
			continue
		}
		switch {
		case conj && keptAdverbs[w]:
			b.WriteString(rw.orig(t))
			continue
		case conj:
			w = thirdPerson(w)
			conj = false
			b.WriteString(w)
			continue
		case t.sub:
			b.WriteString(w)
			continue
		}
		b.WriteString(rw.orig(t))
	}
	return strings.TrimSpace(b.String())
}

func space(b *strings.Builder, ok bool) {
	if ok && b.Len() > 0 {
		b.WriteByte(' ')
	}
}

// orig is the word as written, with a split contraction spelled in full
// by its parts.
func (rw *rewriter) orig(t token) string {
	o := strings.ReplaceAll(rw.text[t.s:t.e], "’", "'")
	if c, ok := contractions[lower(o)]; ok && c[1] != "" {
		if strings.HasPrefix(lower(o), c[0]) {
			return o[:len(c[0])]
		}
		return c[0]
	}
	return o
}

// irregular third-person forms; words that do not change are mapped to
// themselves.
var irregular = map[string]string{
	"am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "were": "was",
	"was": "was", "will": "will", "would": "would", "can": "can", "could": "could",
	"should": "should", "must": "must", "might": "might", "may": "may", "shall": "shall",
	"did": "did", "had": "had", "used": "used", "went": "went", "ran": "ran", "wrote": "wrote",
	"built": "built", "chose": "chose", "made": "made", "took": "took", "got": "got",
	"bought": "bought", "thought": "thought", "said": "said", "told": "told", "left": "left",
	"began": "began", "came": "came", "saw": "saw", "knew": "knew", "found": "found",
	"gave": "gave", "put": "put", "set": "set", "sent": "sent", "spent": "spent",
	"kept": "kept", "felt": "felt", "held": "held", "brought": "brought", "led": "led",
	"met": "met", "paid": "paid", "lost": "lost", "won": "won", "sold": "sold",
	"need": "needs", "not": "not", "no": "no",
}

// thirdPerson conjugates a base-form verb for a singular third-person
// subject: "prefer" → "prefers", "try" → "tries", "watch" → "watches".
// Past forms ("-ed") and modals are returned as they are.
func thirdPerson(w string) string {
	if f, ok := irregular[w]; ok {
		return f
	}
	n := len(w)
	switch {
	case n < 2 || !isASCIIWord(w):
		return w
	case strings.HasSuffix(w, "ed") && n > 3:
		return w
	case strings.HasSuffix(w, "y") && !strings.ContainsRune("aeiou", rune(w[n-2])):
		return w[:n-1] + "ies"
	case strings.HasSuffix(w, "s") || strings.HasSuffix(w, "x") || strings.HasSuffix(w, "z") ||
		strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "sh") || strings.HasSuffix(w, "o"):
		return w + "es"
	}
	return w + "s"
}

func isASCIIWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}
