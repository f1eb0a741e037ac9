package retrieve

// Keyphrase keys (issue 18 item 2, round five). The multiword terms of
// a turn — two adjacent content words of one clause, analysed as the
// lexical index analyses words ("a pottery class" → "pottery class",
// "the pride parade" → "pride parad") — are derived keys of the turn
// like its entity keys: field terms that do not count towards its
// length (lexical.AddWithKeys), linked by construction and erased with
// it. A question's own phrases rank the turns holding them by the
// phrases' summed idf, a list that joins fusion with the weight
// Query.Weights[SignalPhrases] (core's default 0.1; 0 disables;
// measured in docs/retrieval-rounds.md, round five). Adjacent words say more
// than the same words apart ("pride parade" against a turn with "pride"
// in one sentence and "parade" in another), which BM25 over single
// words cannot tell.

import (
	"strings"
	"unicode"

	"github.com/memgate/memgate/internal/lexical"
)

// SignalPhrases is the list of turns ranked by the keyphrases the query
// shares with them. It is not a signal of its own to ask for: it runs
// with the lexical signal, like the facts list (factlinks.go), and shows
// in a hit's explanation.
const SignalPhrases = "phrases"

// phraseField is the field of a keyphrase key: two analysed words
// joined by a space.
const phraseField = "kp"

// maxTurnPhrases bounds the keyphrase keys of one turn: the first 12
// (24 gave the same development figures and twice the keys of a long
// turn; 8 moved them both ways).
const maxTurnPhrases = 12

// textPhrases lists the keyphrases of text, in order, without repeats,
// at most limit: each two adjacent words that are both content words
// (not stop words, after analysis). A stop word between two words
// breaks the pair; callers mark clause ends as stop words (clauses).
func textPhrases(text string, limit int) []string {
	var out []string
	prev := ""
	for _, f := range strings.FieldsFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || (unicode.IsPunct(r) && r != '\'' && r != '’' && r != '-')
	}) {
		terms := lexical.Analyze(f, true)
		if len(terms) != 1 {
			prev = ""
			continue
		}
		t := terms[0]
		if prev != "" {
			p := prev + " " + t
			if !containsStr(out, p) {
				out = append(out, p)
				if len(out) == limit {
					return out
				}
			}
		}
		prev = t
	}
	return out
}

// phraseFields lists the keyphrase keys of a turn as field terms.
func phraseFields(content string) []string {
	ps := textPhrases(clauses(content), maxTurnPhrases)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = lexical.FieldTerm(phraseField, p)
	}
	return out
}

// clauses marks clause ends so that textPhrases does not pair words
// across them: every punctuation mark that ends a clause becomes a
// stop word.
func clauses(text string) string {
	return clauseRe.Replace(text)
}

var clauseRe = strings.NewReplacer(".", " the ", ",", " the ", ";", " the ", ":", " the ", "!", " the ", "?", " the ", "(", " the ", ")", " the ", "\n", " the ")

// phraseSearch ranks the turns allow admits by the summed idf of the
// keyphrases they share with the query, best first, at most pool; e.mu
// is held.
func (e *Engine) phraseSearch(text string, pool int, allow func(uint32) bool) ([]uint32, []float64) {
	phrases := textPhrases(clauses(text), maxTurnPhrases)
	terms := make([]string, len(phrases))
	for i, p := range phrases {
		terms[i] = lexical.FieldTerm(phraseField, p)
	}
	return e.idfSearch(terms, pool, allow)
}
