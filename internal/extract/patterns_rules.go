package extract

// The pattern rules: first-person, plural, "let's", addressed, favourite,
// imperative, third-person, bare-decision and statement matchers, with
// their vocabularies.

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// firstPerson matches after "I" at word a.
func (c *clause) firstPerson(a int) *candidate {
	t := c.toks
	s := c.speaker
	j, freq := c.adverbs(a + 1)
	v := word(t, j)
	end := c.end()
	if freq != "" && j < end && v != "been" && v != "had" {
		// "I always use tabs", "I never deploy on Fridays".
		return &candidate{typ: TypeBelief, pattern: "rule: " + freq, content: c.rw.rewrite(a, end), rule: true}
	}
	if d, pattern, ok := c.decisionPhrase(j); ok {
		return &candidate{typ: TypeDecision, pattern: strings.Replace(pattern, "we", "I", 1), content: s + " " + d}
	}
	switch v {
	case "prefer":
		return c.prefFrom(a, j+1, "preference: I prefer")
	case "would":
		return c.firstPersonWould(j)
	case "like", "love", "enjoy", "adore":
		if word(t, j+1) == "to" && (word(t, j+2) == "know" || word(t, j+2) == "ask") {
			return nil
		}
		name := "like"
		if v == "love" || v == "adore" {
			name = "love"
		}
		return c.prefFrom(a, j+1, "preference: I "+name)
	case "use":
		return c.prefFrom(a, j+1, "preference: I use")
	case "hate", "dislike", "detest", "loathe":
		return c.prefFrom(a, j+1, "preference: I hate")
	case "can":
		if hasWords(t, j+1, "not", "stand") {
			return c.pref(TypePreference, s, "can't stand", j+3, "preference: I hate")
		}
	case "do", "no", "stopped", "quit", "used":
		return c.firstPersonNegated(v, j)
	case "am":
		return c.firstPersonAm(j)
	case "have":
		if hasWords(t, j+1, "been", "using") {
			return c.pref(TypePreference, s, "uses", j+3, "preference: I use")
		}
	case "must":
		k := j + 1
		if word(t, k) == "not" {
			k++
		}
		switch word(t, k) {
		case "say", "admit", "confess", "be", "have", "":
			return nil
		}
		return &candidate{typ: TypeBelief, pattern: "rule: must", content: c.rw.rewrite(a, end), rule: true}
	}
	return nil
}

// firstPersonWould: "I would prefer X", "I would rather (not) X"; j is
// the word after the subject's adverbs.
func (c *clause) firstPersonWould(j int) *candidate {
	t, s := c.toks, c.speaker
	k, _ := c.adverbs(j + 1)
	switch word(t, k) {
	case "prefer":
		return c.pref(TypePreference, s, "prefers", k+1, "preference: I prefer")
	case "rather":
		if word(t, k+1) == "not" {
			return c.pref(TypePreference, s, "prefers not to", k+2, "preference: I prefer")
		}
		return c.pref(TypePreference, s, "prefers to", k+1, "preference: I prefer")
	}
	return nil
}

// firstPersonNegated: the negated and past preferences, "I do not like X",
// "I no longer use X", "I stopped using X", "I used to like X" (and the
// affirmative "I do like X"); v is the verb at j.
func (c *clause) firstPersonNegated(v string, j int) *candidate {
	t, s := c.toks, c.speaker
	switch v {
	case "do":
		k, _ := c.adverbs(j + 1)
		if word(t, k) == "not" {
			k2, _ := c.adverbs(k + 1)
			vb := word(t, k2)
			if !preferenceVerbs[vb] {
				return nil
			}
			if c.negatedAnymore() {
				return c.pref(TypePreference, s, "no longer "+thirdPerson(vb), k2+1, "preference: no longer")
			}
			return c.pref(TypePreference, s, "does not "+vb, k2+1, "preference: I don't like")
		}
		if preferenceVerbs[word(t, k)] {
			return c.pref(TypePreference, s, thirdPerson(word(t, k)), k+1, "preference: I "+word(t, k))
		}
	case "no":
		if word(t, j+1) == "longer" && preferenceVerbs[word(t, j+2)] {
			return c.pref(TypePreference, s, "no longer "+thirdPerson(word(t, j+2)), j+3, "preference: no longer")
		}
	case "stopped", "quit":
		if base, ok := ingForms[word(t, j+1)]; ok {
			return c.pref(TypePreference, s, "no longer "+thirdPerson(base), j+2, "preference: no longer")
		}
	case "used":
		if word(t, j+1) == "to" && preferenceVerbs[word(t, j+2)] {
			cand := c.pref(TypeBelief, s, "used to "+word(t, j+2), j+3, "preference: I used to")
			if cand != nil {
				cand.past = true
			}
			return cand
		}
	}
	return nil
}

