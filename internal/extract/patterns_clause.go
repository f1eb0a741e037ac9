package extract

// The clause helpers the pattern rules share (adverbial prefixes, adverbs,
// the clause end, objects) and the preference and decision vocabulary.

var prepositions = map[string]bool{
	"for": true, "in": true, "at": true, "on": true, "after": true, "before": true,
	"since": true, "during": true, "with": true, "from": true, "when": true, "as": true,
	"within": true, "across": true, "outside": true, "inside": true, "by": true,
	"until": true, "once": true, "whenever": true,
}

// withPrefix appends the words before the subject to content when they
// are an adverbial ("For backend work, I prefer Go" → "... prefers Go for
// backend work") or the date; other prefixes are dropped.
func (c *clause) withPrefix(content string, subj int) string {
	t := c.toks
	isDate := c.hasDate && c.date.from == 0 && c.date.to == subj
	if !prepositions[t[0].w] && !isDate {
		return content
	}
	p := c.rw.rewrite(0, subj)
	if prepositions[t[0].w] {
		p = lowerFirst(p)
	}
	return content + " " + p
}

// adverbs skips adverbs from word i and returns the next word's index and
// the frequency adverb ("always", "never") seen, if any.
func (c *clause) adverbs(i int) (int, string) {
	freq := ""
	for i < len(c.toks) {
		w := c.toks[i].w
		switch {
		case w == "always" || w == "never":
			freq = w
		case keptAdverbs[w] || droppedAdverbs[w]:
		default:
			return i, freq
		}
		i++
	}
	return i, freq
}

// trailing words dropped from the end of a fact.
var fillers = map[string]bool{
	"too": true, "lol": true, "haha": true, "tbh": true, "tho": true, "though": true,
	"please": true, "thanks": true, "anyway": true, "anyways": true, "btw": true,
	"honestly": true, "anymore": true, "imo": true, "personally": true, "really": true,
	"then": true,
}

// end is the clause's end without trailing fillers ("too", "a lot",
// "as well", "any more").
func (c *clause) end() int {
	t := c.toks
	n := len(t)
	for n > 0 {
		switch {
		case fillers[t[n-1].w]:
			n--
		case n >= 2 && (hasWords(t, n-2, "a", "lot") || hasWords(t, n-2, "as", "well") ||
			hasWords(t, n-2, "any", "more") || hasWords(t, n-2, "thank", "you") || hasWords(t, n-2, "these", "days")):
			n -= 2
		default:
			return n
		}
	}
	return n
}

// negatedAnymore reports whether the clause ends in "anymore"/"any more".
func (c *clause) negatedAnymore() bool {
	for _, tk := range c.toks {
		if tk.w == "anymore" {
			return true
		}
	}
	for i := range c.toks {
		if hasWords(c.toks, i, "any", "more") {
			return true
		}
	}
	return false
}

// vagueObjects cannot be the object of a preference: "I like it".
var vagueObjects = map[string]bool{
	"it": true, "this": true, "that": true, "them": true, "these": true, "those": true,
	"one": true, "so": true, "how": true, "what": true, "when": true, "where": true,
	"you": true, "em": true, "which": true, "both": true, "either": true,
}

// object returns the content of a preference-like fact: subject, verb
// phrase and the rewritten words from obj to the end; nil when there is
// no object or a vague one.
func (c *clause) object(subject, verb string, obj int) (string, bool) {
	end := c.end()
	if obj >= end || vagueObjects[c.toks[obj].w] || c.toks[obj].sub {
		return "", false
	}
	if hasWords(c.toks, obj, "the", "idea") || hasWords(c.toks, obj, "the", "way") {
		return "", false
	}
	return subject + " " + verb + " " + c.rw.rewrite(obj, end), true
}

func (c *clause) pref(typ, subject, verb string, obj int, pattern string) *candidate {
	content, ok := c.object(subject, verb, obj)
	if !ok {
		return nil
	}
	return &candidate{typ: typ, pattern: pattern, content: content}
}

