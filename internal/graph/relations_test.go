package graph

import (
	"maps"
	"slices"
	"testing"
)

// specRelations is SPEC §8's table, copied by hand.
var specRelations = map[string][]string{
	"causal":     {"CAUSES", "TRIGGERS", "LEADS_TO", "PREVENTS"},
	"solution":   {"SOLVES", "ADDRESSES", "ALTERNATIVE_TO", "IMPROVES"},
	"context":    {"OCCURS_IN", "APPLIES_TO", "WORKS_WITH", "REQUIRES"},
	"learning":   {"BUILDS_ON", "CONTRADICTS", "CONFIRMS"},
	"similarity": {"SIMILAR_TO", "VARIANT_OF", "RELATED_TO"},
	"workflow":   {"FOLLOWS", "DEPENDS_ON", "ENABLES", "BLOCKS"},
	"quality":    {"EFFECTIVE_FOR", "PREFERRED_OVER", "DEPRECATED_BY"},
	"structure":  {"MENTIONS", "HAS_FACT", "PREFERS", "USES", "PART_OF", "SUPERSEDES", "DERIVED_FROM"},
}

func TestRelationsMatchSpec(t *testing.T) {
	if !maps.EqualFunc(Relations, specRelations, slices.Equal[[]string]) {
		t.Fatalf("Relations = %v\nwant SPEC §8 %v", Relations, specRelations)
	}
	if len(Relations) != 8 {
		t.Errorf("%d categories, want 8", len(Relations))
	}
	list := RelationList()
	// SPEC §8 lists 4+4+4+3+3+4+3+7 = 32 relations.
	if len(list) != 32 {
		t.Errorf("RelationList has %d relations, want 32", len(list))
	}
	if !slices.IsSorted(list) {
		t.Errorf("RelationList not sorted: %v", list)
	}
	if len(slices.Compact(slices.Clone(list))) != len(list) {
		t.Errorf("RelationList has duplicates: %v", list)
	}
	for cat, rs := range specRelations {
		for _, r := range rs {
			if !ValidRelation(r) {
				t.Errorf("ValidRelation(%q) = false", r)
			}
			if got := RelationCategory(r); got != cat {
				t.Errorf("RelationCategory(%q) = %q, want %q", r, got, cat)
			}
		}
	}
	for _, r := range []string{"", "causes", "CAUSE", "IS_A", "LEADS TO", " CAUSES"} {
		if ValidRelation(r) {
			t.Errorf("ValidRelation(%q) = true", r)
		}
	}
	list[0] = "MUTATED"
	if RelationList()[0] == "MUTATED" {
		t.Error("RelationList returns shared storage")
	}
}

func TestNormalizeRelation(t *testing.T) {
	cases := []struct {
		in   string
		want string
		ok   bool
	}{
		{"LEADS_TO", "LEADS_TO", true},
		{"leads to", "LEADS_TO", true},
		{" Leads-To ", "LEADS_TO", true},
		{"has_fact", "HAS_FACT", true},
		{"is a", "IS_A", false},
	}
	for _, c := range cases {
		got, ok := NormalizeRelation(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("NormalizeRelation(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