// firstPersonAm: "I am using X", "I am (not / no longer) a fan of X".
func (c *clause) firstPersonAm(j int) *candidate {
	t, s := c.toks, c.speaker
	k, _ := c.adverbs(j + 1)
	switch w := word(t, k); {
	case w == "using":
		return c.pref(TypePreference, s, "uses", k+1, "preference: I use")
	case w == "not" || w == "no":
		k2 := k + 1
		if w == "no" && word(t, k2) == "longer" {
			k2++
		} else if w == "no" {
			return nil
		}
		if word(t, k2) == "using" && (w == "no" || c.negatedAnymore()) {
			return c.pref(TypePreference, s, "no longer uses", k2+1, "preference: no longer")
		}
		if f := fanOf(t, k2); f > 0 {
			return c.pref(TypePreference, s, "does not like", f, "preference: I don't like")
		}
	default:
		if f := fanOf(t, k); f > 0 {
			return c.pref(TypePreference, s, "likes", f, "preference: I like")
		}
	}
	return nil
}

// prefFrom is a preference retold by rewriting the clause from the
// subject at a: "I really prefer X" → "u1 prefers X".
func (c *clause) prefFrom(a, obj int, pattern string) *candidate {
	if _, ok := c.object("", "", obj); !ok {
		return nil
	}
	return &candidate{typ: TypePreference, pattern: pattern, content: c.rw.rewrite(a, c.end())}
}

// fanOf matches "a (big) fan of" at word i and returns the object's index.
func fanOf(t []token, i int) int {
	for k := i; k < min(len(t), i+4); k++ {
		if t[k].w == "fan" || t[k].w == "fans" {
			if word(t, k+1) == "of" {
				return k + 2
			}
			return 0
		}
	}
	return 0
}

// plural matches after "we" at word a.
func (c *clause) plural(a int) *candidate {
	t := c.toks
	team := c.speaker + "'s team"
	j, freq := c.adverbs(a + 1)
	v := word(t, j)
	end := c.end()
	if freq != "" && j < end {
		return &candidate{typ: TypeBelief, pattern: "rule: " + freq, content: c.rw.rewrite(a, end), rule: true}
	}
	if d, pattern, ok := c.decisionPhrase(j); ok {
		return &candidate{typ: TypeDecision, pattern: pattern, content: team + " " + d}
	}
	switch v {
	case "must":
		if word(t, j+1) == "be" {
			return nil
		}
		return &candidate{typ: TypeBelief, pattern: "rule: must", content: c.rw.rewrite(a, end), rule: true}
	case "should", "have", "need":
		k := j + 1
		if v != "should" {
			if word(t, k) != "to" {
				break
			}
			k++
		}
		if f := word(t, k); f == "always" || f == "never" {
			return &candidate{typ: TypeBelief, pattern: "rule: " + f, content: c.rw.rewrite(a, end), rule: true}
		}
	case "prefer", "like", "love", "hate":
		return c.prefFrom(a, j+1, "preference: we "+v)
	case "use", "run":
		if cand := c.prefFrom(a, j+1, "technology"); cand != nil {
			cand.typ = TypeBelief
			return cand
		}
	case "are":
		k, _ := c.adverbs(j + 1)
		switch word(t, k) {
		case "using":
			return c.pref(TypeBelief, team, "uses", k+1, "technology")
		case "running":
			return c.pref(TypeBelief, team, "runs", k+1, "technology")
		}
	case "do":
		if word(t, j+1) == "not" && (word(t, j+2) == "use" || word(t, j+2) == "like") {
			if c.negatedAnymore() {
				return c.pref(TypeBelief, team, "no longer "+thirdPerson(word(t, j+2)), j+3, "technology")
			}
			return c.pref(TypeBelief, team, "does not "+word(t, j+2), j+3, "technology")
		}
	case "no":
		if word(t, j+1) == "longer" && preferenceVerbs[word(t, j+2)] {
			return c.pref(TypeBelief, team, "no longer "+thirdPerson(word(t, j+2)), j+3, "technology")
		}
	}
	return nil
}

