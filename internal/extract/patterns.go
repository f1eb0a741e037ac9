package extract

import (
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Turn is one stored conversation message.
type Turn struct {
	MessageID   string    // stable id of the stored message
	SessionID   string    // e.g. "chat:c42"
	SenderID    string    // the speaker; the subject of the facts retold from the turn
	Role        string    // "user" | "assistant" | other
	Time        time.Time // the turn's own time
	SessionDate time.Time // date relative expressions resolve against (usually == Time)
	Text        string
}

// Fact is a candidate fact extracted from one or more turns.
type Fact struct {
	Type       string     // TypeBelief, TypePreference or TypeDecision
	Content    string     // one atomic, self-contained sentence, e.g. "u1 prefers PostgreSQL for backend work"
	Entities   []string   // lower-case names of technologies, people, projects, places; sorted, unique
	Tags       []string   // TagRule, TagTechnology, TagTemporal, TagPast; sorted, unique
	EventTime  *time.Time // resolved date of a temporal fact, midnight in the session date's location
	Confidence float64
	Pattern    string   // pattern name that matched ("" for LLM facts)
	Evidence   []string // MessageIDs of the source turns
}

// Evaluation is the gatekeeper's verdict on one turn; the caller writes it
// as the gatekeeper log row.
type Evaluation struct {
	Decision string // DecisionSkip or DecisionIngestPattern (the job adds "ingest_llm"/"ingest_failopen")
	Reason   string // short human reason, e.g. "no pattern matched", "preference: I prefer"
	Pattern  string // first pattern matched
	Facts    []Fact
}

// Fact types.
const (
	TypeBelief     = "belief"
	TypePreference = "preference"
	TypeDecision   = "decision"
)

// Gatekeeper decisions made by Patterns.
const (
	DecisionSkip          = "skip"
	DecisionIngestPattern = "ingest_pattern"
)

// Tags put on pattern facts.
const (
	TagRule       = "rule"       // a policy or hard rule ("always", "never", "must")
	TagTechnology = "technology" // mentions a known technology
	TagTemporal   = "temporal"   // has an EventTime
	TagPast       = "past"       // a former state ("I used to like ...")
)

// Confidences of pattern facts.
const (
	ConfidencePattern = 0.7
	ConfidenceRule    = 0.8
	ConfidencePast    = 0.5
)

// Skip reasons.
const (
	reasonEmpty        = "empty turn"
	reasonNoMatch      = "no pattern matched"
	reasonQuestion     = "question"
	reasonHypothetical = "hypothetical"
	reasonReported     = "reported speech"
	reasonRole         = "not a user turn: only decisions are extracted"
)

// skipRank orders skip reasons, the most telling first.
var skipRank = map[string]int{reasonRole: 1, reasonQuestion: 2, reasonHypothetical: 3, reasonReported: 4, reasonNoMatch: 5, reasonEmpty: 6}

// Patterns is the deterministic gatekeeper (SPEC §7): it reads one turn
// and returns the facts its patterns recognise, retold in the third person
// with the sender as subject, one fact per clause. It is pure and safe for
// concurrent use. See the package documentation for the pattern families.
func Patterns(t Turn) Evaluation {
	speaker := strings.Join(strings.Fields(t.SenderID), "_")
	if speaker == "" {
		speaker = "the " + strings.ToLower(cmpOr(strings.TrimSpace(t.Role), "user"))
	}
	ref := t.SessionDate
	if ref.IsZero() {
		ref = t.Time
	}
	c := clause{
		speaker: speaker,
		user:    strings.EqualFold(strings.TrimSpace(t.Role), "user"),
		ref:     ref,
		hasRef:  !ref.IsZero(),
	}
	var evidence []string
	if t.MessageID != "" {
		evidence = []string{t.MessageID}
	}
	ev := Evaluation{Decision: DecisionSkip, Reason: reasonEmpty}
	var patterns []string
	for _, s := range splitSentences(t.Text) {
		toks := tokenize(s.text)
		for _, ct := range clauses(toks) {
			c.text, c.toks, c.question = s.text, ct, s.question
			cand, why := c.analyse()
			if cand == nil {
				if skipRank[why] < skipRank[ev.Reason] {
					ev.Reason = why
				}
				continue
			}
			f := c.fact(cand, evidence)
			if slices.ContainsFunc(ev.Facts, func(g Fact) bool { return g.Content == f.Content }) {
				continue
			}
			ev.Facts = append(ev.Facts, f)
			if !slices.Contains(patterns, cand.pattern) {
				patterns = append(patterns, cand.pattern)
			}
		}
	}
	if len(ev.Facts) > 0 {
		ev.Decision = DecisionIngestPattern
		ev.Pattern = patterns[0]
		ev.Reason = strings.Join(patterns, "; ")
	}
	return ev
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// candidate is a fact found in one clause, before entities and tags.
type candidate struct {
	typ, pattern, content string
	rule, past            bool
}

// clause is the analysis state of one clause.
type clause struct {
	speaker  string
	user     bool
	ref      time.Time
	hasRef   bool
	text     string  // the sentence text
	toks     []token // the clause's words, lead-ins removed by analyse
	question bool
	fromNow  bool // "from now on", "going forward"
	date     dateMatch
	hasDate  bool
	rw       rewriter
}

// analyse returns the clause's fact, or nil and a skip reason.
func (c *clause) analyse() (*candidate, string) {
	c.toks, c.fromNow = skipLeadIns(c.toks)
	t := c.toks
	if len(t) < 2 || len(t) > maxClauseWords {
		return nil, reasonNoMatch
	}
	if c.question || isQuestion(t) {
		return nil, reasonQuestion
	}
	if hypothetical(t) {
		return nil, reasonHypothetical
	}
	c.date, c.hasDate = findDate(t, c.ref, c.hasRef)
	c.rw = rewriter{text: c.text, toks: t, speaker: c.speaker}
	if c.hasDate && !c.date.absolute {
		c.rw.dateFrom, c.rw.dateTo, c.rw.dateText = c.date.from, c.date.to, c.date.text()
	}

	cand, why := c.match()
	if cand == nil {
		return nil, why
	}
	if !c.user && cand.typ != TypeDecision {
		return nil, reasonRole
	}
	return cand, ""
}

func (c *clause) match() (*candidate, string) {
	t := c.toks
	if cand := c.imperative(); cand != nil {
		return cand, ""
	}
	for a := range t {
		var cand *candidate
		subj := a
		switch t[a].w {
		case "i":
			cand = c.firstPerson(a)
		case "we":
			cand = c.plural(a)
		case "let's", "lets":
			cand = c.lets(a)
		case "you":
			cand = c.addressed(a, a+1)
		case "assistant":
			if word(t, a-1) == "the" {
				subj = a - 1
				cand = c.addressed(a-1, a+1)
			}
		case "my":
			cand = c.favourite(a)
		}
		if cand == nil {
			continue
		}
		if subj > 0 {
			if reported(t[:subj]) {
				return nil, reasonReported
			}
			cand.content = c.withPrefix(cand.content, subj)
		}
		return cand, ""
	}
	if cand := c.thirdPersonRule(); cand != nil {
		return cand, ""
	}
	if cand := c.bareDecision(); cand != nil {
		return cand, ""
	}
	if !c.user {
		return nil, reasonNoMatch
	}
	if cand := c.statement(); cand != nil {
		return cand, ""
	}
	return nil, reasonNoMatch
}

// fact completes a candidate with entities, tags and the event time.
func (c *clause) fact(cand *candidate, evidence []string) Fact {
	f := Fact{
		Type:       cand.typ,
		Content:    tidy(cand.content),
		Confidence: ConfidencePattern,
		Pattern:    cand.pattern,
		Evidence:   evidence,
	}
	var tags []string
	switch {
	case cand.past:
		f.Confidence = ConfidencePast
		tags = append(tags, TagPast)
	case cand.rule:
		f.Confidence = ConfidenceRule
		tags = append(tags, TagRule)
	}
	var hasTech bool
	f.Entities, hasTech = entities(c.toks)
	if hasTech {
		tags = append(tags, TagTechnology)
	}
	if c.hasDate {
		et := c.date.t
		f.EventTime = &et
		tags = append(tags, TagTemporal)
	}
	slices.Sort(tags)
	f.Tags = tags
	return f
}

// tidy trims a content sentence, collapses white space, drops trailing
// punctuation and bounds it to 1000 bytes.
func tidy(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimRight(s, " ,;:-–—")
	if len(s) > maxContent {
		cut := maxContent
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// maxClauseWords bounds the clauses analysed: a longer one is no atomic
// fact (a pasted log line, a run-on paragraph), and the bound keeps
// Patterns linear in the length of the turn.
const maxClauseWords = 60

// maxContent bounds a fact's content, in bytes.
const maxContent = 1000

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
	case "am":
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
