package lexical

import (
	"bytes"
	"strings"
)

// FieldTerms lists the field terms of field (see FieldTerm) that document
// key holds, in term-id order; nil when it holds none or is not indexed.
// It reads the document's own term list, so its cost is the document's
// length, not the index's.
func (ix *Index) FieldTerms(key uint32, field string) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.has(key) {
		return nil
	}
	prefix := FieldTerm(field, "")
	var out []string
	ix.eachTerm(ix.docs[key], func(id uint32) {
		if n := ix.nameOf(id); bytes.HasPrefix(n, []byte(prefix)) {
			out = append(out, string(n))
		}
	})
	return out
}

// AddWithKeys is AddWithFields with, besides, key terms (field terms too)
// that do not count towards the document's length: links and names
// derived from the text, which should make the document findable by them
// without making it longer, and so less relevant, for BM25's length
// normalisation of its words.
func (ix *Index) AddWithKeys(key uint32, text string, fields, keys []string) {
	tb := getTokens()
	analyzeInto(tb, text, ix.stem)
	extra := 0
	for i, list := range [][]string{fields, keys} {
		for _, f := range list {
			if strings.HasPrefix(f, "\x00") {
				tb.buf = append(tb.buf, f...)
				tb.ends = append(tb.ends, len(tb.buf))
				if i == 1 {
					extra++
				}
			}
		}
	}
	ix.mu.Lock()
	ix.addLocked(key, tb)
	if ix.has(key) && extra > 0 {
		n := ix.docLen[key] - uint32(extra)
		ix.total -= uint64(extra)
		ix.docLen[key] = n
		ix.lenCode[key] = uint8(min(n, 255))
	}
	ix.mu.Unlock()
	putTokens(tb)
}
