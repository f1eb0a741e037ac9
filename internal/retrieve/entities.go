package retrieve

// Named-entity keys (issue 18). The names a turn mentions — people,
// places, organisations, products: runs of capitalised words that do not
// open a sentence ("a gift from my grandma in my home country, Sweden",
// "the Connected LGBTQ Activists") — are derived keys of the turn, like
// its category and day keys (derive.go): field terms of its lexical
// document, linked to it by construction and erased with it. A question
// naming an entity ranks the turns holding it through the keys signal,
// and the entities a turn shares with others are the edges of the
// entity walk that lends multi-hop questions their second hop.

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/lexical"
)

// entField is the field of an entity key: the entity's words, lower case,
// joined by single spaces.
const entField = "ent"

// maxEntityWords bounds an entity's length; a longer capitalised run is a
// title or shouting, not a name.
const maxEntityWords = 4

// maxTurnEntities bounds the entity keys of one turn.
const maxTurnEntities = 12

// notNames are capitalised words that are not names wherever they stand:
// the pronoun, interjections, greetings and the calendar (dates have their
// own keys).
var notNames = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i i'm i've i'll i'd im ive ok okay oh wow hey hi hello yes yeah no thanks thank
		please sorry lol haha omg congrats congratulations awesome great nice cool good dear btw also and but so
		monday tuesday wednesday thursday friday saturday sunday
		january february march april may june july august september october november december
		mr mrs ms dr st mom dad`) {
		m[w] = true
	}
	return m
}()

// textEntities lists the entities of text, lower case, in order of first
// mention, without repeats, at most limit. A leading speaker prefix
// ("Caroline: ") is not a mention.
func textEntities(text string, limit int) []string {
	return scanNames(text, limit, strings.ToLower)
}

// Names lists the names text mentions as written ("Sweden", "Connected
// LGBTQ Activists"), in order of first mention, without repeats, at most
// limit: what the index derives its entity keys from, for the memory
// graph's nodes (a conversation turn's names, core's gateway).
func Names(text string, limit int) []string {
	return scanNames(text, limit, func(s string) string { return s })
}

// scanNames finds the runs of capitalised words of text that are names
// and lists form(run) for each, without repeats, at most limit.
func scanNames(text string, limit int, form func(string) string) []string {
	if i := strings.Index(text, ": "); i > 0 && i < 40 && !strings.ContainsAny(text[:i], ".!?\n") {
		text = text[i+2:]
	}
	var out []string
	var run []string
	flush := func() {
		if len(run) > 0 && len(run) <= maxEntityWords {
			e := form(strings.Join(run, " "))
			if !containsStr(out, e) {
				out = append(out, e)
			}
		}
		run = run[:0]
	}
	start := true // the next word opens a sentence
	for i := 0; i < len(text) && len(out) < limit; {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			switch r {
			case '.', '!', '?', '\n', '"', '“', '[', '(':
				flush()
				start = true
			case ',', ';', ':', ')', ']', '”':
				flush()
			}
			i += size
			continue
		}
		j := i
		for j < len(text) {
			r2, s2 := utf8.DecodeRuneInString(text[j:])
			if !unicode.IsLetter(r2) && !unicode.IsDigit(r2) && r2 != '\'' && r2 != '’' && r2 != '-' && r2 != '&' {
				break
			}
			j += s2
		}
		w := strings.TrimRight(text[i:j], "'’-&")
		opens := start
		start = false
		i = j
		if w == "" {
			continue
		}
		// The possessive is not part of the name: "Caroline's" is Caroline.
		lw := strings.ToLower(w)
		for _, pos := range []string{"'s", "’s"} {
			if strings.HasSuffix(lw, pos) {
				lw, w = lw[:len(lw)-len(pos)], w[:len(w)-len(pos)]
				break
			}
		}
		switch {
		case unicode.IsDigit(r) && len(run) > 0 && !opens:
			// A number continues a name: "Fitbit Charge 3".
		case !unicode.IsUpper(r) || opens || notNames[lw] || lw == "":
			flush()
			continue
		}
		run = append(run, w)
	}
	flush()
	return out
}

// entityFields lists the entity keys of a turn as field terms.
func entityFields(content string) []string {
	ents := textEntities(content, maxTurnEntities)
	out := make([]string, len(ents))
	for i, e := range ents {
		out[i] = lexical.FieldTerm(entField, e)
	}
	return out
}
