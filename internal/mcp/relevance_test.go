package mcp_test

import (
	"math"
	"testing"
)

// TestMemoryQueryRelevance: memory_query hits carry a relevance in
// [0, 1] and min_relevance drops those below it (down to none).
func TestMemoryQueryRelevance(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	var w writeResult
	ok(t, cs, "memory_write", map[string]any{"type": "belief", "content": "The staging database runs PostgreSQL 16 on db-2"}, &w)
	ok(t, cs, "memory_write", map[string]any{"type": "belief", "content": "The staging cluster is in Frankfurt"}, &w)
	type hit struct {
		Record    record   `json:"record"`
		Relevance *float64 `json:"relevance"`
	}
	var q struct {
		Results []hit `json:"results"`
	}
	ok(t, cs, "memory_query", map[string]any{"query": "which PostgreSQL version does the staging database run?"}, &q)
	if len(q.Results) != 2 {
		t.Fatalf("results %+v", q.Results)
	}
	for _, r := range q.Results {
		if r.Relevance == nil || !(*r.Relevance >= 0 && *r.Relevance <= 1) {
			t.Fatalf("relevance %v", r.Relevance)
		}
	}
	top, second := *q.Results[0].Relevance, *q.Results[1].Relevance
	if top <= second {
		t.Fatalf("the record matching every word is not more relevant: %v <= %v", top, second)
	}
	ok(t, cs, "memory_query", map[string]any{"query": "which PostgreSQL version does the staging database run?", "min_relevance": top}, &q)
	if len(q.Results) != 1 || *q.Results[0].Relevance != top {
		t.Fatalf("min_relevance %v: %+v", top, q.Results)
	}
	ok(t, cs, "memory_query", map[string]any{"query": "which PostgreSQL version does the staging database run?", "min_relevance": math.Nextafter(top, 2)}, &q)
	if len(q.Results) != 0 {
		t.Fatalf("min_relevance above every hit kept %+v", q.Results)
	}
	fails(t, cs, "memory_query", map[string]any{"query": "staging", "min_relevance": 3}, "invalid_argument")
}
