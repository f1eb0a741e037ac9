package extract

import (
	"slices"
	"strings"
)

// Claim is a statement parsed the way the reconciliation rules read it:
// memory maintenance groups confirming episodes by it and sweeps
// contradictions with it.
type Claim struct {
	Subject   string
	Predicate string // lemma: like, use, prefer, is, decide...; "" when none was found
	// Object is the object's content words, sorted and joined: equal for
	// "uses Vim for Go" and "uses vim for go".
	Object  string
	Negated bool // "not", "no longer"
	Antonym bool // "hates" for like
	// Norm is the whole statement normalised: equal for statements that
	// differ only in case, punctuation, technology spelling and adverbs.
	Norm string
}

// ParseClaim parses content.
func ParseClaim(content string) Claim {
	st := parseStatement(content)
	obj := contentWords(st.object)
	slices.Sort(obj)
	return Claim{Subject: st.subject, Predicate: st.lemma, Object: strings.Join(obj, " "),
		Negated: st.negated, Antonym: st.antonym, Norm: st.norm}
}

// Contradicts reports whether b says something about the subject and
// predicate of a that cannot also be true: a reversal of polarity about
// the same object, or a changed key term of the object (the rules'
// UPDATE and INVALIDATE).
func Contradicts(a, b string) bool {
	x, y := parseStatement(a), parseStatement(b)
	if x.lemma == "" || x.subject == "" || x.subject != y.subject || x.lemma != y.lemma {
		return false
	}
	if (x.negated != y.negated || x.antonym != y.antonym) && sameObject(x, y) {
		return true
	}
	return !x.negated && !y.negated && x.antonym == y.antonym && changedKeyTerm(x, y)
}
