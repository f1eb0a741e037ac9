package lexical

import "slices"

// A subset index holds some of another index's documents, copied from it
// (CopyTo), so that a search restricted to those documents walks only
// their postings (SearchTermsVia) instead of every document's: the
// engine keeps one for the facts extraction reconciles against, which
// are few beside the conversation turns that share their words.

// CopyTo indexes in dst the document ix holds under key, as ix analysed
// it (the same terms, frequencies and length), replacing what dst holds
// there; when ix holds none, dst's is removed. dst must not be ix.
func (ix *Index) CopyTo(dst *Index, key uint32) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	dst.mu.Lock()
	defer dst.mu.Unlock()
	if !ix.has(key) {
		if dst.has(key) {
			dst.removeLocked(key)
			dst.maybeCompact()
		}
		return
	}
	tb := getTokens()
	defer putTokens(tb)
	tb.buf, tb.ends = tb.buf[:0], tb.ends[:0]
	ix.eachTerm(ix.docs[key], func(id uint32) {
		t, name := ix.view(id), ix.nameOf(id)
		for range t.tf(key) {
			tb.buf = append(tb.buf, name...)
			tb.ends = append(tb.ends, len(tb.buf))
		}
	})
	dst.addLocked(key, tb)
}

// tf is key's frequency in t (0 when it has no live posting there).
func (t *term) tf(key uint32) int {
	if i, ok := slices.BinarySearch(t.keys[:t.sorted], key); ok {
		return int(t.tfs[i])
	}
	for i := t.sorted; i < len(t.keys); i++ {
		if t.keys[i] == key {
			return int(t.tfs[i])
		}
	}
	return 0
}

// SearchTermsVia is SearchTerms over the documents of sub, a subset of
// ix's made with CopyTo, walking only sub's postings: the hits and their
// scores are those SearchTerms gives with an allow that also rejects
// every document outside sub, since the statistics (document count,
// average length, document frequencies) stay ix's. It also returns how
// many postings the search walked.
func (ix *Index) SearchTermsVia(sub *Index, terms []string, k int, allow Allow) ([]Hit, int) {
	hits, st := ix.searchTermsBits(terms, k, allow, nil, 0, sub)
	return hits, st.postings
}

// SearchTermsScopedVia is SearchTermsScoped over the documents of sub
// (see SearchTermsVia): the scope's statistics, the subset's postings.
// allow must admit only documents sub holds, or ones the caller does not
// mind missing: the others are not walked.
func (ix *Index) SearchTermsScopedVia(sub *Index, terms []string, k int, allow Allow, docs int) []Hit {
	hits, _ := ix.searchTermsBits(terms, k, allow, nil, docs, sub)
	return hits
}
