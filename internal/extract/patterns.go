package extract

import (
	"slices"
	"strings"
	"time"
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