// lets matches "let's go with X", "let's use X", "let's stick with X".
func (c *clause) lets(a int) *candidate {
	t := c.toks
	k, _ := c.adverbs(a + 1)
	v := word(t, k)
	if !decisionVerbs[v] || (v == "go" || v == "stick") && word(t, k+1) != "with" {
		return nil
	}
	obj := k + 1
	if v == "go" || v == "stick" || v == "switch" && word(t, k+1) == "to" {
		obj = k + 2
	}
	end := c.end()
	if obj >= end || vagueObjects[word(t, obj)] {
		return nil
	}
	return &candidate{typ: TypeDecision, pattern: "decision: let's go with", content: c.speaker + "'s team decided to " + c.rw.rewrite(k, end)}
}

// addressed matches instructions to the assistant: "you must always cite
// sources", "the assistant should never ...". subj is the subject's first
// word, j the word after it.
func (c *clause) addressed(subj, j int) *candidate {
	t := c.toks
	modal := word(t, j)
	k := j + 1
	switch modal {
	case "must", "should":
	case "need", "have":
		if word(t, k) != "to" {
			return nil
		}
		k++
	default:
		return nil
	}
	end := c.end()
	if k >= end {
		return nil
	}
	f := word(t, k)
	style := isStyle(t[k:end])
	if modal != "must" && f != "always" && f != "never" && !style {
		return nil
	}
	if f == "be" && word(t, k+1) == "careful" {
		return nil
	}
	pattern := "rule: must"
	if f == "always" || f == "never" {
		pattern = "rule: " + f
	}
	if style {
		return &candidate{typ: TypePreference, pattern: pattern, content: c.speaker + " wants the assistant to " + c.rw.rewrite(k, end)}
	}
	return &candidate{typ: TypeBelief, pattern: pattern, content: c.speaker + "'s rule: " + c.rw.rewrite(subj, end), rule: true}
}

// favourite matches "my favourite X is Y".
func (c *clause) favourite(a int) *candidate {
	t := c.toks
	switch word(t, a+1) {
	case "favourite", "favorite", "fave", "go-to", "favourites", "favorites":
	default:
		return nil
	}
	end := c.end()
	for k := a + 2; k < end-1; k++ {
		if t[k].w == "is" || t[k].w == "are" {
			return &candidate{typ: TypePreference, pattern: "preference: my favourite", content: c.rw.rewrite(a, end)}
		}
	}
	return nil
}

// styleVerbs start an instruction about how the assistant answers.
var styleVerbs = map[string]bool{
	"answer": true, "respond": true, "reply": true, "write": true, "keep": true, "use": true,
	"call": true, "address": true, "format": true, "be": true, "explain": true, "speak": true,
	"give": true, "include": true, "add": true, "stop": true, "avoid": true, "start": true,
	"end": true, "cite": true, "show": true, "put": true, "summarize": true, "summarise": true,
}

// styleWords mark an instruction about how the assistant should answer.
var styleWords = map[string]bool{
	"answer": true, "answers": true, "answering": true, "respond": true, "response": true,
	"responses": true, "reply": true, "replies": true, "format": true, "formatting": true,
	"bullet": true, "bullets": true, "bullet-point": true, "bullet-points": true, "emoji": true,
	"emojis": true, "markdown": true, "tone": true, "concise": true, "brief": true, "terse": true,
	"verbose": true, "summary": true, "summaries": true, "summarize": true, "summarise": true,
	"explain": true, "explanation": true, "explanations": true, "english": true, "spanish": true,
	"german": true, "french": true, "italian": true, "portuguese": true, "dutch": true,
	"formal": true, "informal": true, "casual": true, "examples": true, "cite": true,
	"citation": true, "citations": true, "sources": true, "apologize": true, "apologise": true,
	"jargon": true, "tables": true, "headings": true, "headers": true, "paragraphs": true,
	"sentences": true, "tl;dr": true, "tldr": true, "metric": true, "imperial": true,
	"celsius": true, "fahrenheit": true, "language": true, "greet": true, "call": true,
}

func isStyle(t []token) bool {
	for _, tk := range t {
		if styleWords[tk.w] {
			return true
		}
	}
	return false
}

