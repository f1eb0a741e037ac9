package retrieve

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

// Speakers. A conversation turn whose metadata names its speaker
// ({"speaker": "Caroline"}, which the gateway writes from the sender id;
// "user" and "assistant" included) is indexed with a speaker field term
// per word of the name, so a question that names a speaker, or asks about
// what "I" or "you" said, can prefer that speaker's turns. The name is
// read from the metadata, never parsed back out of the content (which the
// gateway also writes as "sender: text", for the reader's sake).

const speakerField = "speaker"

// Role speakers of a chat between a user and an assistant.
const (
	speakerUser      = "user"
	speakerAssistant = "assistant"
)

// speakerOf returns the speaker name words of a turn's metadata
// "speaker": at most three words of letters, digits, '.', '-' or
// apostrophes, lower-cased and without trailing punctuation; nil when
// the metadata names none or a name of another shape.
func speakerOf(metadata json.RawMessage) []string {
	if len(metadata) == 0 {
		return nil
	}
	var m struct {
		Speaker string `json:"speaker"`
	}
	if json.Unmarshal(metadata, &m) != nil {
		return nil
	}
	return speakerWords(m.Speaker)
}

// speakerWords splits a speaker name into its index words (see
// speakerOf); nil for a name of another shape.
func speakerWords(speaker string) []string {
	name := strings.Fields(speaker)
	if len(name) == 0 || len(name) > 3 || len(speaker) > 40 {
		return nil
	}
	out := make([]string, 0, len(name))
	for _, w := range name {
		for _, r := range w {
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(".-'’", r) {
				return nil
			}
		}
		// Trimmed as query words are, so "Dr." matches "Dr".
		if w = strings.TrimRight(strings.ToLower(w), ".'’-"); w != "" {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// filePath is the path of a memory file (internal/files: category
// "file", metadata file_path), which the lexical index holds with the
// file's text so that a search for "USER.md" or a directory's name finds
// it; "" for other records.
func filePath(r *memory.Record) string {
	if r.Category != "file" || r.Type != memory.Resource {
		return ""
	}
	var m struct {
		Path string `json:"file_path"`
	}
	if json.Unmarshal(r.Metadata, &m) != nil {
		return ""
	}
	return m.Path
}

// fieldTerms are the field terms a record is indexed with besides its
// text: the speaker of a conversation turn.
func fieldTerms(r *memory.Record) []string {
	if r.Type != memory.Episode {
		return nil
	}
	var out []string
	for _, w := range speakerOf(r.Metadata) {
		out = append(out, lexical.FieldTerm(speakerField, w))
	}
	return out
}

var (
	queryWordRe = regexp.MustCompile(`[\p{L}\p{N}][\p{L}\p{N}.'’-]*`)
	// A question about what the assistant said: "did you say", "you
	// recommended", "you mentioned".
	assistantRe = regexp.MustCompile(`(?i)\b(did you (say|mention|recommend|suggest|tell|write|give|list|name|call)|you (said|mentioned|recommended|suggested|told|wrote|gave|listed|named|provided|explained|described|shared|showed))\b`)
	firstPerson = regexp.MustCompile(`(?i)\b(i|me|my|mine|myself|i'm|i've|i'd|i’m|i’ve|i’d)\b`)
)

// querySpeakers lists the speaker field terms a query points at: the
// words it shares with speaker names (the engine keeps those some turn
// actually holds), "assistant" when it asks what the assistant said, and
// otherwise "user" when it speaks in the first person.
func querySpeakers(text string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			out = append(out, lexical.FieldTerm(speakerField, w))
		}
	}
	for _, w := range queryWordRe.FindAllString(text, -1) {
		w = strings.ToLower(w)
		w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
		w = strings.TrimRight(w, ".'’-")
		if w == "" {
			continue
		}
		add(w)
	}
	switch {
	case assistantRe.MatchString(text):
		add(speakerAssistant)
	case firstPerson.MatchString(text):
		add(speakerUser)
	}
	return out
}

// speakerBoost multiplies by 1+w the fused score of every candidate
// spoken by a speaker the query points at, when some candidate is, and
// records the boosted candidates in tr when given.
func (e *Engine) speakerBoost(text string, fused map[uint32]float64, w float64, tr *boostTrace) {
	var terms []string
	for _, t := range querySpeakers(text) {
		if e.lex.DocFreq(t) > 0 {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		return
	}
	for k := range fused {
		for _, t := range terms {
			if e.lex.HasTerm(k, t) {
				fused[k] *= 1 + w
				if tr != nil {
					tr.speaker[k] = true
				}
				break
			}
		}
	}
}
