package contextpack

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Tokens estimates the tokens of s as one per four bytes, rounded up. The
// estimate is subadditive (Tokens(a+b) <= Tokens(a)+Tokens(b)), so a sum
// of per-part estimates bounds the estimate of the whole rendering.
func Tokens(s string) int { return (len(s) + 3) / 4 }

// minContentBytes is the least content worth showing when an item must
// be cut to fit.
const minContentBytes = 24

const ellipsis = "…"

var sectionTitles = map[string]string{
	SectionConstraints: "Constraints",
	SectionProcedures:  "Procedures",
	SectionKnowledge:   "Knowledge",
	SectionFacts:       "Facts",
	SectionRecent:      "Recent activity",
}

// packOrder is the order sections draw on the budget: hard rules and
// pinned files first, then the session's few recent items (so knowledge
// does not repeat them), procedures, knowledge, facts. Sections are shown
// in envelope order all the same.
var packOrder = []string{SectionConstraints, SectionRecent, SectionProcedures, SectionKnowledge, SectionFacts}

// showOrder is the envelope order.
var showOrder = []string{SectionConstraints, SectionProcedures, SectionKnowledge, SectionFacts, SectionRecent}

// pack fills the sections under the budget: each item is cut to
// MaxItemTokens and to what is left; an item that cannot fit even cut is
// omitted (a later, smaller one may still fit), and so is a record
// already placed in another section.
func pack(req Request, c candidates) Envelope {
	env := Envelope{Query: req.Query, BudgetTokens: req.BudgetTokens}
	input := map[string][]Item{SectionConstraints: c.constraints, SectionProcedures: c.procedures,
		SectionKnowledge: c.knowledge, SectionFacts: c.facts, SectionRecent: c.recent}
	bound := map[string]int{SectionConstraints: req.MaxConstraints, SectionProcedures: req.MaxProcedures,
		SectionKnowledge: req.MaxChunks, SectionFacts: req.MaxFacts, SectionRecent: req.MaxRecent}
	packed := map[string]Section{}
	placed := map[string]bool{}
	remaining := req.BudgetTokens
	for _, name := range packOrder {
		sec := Section{Name: name, Items: []Item{}}
		// Charged as if preceded by a blank line, which bounds either
		// rendering.
		header := Tokens("\n## " + sectionTitles[name] + "\n")
		for _, it := range input[name] {
			if len(sec.Items) == bound[name] || (it.Kind != KindFact && it.ID != "" && placed[it.ID]) {
				sec.Omitted++
				continue
			}
			cost := 0
			if len(sec.Items) == 0 {
				cost = header
			}
			fitted, ok := fit(it, min(remaining-cost, req.MaxItemTokens))
			if !ok {
				sec.Omitted++
				continue
			}
			sec.Tokens += cost + fitted.Tokens
			remaining -= cost + fitted.Tokens
			sec.Items = append(sec.Items, fitted)
			if it.Kind != KindFact && it.ID != "" {
				placed[it.ID] = true
			}
		}
		packed[name] = sec
	}
	var md strings.Builder
	for _, name := range showOrder {
		sec := packed[name]
		if len(sec.Items) > 0 {
			if md.Len() > 0 {
				md.WriteString("\n")
			}
			md.WriteString("## " + sectionTitles[name] + "\n")
			for _, it := range sec.Items {
				md.WriteString(it.line)
			}
		}
		env.Sections = append(env.Sections, sec)
	}
	env.Markdown = md.String()
	env.Tokens = Tokens(env.Markdown)
	env.Sufficiency = sufficiency(packed[SectionKnowledge].Items, c.relevance)
	return env
}

// fit renders it as a Markdown line of at most allow tokens, cutting its
// content if it must.
func fit(it Item, allow int) (Item, bool) {
	if allow <= 0 {
		return it, false
	}
	prefix, suffix := affixes(it)
	content := it.Content
	if it.Kind != KindPinned {
		content = strings.Join(strings.Fields(content), " ")
	}
	line := prefix + content + suffix
	if Tokens(line) > allow {
		room := allow*4 - len(prefix) - len(suffix) - len(ellipsis)
		if room < minContentBytes {
			return it, false
		}
		cut := min(room, len(content))
		for cut > 0 && cut < len(content) && !utf8.RuneStart(content[cut]) {
			cut--
		}
		content = content[:cut]
		it.Content, it.Truncated = content, true
		line = prefix + content + ellipsis + suffix
	}
	it.line, it.Tokens = line, Tokens(line)
	return it, true
}

// affixes are the Markdown around an item's content.
func affixes(it Item) (string, string) {
	cite := ""
	if it.Citation != "" {
		cite = " (" + it.Citation
		if it.ResourceURI != "" {
			cite += ", " + it.ResourceURI
		}
		cite += ")"
	}
	switch it.Kind {
	case KindPinned:
		return "### " + strings.Join(strings.Fields(it.Path), " ") + "\n", cite + "\n"
	case KindProcedure:
		stats := ""
		if it.SuccessRate != nil {
			stats = " [success " + strconv.FormatFloat(*it.SuccessRate, 'f', 2, 64)
			if it.UseCount != nil {
				stats += ", used " + strconv.FormatInt(*it.UseCount, 10)
			}
			stats += "]"
		}
		return "- ", stats + cite + "\n"
	case KindActivity:
		return "- [" + string(it.Type) + "] ", cite + "\n"
	}
	return "- ", cite + "\n"
}

// sufficiency judges the knowledge packed: low when nothing was found,
// the best dense similarity is under 0.25, or the top items' mean
// confidence is under 0.5; high when at least three items came back with
// mean confidence at least 0.8 and (when dense scores exist) a best
// similarity of at least 0.5; healthy otherwise.
func sufficiency(items []Item, relevance float64) string {
	if len(items) == 0 {
		return SufficiencyLow
	}
	top := items[:min(3, len(items))]
	conf := 0.0
	for _, it := range top {
		conf += it.Confidence
	}
	conf /= float64(len(top))
	switch {
	case conf < 0.5 || (relevance >= 0 && relevance < 0.25):
		return SufficiencyLow
	case len(items) >= 3 && conf >= 0.8 && (relevance < 0 || relevance >= 0.5):
		return SufficiencyHigh
	}
	return SufficiencyHealthy
}
