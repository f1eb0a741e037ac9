package extract

import (
	"slices"
	"strings"

	"github.com/memgate/memgate/internal/gate"
)

// ReconcileRules is the deterministic reconciliation used when no model is
// configured or the model fails. existing is taken in the caller's order
// (most similar first); the first fact a rule applies to is the target.
// The rules, in order:
//
//  1. NOOP: the normalised content equals an existing fact's, or has the
//     same type and a word-set Jaccard similarity ≥ 0.85 with no differing
//     entity, no change of polarity and nothing gate.MeaningDiffers sees
//     (negation, a number, a date or time, a name).
//  2. INVALIDATE: the candidate negates an existing positive fact of the
//     same subject and predicate about the same object ("u1 no longer uses
//     redis", "u1 does not use Redis" against "u1 uses Redis for caching").
//  3. UPDATE: same type, subject and predicate, and either a change of
//     polarity about the same object ("u1 hates Java" against "u1 likes
//     Java"; "u1 uses Redis" against "u1 no longer uses Redis"), or a
//     differing key term: different objects that share context words
//     ("PostgreSQL for backend work" against "MySQL for backend work"), or
//     that name different technologies of one category (Vim against
//     Emacs). Two negative facts ("no longer uses X", "no longer uses Y")
//     never update each other.
//  4. ADD otherwise.
func ReconcileRules(candidate Fact, existing []Existing) Reconciliation {
	c := parseStatement(candidate.Content)
	parsed := make([]statement, len(existing))
	for i, e := range existing {
		parsed[i] = parseStatement(e.Content)
	}
	for i, e := range existing {
		if c.norm == parsed[i].norm && c.norm != "" {
			return Reconciliation{Action: ActionNoop, TargetID: e.ID, Reason: "repeats an existing fact"}
		}
	}
	for i, e := range existing {
		p := parsed[i]
		if e.Type == candidate.Type && c.negated == p.negated && c.antonym == p.antonym &&
			jaccard(c.words, p.words) >= 0.85 && !differingEntity(c, p) && !gate.MeaningDiffers(candidate.Content, e.Content) {
			return Reconciliation{Action: ActionNoop, TargetID: e.ID, Reason: "repeats an existing fact in other words"}
		}
	}
	if c.negated && c.lemma != "" {
		for i, e := range existing {
			p := parsed[i]
			if p.subject == c.subject && p.lemma == c.lemma && !p.negated && p.antonym == c.antonym && sameObject(c, p) {
				return Reconciliation{Action: ActionInvalidate, TargetID: e.ID, Reason: "says the existing fact is no longer true"}
			}
		}
	}
	if c.lemma != "" {
		for i, e := range existing {
			p := parsed[i]
			if e.Type != candidate.Type || p.subject != c.subject || p.lemma != c.lemma {
				continue
			}
			if (p.negated != c.negated || p.antonym != c.antonym) && sameObject(c, p) {
				return Reconciliation{Action: ActionUpdate, TargetID: e.ID, Reason: "reverses the existing fact"}
			}
			if !p.negated && !c.negated && p.antonym == c.antonym && changedKeyTerm(c, p) {
				return Reconciliation{Action: ActionUpdate, TargetID: e.ID, Reason: "changes the value of the existing fact"}
			}
		}
	}
	return Reconciliation{Action: ActionAdd, Reason: "new fact"}
}

// statement is a fact's content parsed into subject, predicate and object.
type statement struct {
	norm    string   // normalised words joined by spaces
	words   []string // normalised words, technologies under canonical names
	subject string
	lemma   string // predicate: "like", "use", "prefer", "is", "decide", ...; "" if none found
	negated bool   // "not", "no longer", "stopped"
	antonym bool   // "hates", "dislikes", "can't stand"
	object  []string
	techs   []tech // technologies in the object
}

// predicates maps predicate words to a lemma; the bool marks antonyms.
var predicates = map[string]struct {
	lemma   string
	antonym bool
}{
	"prefers": {"prefer", false}, "prefer": {"prefer", false},
	"likes": {"like", false}, "like": {"like", false}, "loves": {"like", false},
	"love": {"like", false}, "enjoys": {"like", false}, "enjoy": {"like", false},
	"adores": {"like", false}, "hates": {"like", true}, "hate": {"like", true},
	"dislikes": {"like", true}, "dislike": {"like", true}, "detests": {"like", true},
	"loathes": {"like", true}, "stand": {"like", true},
	"uses": {"use", false}, "use": {"use", false}, "using": {"use", false},
	"runs": {"use", false}, "run": {"use", false},
	"wants": {"want", false}, "want": {"want", false},
	"decided": {"decide", false}, "is": {"is", false}, "are": {"is", false},
}

