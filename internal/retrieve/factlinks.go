package retrieve

// Facts as keys of their source turns (issue 18). A fact extraction
// derived from conversation turns ("Melanie likes pottery", from "I'm a
// big fan of pottery - the creativity and skill is awesome") restates
// the turn in the words a question uses. Each fact is indexed with the
// ids of the turns it cites as evidence (field terms of the fact's own
// lexical document: linked by construction, erased with the fact), and a
// search for turns also matches the question against the facts the same
// filter admits (same workspace, scope, status and access levels, so a
// fact the searcher may not read lends nothing) and ranks each cited turn
// the filter admits by its best fact's score: a list that joins fusion
// with the keys signal's weight (the facts are derived keys of the turns)
// times factsShare, each entry's share scaled by how much of the question
// its fact holds.

import (
	"slices"

	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

// srcField is the field of a fact's source-turn link: the cited record id.
const srcField = "src"

// SignalFacts is the list of turns ranked by the facts citing them. It
// is not a signal of its own to ask for: it runs with the lexical signal
// when a search asks for turns only, and shows in a hit's explanation.
const SignalFacts = "facts"

// factsShare is the facts list's fusion weight relative to the keys
// signal's (0.5 by default, so 0.6). Each entry's share is also scaled by
// the square of its fact's coverage of the question: a fact holding one
// word of three lends a ninth. With the lexical list's gentler curve, a
// fact holding one word of the question lifted its turn above a turn
// holding all of them (TestLoCoMoPipeline's bridge question); measured
// variants in docs/retrieval-rounds.md.
const factsShare = 1.2

// sourceFields lists the source-turn links of a fact as field terms.
func sourceFields(r *memory.Record) []string {
	if !slices.Contains(factTypes, r.Type) {
		return nil
	}
	var out []string
	for _, id := range r.Source.Evidence {
		if id != "" && len(id) <= 64 {
			out = append(out, lexical.FieldTerm(srcField, id))
		}
	}
	return out
}

// wantsFacts reports whether a search's filter asks for turns but no
// facts: then the facts lend their words to the turns they cite. (When it
// admits facts too, they are candidates themselves.)
func wantsFacts(f *Filter) bool {
	if len(f.Types) == 0 || !slices.Contains(f.Types, memory.Episode) {
		return false
	}
	for _, t := range factTypes {
		if slices.Contains(f.Types, t) {
			return false
		}
	}
	return true
}

// factLinked ranks the turns allow admits by the lexical score of the
// best fact citing them, among the facts the search's filter would admit
// were it asking for facts, and says which fact that is; e.mu is held.
func (e *Engine) factLinked(terms []string, f Filter, pool int, allow func(uint32) bool) ([]uint32, []float64, map[uint32]uint32) {
	if len(terms) == 0 {
		return nil, nil, nil
	}
	f.Types = factTypes
	f.Category, f.Entity = "", ""
	cf := e.compile(&f)
	if cf.none {
		return nil, nil, nil
	}
	// The fact index (facts.go) holds every indexed fact: the same hits,
	// walking the facts' postings instead of every turn's.
	hits := e.lex.SearchTermsScopedVia(e.facts, terms, pool, lexical.Allow(cf.ok), cf.total)
	var keys []uint32
	var sc []float64
	best := map[uint32]uint32{}
	for _, h := range hits { // best first: a turn keeps its best fact
		for _, t := range e.lex.FieldTerms(h.Key, srcField) {
			k, ok := e.lookup(f.Workspace, t[len(lexical.FieldTerm(srcField, "")):])
			if _, seen := best[k]; ok && allow(k) && !seen {
				best[k] = h.Key
				keys, sc = append(keys, k), append(sc, float64(h.Score))
			}
		}
	}
	return keys, sc, best
}
