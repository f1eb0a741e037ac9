package extract

// The clause filters of the pattern gatekeeper: the entities a clause
// names, the lead-ins skipped before its subject, and the tests that set
// aside questions, hypotheticals and reported speech.

import (
	"slices"
	"strings"
)

// entities lists the technologies (canonical names) and capitalised names
// mentioned by the clause, lower-case, sorted and unique.
func entities(toks []token) ([]string, bool) {
	var out []string
	hasTech := false
	for i := 0; i < len(toks); {
		if tc, n, ok := techAt(toks, i); ok {
			out = append(out, tc.name)
			hasTech = true
			i += n
			continue
		}
		t := toks[i]
		if !t.cap || t.first || t.sub || t.w == "i" || notNames[t.w] || notNames[strings.TrimSuffix(t.w, "s")] || len(t.w) < 2 {
			i++
			continue
		}
		j := i + 1
		for j < len(toks) && toks[j].cap && !toks[j].comma && !notNames[toks[j].w] && toks[j].w != "i" {
			if _, _, ok := techAt(toks, j); ok {
				break
			}
			j++
		}
		parts := make([]string, 0, j-i)
		for _, p := range toks[i:j] {
			parts = append(parts, p.w)
		}
		out = append(out, strings.Join(parts, " "))
		i = j
	}
	slices.Sort(out)
	return slices.Compact(out), hasTech
}

// notNames are capitalised words that do not name an entity.
var notNames = map[string]bool{
	"monday": true, "tuesday": true, "wednesday": true, "thursday": true, "friday": true,
	"saturday": true, "sunday": true, "january": true, "february": true, "march": true,
	"april": true, "may": true, "june": true, "july": true, "august": true, "september": true,
	"october": true, "november": true, "december": true, "ok": true, "okay": true, "api": true,
	"apis": true, "pr": true, "prs": true, "ci": true, "cd": true, "ui": true, "ux": true,
	"fyi": true, "asap": true, "eta": true, "tbh": true, "lol": true, "imo": true, "pm": true,
	"am": true, "utc": true, "tl;dr": true, "tldr": true, "btw": true, "the": true, "a": true,
	"please": true, "thanks": true, "never": true, "always": true, "also": true, "and": true,
	"but": true, "we": true, "my": true, "our": true, "you": true, "it": true,
}

// leadIns are discourse markers dropped from the start of a clause.
var leadIns = map[string]bool{
	"oh": true, "well": true, "honestly": true, "btw": true, "also": true, "actually": true,
	"so": true, "ok": true, "okay": true, "yeah": true, "yes": true, "yep": true, "fyi": true,
	"personally": true, "tbh": true, "anyway": true, "anyways": true, "hey": true, "hi": true,
	"hello": true, "and": true, "but": true, "ah": true, "hmm": true, "um": true, "alright": true,
	"right": true, "great": true, "cool": true, "thanks": true, "sure": true, "no": true,
	"nope": true, "plus": true, "now": true, "generally": true, "basically": true, "then": true,
	"finally": true, "ultimately": true, "important": true, "note": true, "reminder": true,
	"again": true, "seriously": true, "lol": true, "hmmm": true, "ps": true, "nb": true,
}

// leadInPhrases are multi-word discourse markers; the bool marks phrases
// that make a following instruction standing ("from now on").
var leadInPhrases = []struct {
	words   []string
	fromNow bool
}{
	{[]string{"by", "the", "way"}, false},
	{[]string{"to", "be", "honest"}, false},
	{[]string{"for", "the", "record"}, false},
	{[]string{"just", "so", "you", "know"}, false},
	{[]string{"just", "to", "be", "clear"}, false},
	{[]string{"in", "general"}, false},
	{[]string{"as", "a", "rule"}, false},
	{[]string{"thank", "you"}, false},
	{[]string{"from", "now", "on"}, true},
	{[]string{"going", "forward"}, true},
	{[]string{"in", "the", "future"}, true},
	{[]string{"in", "future"}, true},
}

