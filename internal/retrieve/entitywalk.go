package retrieve

// The entity walk (issue 18): a two-step walk over the graph whose nodes
// are the entities recognised in conversation turns (entities.go) and
// whose edges join two entities mentioned by one turn. The question's
// entities (not its speakers' names) seed it; a turn scores the mass that
// reaches the entities it mentions: the idf of each seed it holds, plus,
// damped, the share of a seed's mass that flows to each other entity its
// seed turns mention. This is personalised PageRank truncated at two
// steps, computed from the lexical index's postings (entity → turns) and
// documents (turn → entities), so it needs no graph of its own: it is
// derived, linked to the turns, and erased with them. It joins the graph
// signal's list.

import (
	"sort"

	"github.com/memgate/memgate/internal/lexical"
)

const (
	walkDamping   = 0.5 // the share of a seed's mass passed to its co-mentioned entities
	walkSeedTurns = 200 // at most this many seed turns lend their entities
)

// entityWalk ranks the admitted turns by the mass of the walk seeded by
// the entities text names; e.mu is held.
func (e *Engine) entityWalk(text string, pool int, allow func(uint32) bool) ([]uint32, []float64) {
	n := float64(max(1, e.lex.Len()))
	seeds := map[string]float64{}
	for _, x := range textEntities(text, maxTurnEntities) {
		if e.lex.DocFreq(lexical.FieldTerm(speakerField, x)) > 0 {
			continue // a speaker's name: the speaker boost's business
		}
		f := lexical.FieldTerm(entField, x)
		if df := e.lex.DocFreq(f); df > 0 {
			seeds[f] = logIDF(n, float64(df))
		}
	}
	if len(seeds) == 0 {
		return nil, nil
	}
	sc := map[uint32]float64{}
	type seedTurn struct {
		k uint32
		w float64
	}
	var lend []seedTurn // the seed turns that lend their entities
	for _, f := range sortedKeys(seeds) {
		w := seeds[f]
		e.lex.Postings(f, func(k uint32, _ int) {
			if allow(k) {
				sc[k] += w
				if len(lend) < walkSeedTurns {
					lend = append(lend, seedTurn{k, w})
				}
			}
		})
	}
	flow := map[string]float64{} // mass reaching co-mentioned entities
	for _, st := range lend {
		others := e.lex.FieldTerms(st.k, entField)
		for _, o := range others {
			if _, isSeed := seeds[o]; !isSeed {
				flow[o] += walkDamping * st.w / float64(len(others))
			}
		}
	}
	for f, m := range flow {
		idf := logIDF(n, float64(max(1, e.lex.DocFreq(f))))
		e.lex.Postings(f, func(k uint32, _ int) {
			if allow(k) {
				sc[k] += m * idf / (idf + 1)
			}
		})
	}
	return e.topScored(sc, pool)
}

func sortedKeys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// appendWalk appends to the memory graph's candidates (ak, as) the walk's
// (bk, bs) that are not among them, up to pool: the memory graph's
// typed, curated edges rank first; the walk's co-mentions fill the rest,
// scored below the last of them.
func appendWalk(ak []uint32, as []float64, bk []uint32, bs []float64, pool int) ([]uint32, []float64) {
	if len(ak) == 0 {
		return bk, bs
	}
	have := make(map[uint32]bool, len(ak))
	for _, k := range ak {
		have[k] = true
	}
	floor := as[len(as)-1]
	for i, k := range bk {
		if len(ak) >= pool {
			break
		}
		if !have[k] {
			ak = append(ak, k)
			as = append(as, floor*bs[i]/(bs[0]+bs[i]))
		}
	}
	return ak, as
}