// negators before a predicate negate it.
var negators = map[string]bool{"not": true, "no": true, "longer": true, "stopped": true, "never": true, "quit": true}

// fillerWords are left out of the similarity and object comparisons.
var fillerWords = map[string]bool{
	"the": true, "a": true, "an": true, "to": true, "of": true, "and": true, "for": true,
	"in": true, "on": true, "with": true, "at": true, "by": true, "does": true, "do": true,
	"really": true, "also": true, "still": true, "just": true, "can": true,
}

func parseStatement(content string) statement {
	toks := tokenize(content)
	var st statement
	for i := 0; i < len(toks); {
		if tc, n, ok := techAt(toks, i); ok {
			st.words = append(st.words, tc.name)
			i += n
			continue
		}
		if !droppedAdverbs[toks[i].w] {
			st.words = append(st.words, toks[i].w)
		}
		i++
	}
	st.norm = strings.Join(st.words, " ")
	w := st.words
	// "<subject> ... favourite X is Y": the subject is everything up to "is".
	for k, x := range w {
		if (x == "favourite" || x == "favorite") && k < len(w)-1 {
			if is := slices.Index(w[k:], "is"); is > 0 {
				st.subject, st.lemma, st.object = strings.Join(w[:k+is], " "), "is", w[k+is+1:]
				st.techs = techsOf(st.object)
				return st
			}
		}
	}
	p := -1
	for k := 1; k < min(len(w), 8); k++ {
		if _, ok := predicates[w[k]]; ok {
			p = k
			break
		}
	}
	if p < 0 {
		st.subject = strings.Join(w[:min(1, len(w))], " ")
		return st
	}
	pr := predicates[w[p]]
	st.lemma, st.antonym = pr.lemma, pr.antonym
	s := 0
	for s < p && !negators[w[s]] && w[s] != "does" && w[s] != "do" && w[s] != "can" && !keptAdverbs[w[s]] {
		s++
	}
	st.subject = strings.Join(w[:s], " ")
	for _, x := range w[s:p] {
		if negators[x] && !(w[p] == "stand" && x == "not") {
			st.negated = true
		}
	}
	if w[p] == "stand" && !slices.Contains(w[s:p], "not") {
		st.lemma = "" // "can stand" is no predicate of ours
	}
	for _, x := range w[p+1:] {
		if x == "anymore" {
			st.negated = true
			continue
		}
		st.object = append(st.object, x)
	}
	st.techs = techsOf(st.object)
	return st
}

func techsOf(words []string) []tech {
	var out []tech
	for _, x := range words {
		if tc, ok := techTable[x]; ok && tc.name == x {
			out = append(out, tc)
		}
	}
	return out
}

func contentWords(ws []string) []string {
	var out []string
	for _, x := range ws {
		if !fillerWords[x] && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func jaccard(a, b []string) float64 {
	a, b = contentWords(a), contentWords(b)
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for _, x := range a {
		if slices.Contains(b, x) {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// differingEntity reports whether a technology appears in one statement
// and not the other.
func differingEntity(a, b statement) bool {
	for _, x := range a.words {
		if _, ok := techTable[x]; ok && !slices.Contains(b.words, x) {
			return true
		}
	}
	for _, x := range b.words {
		if _, ok := techTable[x]; ok && !slices.Contains(a.words, x) {
			return true
		}
	}
	return false
}

// sameObject: the objects are about the same thing — they share a
// technology, or one's content words contain the other's.
func sameObject(a, b statement) bool {
	for _, t := range a.techs {
		if slices.ContainsFunc(b.techs, func(u tech) bool { return u.name == t.name }) {
			return true
		}
	}
	oa, ob := contentWords(a.object), contentWords(b.object)
	if len(oa) == 0 || len(ob) == 0 {
		return false
	}
	return subset(oa, ob) || subset(ob, oa)
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// changedKeyTerm: the objects differ in a few key words but share their
// context ("PostgreSQL for backend work" / "MySQL for backend work"), or
// name different technologies of one category (Vim / Emacs).
func changedKeyTerm(a, b statement) bool {
	oa, ob := contentWords(a.object), contentWords(b.object)
	var onlyA, onlyB, shared int
	for _, x := range oa {
		if slices.Contains(ob, x) {
			shared++
		} else {
			onlyA++
		}
	}
	onlyB = len(ob) - shared
	if onlyA == 0 || onlyB == 0 {
		return false
	}
	if shared > 0 && onlyA <= 3 && onlyB <= 3 {
		return true
	}
	for _, t := range a.techs {
		for _, u := range b.techs {
			if t.cat == u.cat && t.name != u.name && !slices.ContainsFunc(a.techs, func(v tech) bool { return v.name == u.name }) {
				return true
			}
		}
	}
	return false
}
