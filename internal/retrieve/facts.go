package retrieve

import (
	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
)

// The fact index. Extraction reconciles each new fact against the user's
// stored facts, and the gate compares each written fact with the live
// ones of its type (SimilarTo). Those facts are few beside the
// conversation turns that share their words, yet a lexical search
// restricted to them by a filter still walks every posting of its terms,
// turns included: its cost grew with every turn stored. So the engine
// keeps the facts' postings apart as well, a subset index copied from the
// main one (lexical.CopyTo), and SimilarTo walks only it when its filter
// admits facts only; the scores keep the main index's statistics, so the
// candidates are the same (lexical.SearchTermsVia). It costs the memory
// of the facts' postings a second time.

// factTypes are the record types extraction writes: the types the fact
// index holds and the records whose source turns are linked as keys
// (factlinks.go).
var factTypes = []memory.Type{memory.Belief, memory.Preference, memory.Decision}

var factMask = enumMask(typeEnum, factTypes)

// isFactDoc reports whether key is a live document of a fact type.
// Callers hold e.mu.
func (e *Engine) isFactDoc(key uint32) bool {
	if int(key) >= len(e.fx.filt) {
		return false
	}
	f := &e.fx.filt[key]
	return f.ws != 0 && f.typ != 0 && factMask>>f.typ&1 != 0
}

// refreshFact makes the fact index hold key's document exactly when it is
// a live fact, as the main index holds it. Callers hold e.mu for writing,
// after updating the main index and the filter state for key.
func (e *Engine) refreshFact(key uint32) {
	if e.isFactDoc(key) {
		e.lex.CopyTo(e.facts, key)
	} else {
		e.facts.Remove(key)
	}
}

// rebuildFacts derives the fact index from the main one (after a
// snapshot is read: it is not stored). Callers hold e.mu for writing.
func (e *Engine) rebuildFacts() {
	e.facts = lexical.New(lexical.DefaultOptions())
	for key := range e.fx.filt {
		if e.isFactDoc(uint32(key)) {
			e.lex.CopyTo(e.facts, uint32(key))
		}
	}
}

// factsOnly reports whether f admits documents of fact types only.
func factsOnly(f *Filter) bool {
	if len(f.Types) == 0 {
		return false
	}
	for _, t := range f.Types {
		if factMask>>enumCode(typeEnum, t)&1 == 0 {
			return false
		}
	}
	return true
}