// skipLeadIns drops discourse markers from the start of a clause.
func skipLeadIns(t []token) ([]token, bool) {
	fromNow := false
	for len(t) > 0 {
		if leadIns[t[0].w] && len(t) > 1 {
			// "no longer", "now that" and "so far" are not lead-ins.
			if t[0].w == "no" && t[1].w == "longer" || t[0].w == "right" && t[1].w == "now" {
				break
			}
			t = t[1:]
			continue
		}
		matched := false
		for _, p := range leadInPhrases {
			if hasWords(t, 0, p.words...) && len(t) > len(p.words) {
				t = t[len(p.words):]
				fromNow = fromNow || p.fromNow
				matched = true
				break
			}
		}
		if !matched {
			break
		}
	}
	// "..., from now on" at the end.
	for _, p := range leadInPhrases {
		if p.fromNow && len(t) > len(p.words) && hasWords(t, len(t)-len(p.words), p.words...) {
			fromNow = true
			t = t[:len(t)-len(p.words)]
			break
		}
	}
	for i := range t {
		t[i].first = i == 0 && t[i].first
	}
	return t, fromNow
}

// hasWords reports whether toks[i:] starts with words.
func hasWords(toks []token, i int, words ...string) bool {
	if i < 0 || i+len(words) > len(toks) {
		return false
	}
	for k, w := range words {
		if toks[i+k].w != w {
			return false
		}
	}
	return true
}

var auxiliaries = map[string]bool{
	"do": true, "does": true, "did": true, "can": true, "could": true, "would": true,
	"will": true, "should": true, "shall": true, "is": true, "are": true, "was": true,
	"were": true, "have": true, "has": true, "am": true, "may": true, "might": true,
}

var questionSubjects = map[string]bool{
	"you": true, "i": true, "we": true, "it": true, "there": true, "they": true, "he": true,
	"she": true, "this": true, "that": true, "these": true, "those": true, "anyone": true,
	"someone": true, "your": true, "my": true, "our": true,
}

var whWords = map[string]bool{
	"what": true, "which": true, "who": true, "why": true, "how": true, "where": true,
	"when": true, "whom": true, "whose": true,
}

// isQuestion recognises a question without a question mark: "do you
// like Go", "what do you think".
func isQuestion(t []token) bool {
	w0, w1 := word(t, 0), word(t, 1)
	return auxiliaries[w0] && questionSubjects[w1] || whWords[w0] && auxiliaries[w1]
}

var hypotheticalMarkers = map[string]bool{
	"if": true, "suppose": true, "supposing": true, "imagine": true, "assuming": true,
	"maybe": true, "perhaps": true, "might": true, "could": true, "wonder": true,
	"wondering": true, "whether": true, "hypothetically": true, "considering": true,
	"unless": true, "wish": true, "probably": true, "possibly": true,
}

// hypothetical recognises conditional and speculative clauses. "would" is
// speculative unless it says a preference ("I would prefer", "I'd
// rather"); "even if" is not a condition.
func hypothetical(t []token) bool {
	for i, tk := range t {
		switch tk.w {
		case "would":
			if n := word(t, i+1); n != "prefer" && n != "rather" && n != "really" {
				return true
			}
		case "thinking":
			if n := word(t, i+1); n == "about" || n == "of" {
				return true
			}
		case "not":
			if word(t, i+1) == "sure" {
				return true
			}
		case "if":
			if word(t, i-1) != "even" {
				return true
			}
		default:
			if hypotheticalMarkers[tk.w] {
				return true
			}
		}
	}
	return false
}

var reportingVerbs = map[string]bool{
	"says": true, "said": true, "told": true, "tells": true, "claims": true, "claimed": true,
	"thinks": true, "believes": true, "wants": true, "asked": true, "asks": true,
}

// reported recognises reported speech before a first-person subject ("my
// boss says I must ...").
func reported(prefix []token) bool {
	for _, t := range prefix {
		if reportingVerbs[t.w] {
			return true
		}
	}
	return false
}
