package gate

import (
	"strings"
	"unicode"
)

// MeaningDiffers reports whether two texts that share almost all their
// words still say different things: they differ in negation (a
// different number of negating words), in a number, date or time, or in a
// named entity (a capitalised word of one text whose lowercase form the
// other text lacks). Such a pair is never a near-duplicate: merging it
// would keep one fact and drop its opposite or its new value (see
// docs/duplicates.md). The rule errs towards "differs": a false
// "differs" stores two records, a false "same" loses one.
func MeaningDiffers(a, b string) bool {
	wa, wb := meaningWords(a), meaningWords(b)
	if negations(wa) != negations(wb) {
		return true
	}
	la, lb := lowerSet(wa), lowerSet(wb)
	return keyWordMissing(wa, lb) || keyWordMissing(wb, la)
}

// NegationDiffers reports whether a and b differ in negation: one says
// "not" (or "never", "don't", ...) where the other does not.
func NegationDiffers(a, b string) bool {
	return negations(meaningWords(a)) != negations(meaningWords(b))
}

// meaningWords splits text into words of letters, digits and the
// apostrophes of contractions ("don't", "can’t").
func meaningWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	})
}

func lowerSet(ws []string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[strings.ToLower(w)] = true
	}
	return m
}

// negations counts the negating words of a text.
func negations(ws []string) int {
	n := 0
	for _, w := range ws {
		l := strings.ToLower(strings.ReplaceAll(w, "’", "'"))
		if negators[l] || strings.HasSuffix(l, "n't") {
			n++
		}
	}
	return n
}

// keyWordMissing reports whether a word of ws that carries a number, a
// date or time, or a name is absent (case-insensitively) from other.
func keyWordMissing(ws []string, other map[string]bool) bool {
	for _, w := range ws {
		l := strings.ToLower(w)
		if other[l] {
			continue
		}
		if calendarWords[l] || numberWords[l] || strings.ContainsFunc(w, unicode.IsDigit) || strings.ContainsFunc(w, unicode.IsUpper) {
			return true
		}
	}
	return false
}

var negators = setOf("not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor",
	"cannot", "without", "hardly", "barely", "nope")

var numberWords = setOf("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
	"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
	"twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand",
	"million", "billion", "dozen", "half", "quarter", "once", "twice", "first", "second", "third", "fourth",
	"fifth", "last", "next", "all", "both", "some", "many", "few", "more", "less", "most", "least")

var calendarWords = setOf("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
	"january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
	"november", "december", "today", "tomorrow", "yesterday", "tonight", "morning", "afternoon", "evening",
	"night", "noon", "midnight", "am", "pm", "week", "weekend", "month", "year", "daily", "weekly",
	"monthly", "yearly", "before", "after", "early", "late", "earlier", "later")

func setOf(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}