// preferenceVerbs can follow "I don't", "I no longer", "I used to".
var preferenceVerbs = map[string]bool{
	"like": true, "love": true, "enjoy": true, "use": true, "prefer": true, "hate": true,
	"want": true, "need": true, "trust": true,
}

// ingForms maps the -ing forms after "stopped"/"am" to base forms.
var ingForms = map[string]string{
	"using": "use", "liking": "like", "loving": "love", "enjoying": "enjoy", "preferring": "prefer",
}

// decisionVerbs can follow "we'll", "we are going to", "let's".
var decisionVerbs = map[string]bool{
	"use": true, "go": true, "switch": true, "move": true, "migrate": true, "adopt": true,
	"stick": true, "keep": true, "pick": true, "choose": true, "standardize": true,
	"standardise": true, "drop": true, "replace": true, "deprecate": true, "ship": true,
	"release": true, "launch": true, "deploy": true, "build": true, "rewrite": true,
	"implement": true, "host": true, "run": true,
}

// pastDecisions are past verbs that state a decision, with the particle
// they need ("" for none).
var pastDecisions = map[string]string{
	"chose": "", "picked": "", "went": "with", "settled": "on", "opted": "for",
	"switched": "to", "moved": "to", "migrated": "to", "agreed": "", "committed": "to",
	"standardized": "on", "standardised": "on", "chosen": "", "selected": "",
}

// decisionPhrase matches a decision verb phrase at word j: "will use",
// "are going with", "are going to use", "decided to", "chose"... It
// returns the content after the subject.
func (c *clause) decisionPhrase(j int) (string, string, bool) {
	t := c.toks
	end := c.end()
	at := func(k int) string {
		if k >= end {
			return ""
		}
		return c.rw.rewrite(k, end)
	}
	w := word(t, j)
	switch w {
	case "decided":
		switch word(t, j+1) {
		case "to", "on", "that", "against":
			if r := at(j + 1); r != "" {
				return "decided " + r, "decision: we decided", true
			}
		}
	case "have", "had":
		if word(t, j+1) == "decided" {
			return c.decisionPhrase(j + 1)
		}
		if p, ok := pastDecisions[word(t, j+1)]; ok && (p == "" || word(t, j+2) == p) {
			if r := at(j + 1); r != "" {
				return "has " + r, "decision: we chose", true
			}
		}
	case "will", "shall":
		k, _ := c.adverbs(j + 1)
		if decisionVerbs[word(t, k)] && (word(t, k) != "go" || word(t, k+1) == "with") {
			if r := at(k); r != "" && k+1 < end {
				return "decided to " + r, "decision: we'll use", true
			}
		}
	case "are", "am":
		k, _ := c.adverbs(j + 1)
		if word(t, k) == "going" {
			switch {
			case word(t, k+1) == "with":
				if r := at(k + 2); r != "" {
					return "decided to go with " + r, "decision: we are going with", true
				}
			case word(t, k+1) == "to" && decisionVerbs[word(t, k+2)] && (word(t, k+2) != "go" || word(t, k+3) == "with"):
				if r := at(k + 2); r != "" && k+3 < end {
					return "decided to " + r, "decision: we are going with", true
				}
			}
		}
		if s := word(t, k); s == "switching" || s == "moving" || s == "migrating" {
			if word(t, k+1) == "to" && k+2 < end {
				base := map[string]string{"switching": "switch", "moving": "move", "migrating": "migrate"}[s]
				return "decided to " + base + " " + at(k+1), "decision: we are going with", true
			}
		}
	default:
		if p, ok := pastDecisions[w]; ok && (p == "" || word(t, j+1) == p) {
			if w == "agreed" {
				if n := word(t, j+1); n != "to" && n != "on" && n != "that" {
					return "", "", false
				}
			}
			if j+1 < end {
				return at(j), "decision: we chose", true
			}
		}
	}
	return "", "", false
}
