package cli_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/core"
)

// TestQueryMinRelevance: memgate query shows each hit's relevance and
// --min-relevance drops those below it, saying so when none is left.
func TestQueryMinRelevance(t *testing.T) {
	dir := t.TempDir()
	lexical := map[string]string{"MEMGATE_EMBEDDER": "none"}
	for _, c := range []string{"The staging database runs PostgreSQL 16", "The staging cluster is in Frankfurt"} {
		mustRun(t, run(t, dir, lexical, "write", "--type", "belief", "--content", c))
	}
	q := "which PostgreSQL version does the staging database run?"
	var all core.SearchResponse
	mustJSON(t, run(t, dir, lexical, "query", "--json", q), &all)
	if len(all.Results) != 2 || all.Results[0].Relevance <= all.Results[1].Relevance || all.Results[0].Relevance > 1 {
		t.Fatalf("relevance: %+v", all.Results)
	}
	var cut core.SearchResponse
	mid := (all.Results[0].Relevance + all.Results[1].Relevance) / 2
	mustJSON(t, run(t, dir, lexical, "query", "--json", "--min-relevance", strconv.FormatFloat(mid, 'g', -1, 64), q), &cut)
	if len(cut.Results) != 1 || cut.Results[0].Record.ID != all.Results[0].Record.ID {
		t.Fatalf("--min-relevance %v: %+v", mid, cut.Results)
	}
	r := run(t, dir, lexical, "query", "--min-relevance", "1", q)
	if r.code != 0 || !strings.Contains(r.stdout, "nothing with relevance >= 1") {
		t.Fatalf("min 1: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, lexical, "query", "--min-relevance", "2", q); r.code == 0 || !strings.Contains(r.stderr, "min_relevance") {
		t.Fatalf("min 2: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, lexical, "query", q); !strings.Contains(r.stdout, "relevance 0.") {
		t.Fatalf("text output lacks relevance: %s", r.stdout)
	}
}