// imperative matches an instruction at the start of the clause: "Always
// answer in bullet points", "Never deploy on Fridays", "Don't ever push to
// main", "Don't use emojis", "From now on, reply in French".
func (c *clause) imperative() *candidate {
	t := c.toks
	i := 0
	if word(t, 0) == "please" {
		i = 1
	}
	end := c.end()
	var vp, pattern string
	rule := true
	switch {
	case word(t, i) == "never" && word(t, i+1) == "ever" && i+2 < end:
		vp, pattern = "never "+c.rw.rewrite(i+2, end), "rule: never"
	case (word(t, i) == "always" || word(t, i) == "never") && i+1 < end && !subjects[word(t, i+1)]:
		vp, pattern = lowerFirst(c.rw.rewrite(i, end)), "rule: "+word(t, i)
	case hasWords(t, i, "do", "not", "ever") && i+3 < end:
		vp, pattern = "never "+c.rw.rewrite(i+3, end), "rule: don't ever"
	case hasWords(t, i, "do", "not") && i+2 < end && isStyle(t[i+2:end]):
		vp, pattern, rule = "not "+c.rw.rewrite(i+2, end), "preference: don't", false
	case c.fromNow && styleVerbs[word(t, i)] && i+1 < end:
		vp, pattern, rule = lowerFirst(c.rw.rewrite(i, end)), "preference: from now on", false
	default:
		return nil
	}
	if !rule || isStyle(t[i:end]) {
		return &candidate{typ: TypePreference, pattern: pattern, content: c.speaker + " wants the assistant to " + vp}
	}
	return &candidate{typ: TypeBelief, pattern: pattern, content: c.speaker + "'s rule: " + vp, rule: true}
}

func lowerFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if !unicode.IsUpper(r) {
		return s
	}
	// Keep acronyms and names spelled in capitals ("AWS", "PRs").
	if r2, _ := utf8.DecodeRuneInString(s[size:]); unicode.IsUpper(r2) {
		return s
	}
	return string(unicode.ToLower(r)) + s[size:]
}

// nonSubjects cannot start a third-person rule: "it must be nice".
var nonSubjects = map[string]bool{
	"it": true, "that": true, "this": true, "there": true, "he": true, "she": true,
	"they": true, "you": true, "i": true, "we": true, "which": true, "what": true,
	"who": true, "someone": true, "somebody": true, "everything": true, "something": true,
}

// epistemic words after "must be": "must be nice" is a guess, not a rule.
var epistemic = map[string]bool{
	"nice": true, "great": true, "hard": true, "tough": true, "fun": true, "tired": true,
	"cool": true, "awesome": true, "annoying": true, "frustrating": true, "difficult": true,
	"a": true, "an": true, "the": true, "so": true, "really": true, "wrong": true,
	"right": true, "broken": true, "down": true, "busy": true, "something": true,
}

// thirdPersonRule matches rules with a noun subject: "All services must
// use TLS", "PRs should never be merged without review", "Pushing to main
// is forbidden".
func (c *clause) thirdPersonRule() *candidate {
	t := c.toks
	if nonSubjects[t[0].w] || auxiliaries[t[0].w] {
		return nil
	}
	end := c.end()
	for k := 1; k < min(end-1, 9); k++ {
		w, n := t[k].w, word(t, k+1)
		ok := false
		switch {
		case w == "must":
			ok = !(n == "be" && epistemic[word(t, k+2)]) && !(n == "have" && word(t, k+2) == "been")
		case w == "should" || w == "shall":
			ok = n == "always" || n == "never"
		case w == "is" || w == "are":
			ok = n == "forbidden" || n == "prohibited" || n == "mandatory" || n == "required" ||
				n == "banned" || n == "not" && word(t, k+2) == "allowed"
		case t[k].comma || subjects[w]:
			return nil
		}
		if !ok {
			continue
		}
		typ := TypeBelief
		if isStyle(t[:end]) && !isTech(t[:end]) {
			typ = TypePreference
		}
		pattern := "rule: must"
		if n == "always" || n == "never" {
			pattern = "rule: " + n
		}
		return &candidate{typ: typ, pattern: pattern, content: c.speaker + "'s rule: " + lowerFirst(c.rw.rewrite(0, end)), rule: typ == TypeBelief}
	}
	return nil
}

func isTech(t []token) bool {
	for i := range t {
		if _, _, ok := techAt(t, i); ok {
			return true
		}
	}
	return false
}

