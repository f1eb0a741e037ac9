package lexical

import (
	"strings"
)

// FieldTerm names a structured value of a document (its speaker, say) as an
// index term: "\x00" + field + "\x00" + value. Analysis never produces a
// NUL byte, so a query's words never match a field term; the engine looks
// field terms up by name (Postings) instead.
func FieldTerm(field, value string) string {
	return "\x00" + field + "\x00" + value
}

// AddWithFields is Add with extra field terms (see FieldTerm) indexed with
// the text's terms. Each counts as one token of the document's length, as
// a word would.
func (ix *Index) AddWithFields(key uint32, text string, fields []string) {
	tb := getTokens()
	analyzeInto(tb, text, ix.stem)
	for _, f := range fields {
		if strings.HasPrefix(f, "\x00") {
			tb.buf = append(tb.buf, f...)
			tb.ends = append(tb.ends, len(tb.buf))
		}
	}
	ix.mu.Lock()
	ix.addLocked(key, tb)
	ix.mu.Unlock()
	putTokens(tb)
}

// Postings calls fn for each live document holding term, with the term's
// frequency in it, in no particular order. fn runs under the index's read
// lock and must not call back into the index.
func (ix *Index) Postings(term string, fn func(key uint32, tf int)) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	id, ok := ix.lookup(term)
	if !ok {
		return
	}
	t := ix.view(id)
	for i, k := range t.keys {
		if t.tfs[i] != 0 {
			fn(k, int(t.tfs[i]))
		}
	}
}

// PostingsIn calls fn for each live posting of term whose key is in the
// set, in list order.
func (ix *Index) PostingsIn(term string, in Bits, fn func(key uint32, tf int)) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	id, ok := ix.lookup(term)
	if !ok {
		return
	}
	t := ix.view(id)
	for i, k := range t.keys {
		if w := int(k >> 6); w < len(in) && in[w]&(1<<(k&63)) != 0 && t.tfs[i] != 0 {
			fn(k, int(t.tfs[i]))
		}
	}
}

// DocLen returns the length in tokens of the document under key (0 when
// there is none).
func (ix *Index) DocLen(key uint32) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if int(key) >= len(ix.docLen) {
		return 0
	}
	return int(ix.docLen[key])
}

// HasTerm reports whether the document under key holds term.
func (ix *Index) HasTerm(key uint32, term string) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	id, ok := ix.lookup(term)
	if !ok || !ix.has(key) {
		return false
	}
	d := ix.docs[key]
	p, x := ix.arena[d.off:], uint32(0)
	for range d.n {
		v, n := uvarint32(p)
		p, x = p[n:], x+v
		if x >= id {
			return x == id
		}
	}
	return false
}
