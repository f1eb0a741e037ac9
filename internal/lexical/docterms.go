package lexical

import "bytes"

// WordTerms lists the word terms (not field terms, see FieldTerm) that
// document key holds, in term-id order; nil when it is not indexed. Like
// FieldTerms it reads the document's own term list, so its cost is the
// document's length.
func (ix *Index) WordTerms(key uint32) []string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.has(key) {
		return nil
	}
	var out []string
	ix.eachTerm(ix.docs[key], func(id uint32) {
		if n := ix.nameOf(id); !bytes.HasPrefix(n, []byte{0}) {
			out = append(out, string(n))
		}
	})
	return out
}