// bareDecision matches decisions without a subject: "Decided to go with
// Kafka", "Going with Redis then", "Final decision: Kafka", "The decision
// is to use Kafka".
func (c *clause) bareDecision() *candidate {
	t := c.toks
	s := c.speaker
	end := c.end()
	if d, pattern, ok := c.decisionPhrase(0); ok && t[0].w == "decided" {
		return &candidate{typ: TypeDecision, pattern: strings.Replace(pattern, "we decided", "decided to", 1), content: s + " " + d}
	}
	if hasWords(t, 0, "going", "with") && end > 2 {
		return &candidate{typ: TypeDecision, pattern: "decision: we are going with", content: s + " decided to go with " + c.rw.rewrite(2, end)}
	}
	for k := 0; k < min(3, len(t)-1); k++ {
		if t[k].w != "decision" {
			continue
		}
		switch {
		case t[k+1].comma && k+1 < end:
			return &candidate{typ: TypeDecision, pattern: "decision: the decision is", content: s + "'s decision: " + c.rw.rewrite(k+1, end)}
		case t[k+1].w == "is" && word(t, k+2) == "to" && k+3 < end:
			return &candidate{typ: TypeDecision, pattern: "decision: the decision is", content: s + " decided to " + c.rw.rewrite(k+3, end)}
		case t[k+1].w == "is" && k+2 < end:
			return &candidate{typ: TypeDecision, pattern: "decision: the decision is", content: s + "'s decision: " + c.rw.rewrite(k+2, end)}
		}
	}
	return nil
}

// stackVerbs mark a statement about the technology someone works with.
var stackVerbs = map[string]bool{
	"use": true, "uses": true, "using": true, "run": true, "runs": true, "running": true,
	"deploy": true, "deployed": true, "deploys": true, "host": true, "hosted": true,
	"hosts": true, "built": true, "build": true, "written": true, "write": true, "writing": true,
	"wrote": true, "work": true, "working": true, "worked": true, "code": true, "coding": true,
	"migrate": true, "migrated": true, "migrating": true, "switched": true, "moved": true,
	"is": true, "are": true, "was": true, "were": true, "rely": true, "relies": true,
	"store": true, "stores": true, "stored": true, "maintain": true, "manage": true,
	"learning": true, "learn": true, "know": true, "installed": true, "install": true,
	"adopted": true, "program": true, "develop": true, "developing": true, "on": true,
}

// eventNouns make a dated clause worth keeping without a first-person
// subject: "The release is next Tuesday".
var eventNouns = map[string]bool{
	"release": true, "launch": true, "deadline": true, "meeting": true, "demo": true,
	"deploy": true, "deployment": true, "migration": true, "interview": true,
	"appointment": true, "flight": true, "trip": true, "birthday": true, "wedding": true,
	"conference": true, "sprint": true, "review": true, "vacation": true, "holiday": true,
	"exam": true, "offsite": true, "outage": true, "incident": true, "cutover": true,
	"go-live": true, "kickoff": true, "workshop": true, "party": true, "anniversary": true,
}

var greetings = map[string]bool{
	"see": true, "talk": true, "catch": true, "speak": true, "bye": true, "goodbye": true,
	"good": true, "have": true, "happy": true, "enjoy": true, "cheers": true, "night": true,
	"morning": true,
}

// statement matches first-person statements about technologies ("Our
// backend is written in Go") and dated ones ("My flight to Berlin is next
// Tuesday", "The release is on March 3, 2024").
func (c *clause) statement() *candidate {
	t := c.toks
	end := c.end()
	a := -1
	for i := range t[:end] {
		if w := t[i].w; w == "i" || w == "we" || w == "my" || w == "our" {
			a = i
			break
		}
	}
	if a >= 0 && isTech(t[a:end]) {
		for _, tk := range t[a+1 : end] {
			if stackVerbs[tk.w] {
				return &candidate{typ: TypeBelief, pattern: "technology", content: c.withPrefix(c.rw.rewrite(a, end), a)}
			}
		}
	}
	if !c.hasDate || end < 3 || greetings[t[0].w] {
		return nil
	}
	for i := range t[:end-1] {
		if greetings[t[i].w] && (t[i+1].w == "you" || t[i+1].w == "soon" || t[i+1].w == "later") {
			return nil
		}
	}
	if a < 0 {
		for _, tk := range t[:end] {
			if eventNouns[tk.w] {
				a = 0
				break
			}
		}
	}
	if a < 0 {
		return nil
	}
	content := c.rw.rewrite(a, end)
	if a > 0 {
		content = c.withPrefix(content, a)
	}
	return &candidate{typ: TypeBelief, pattern: "temporal", content: content}
}
