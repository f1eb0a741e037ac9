package lexical

import "strings"

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
		if n := ix.terms[id].name; strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	})
	return out
}
