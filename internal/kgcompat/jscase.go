package kgcompat

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// jsLower lowercases s as JavaScript's String.prototype.toLowerCase does,
// which the reference memory server's search uses: Unicode's default full
// case mapping, not Go's rune-by-rune simple mapping. The two differ where
// SpecialCasing.txt has an unconditional or context-only rule:
//
//   - U+0130 (İ) lowercases to "i̇" (i and U+0307 COMBINING DOT ABOVE), so
//     "istanbul" does not match "İstanbul";
//   - U+03A3 (Σ) lowercases to final sigma (ς) at the end of a word (the
//     Final_Sigma condition), so "ΠΈΤΡΟΣ" matches "Πέτρος".
func jsLower(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == 'İ' || r == 'Σ' }) {
		return strings.ToLower(s)
	}
	var b strings.Builder
	for i, r := range s {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if finalSigma(s, i) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma is Unicode's Final_Sigma condition for the sigma at byte i:
// a cased letter comes before it (case-ignorable characters skipped) and
// none comes after it (likewise).
func finalSigma(s string, i int) bool {
	before := false
	for j := i; j > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		j -= n
		if caseIgnorable(r) {
			continue
		}
		before = cased(r)
		break
	}
	if !before {
		return false
	}
	for j := i + len("Σ"); j < len(s); {
		r, n := utf8.DecodeRuneInString(s[j:])
		j += n
		if caseIgnorable(r) {
			continue
		}
		return !cased(r)
	}
	return true
}

// cased is Unicode's Cased property.
func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.In(r, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// caseIgnorable is Unicode's Case_Ignorable property: marks, format
// characters, modifiers, and the word-internal punctuation of Word_Break
// MidLetter, MidNumLet and Single_Quote.
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '·', '\u0387', '\u055F', '\u05F4', '\u2018', '\u2019', '\u2024', '\u2027', '\uFE13', '\uFE52', '\uFE55', '\uFF07', '\uFF0E', '\uFF1A':
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
