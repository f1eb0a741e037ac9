package graph

import (
	"slices"
	"strings"
)

// Relations is the edge relation enum of SPEC §8, by category. The service
// validates every edge it writes against it (ValidRelation); the index
// itself stores any relation string it is given.
//
// It is a table, not configuration: do not modify it at run time.
var Relations = map[string][]string{
	"causal":     {"CAUSES", "TRIGGERS", "LEADS_TO", "PREVENTS"},
	"solution":   {"SOLVES", "ADDRESSES", "ALTERNATIVE_TO", "IMPROVES"},
	"context":    {"OCCURS_IN", "APPLIES_TO", "WORKS_WITH", "REQUIRES"},
	"learning":   {"BUILDS_ON", "CONTRADICTS", "CONFIRMS"},
	"similarity": {"SIMILAR_TO", "VARIANT_OF", "RELATED_TO"},
	"workflow":   {"FOLLOWS", "DEPENDS_ON", "ENABLES", "BLOCKS"},
	"quality":    {"EFFECTIVE_FOR", "PREFERRED_OVER", "DEPRECATED_BY"},
	"structure":  {"MENTIONS", "HAS_FACT", "PREFERS", "USES", "PART_OF", "SUPERSEDES", "DERIVED_FROM"},
}

// relationList and relationCategory are derived once from Relations.
var relationList, relationCategory = func() ([]string, map[string]string) {
	cat := make(map[string]string)
	var all []string
	for c, rs := range Relations {
		for _, r := range rs {
			cat[r] = c
			all = append(all, r)
		}
	}
	slices.Sort(all)
	return all, cat
}()

// ValidRelation reports whether r is one of the relations of SPEC §8,
// spelled exactly (upper case). Use NormalizeRelation first to accept other
// spellings from agents.
func ValidRelation(r string) bool {
	_, ok := relationCategory[r]
	return ok
}

// RelationList returns every valid relation, sorted, for error messages and
// schemas. The caller owns the returned slice.
func RelationList() []string { return slices.Clone(relationList) }

// RelationCategory returns the category of a valid relation ("causal", ...)
// or "" when r is not valid.
func RelationCategory(r string) string { return relationCategory[r] }

// NormalizeRelation maps an agent's spelling ("leads to", "Leads-To",
// " LEADS_TO ") to the canonical relation and reports whether it is valid.
func NormalizeRelation(s string) (string, bool) {
	s = strings.TrimSpace(s)
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return '_'
		}
		return r
	}, strings.ToUpper(s))
	return s, ValidRelation(s)
}
