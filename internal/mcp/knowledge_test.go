package mcp_test

import (
	"strings"
	"testing"
)

// TestKnowledgeTools: an agent ingests a document over MCP, finds it
// with a res:// citation and reads exactly the cited lines; an unchanged
// re-ingest writes nothing.
func TestKnowledgeTools(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	doc := "# Ops\n\nGeneral.\n\n## Rotate certificates\n\nRun certctl rotate --all every ninety days.\n"
	var res struct {
		ResourceID string `json:"resource_id"`
		Outcome    string `json:"outcome"`
		Added      int    `json:"added"`
	}
	ok(t, cs, "resource_ingest", map[string]any{"uri": "https://wiki.example/ops.md", "content": doc}, &res)
	if res.Outcome != "created" || res.Added != 2 {
		t.Fatalf("ingest: %+v", res)
	}
	ok(t, cs, "resource_ingest", map[string]any{"uri": "https://wiki.example/ops.md", "content": doc}, &res)
	if res.Outcome != "unchanged" {
		t.Fatalf("re-ingest: %+v", res)
	}
	var found struct {
		Results []struct {
			Citation string `json:"citation"`
		} `json:"results"`
	}
	ok(t, cs, "resource_search", map[string]any{"query": "how often are certificates rotated"}, &found)
	if len(found.Results) == 0 || !strings.HasSuffix(found.Results[0].Citation, "#Ops > Rotate certificates#L5-L7") {
		t.Fatalf("search: %+v", found)
	}
	var src struct {
		Text string `json:"text"`
	}
	ok(t, cs, "resource_cite", map[string]any{"citation": found.Results[0].Citation}, &src)
	if src.Text != "## Rotate certificates\n\nRun certctl rotate --all every ninety days." {
		t.Fatalf("cite: %q", src.Text)
	}
	fails(t, cs, "resource_cite", map[string]any{"citation": "mem://x"}, "invalid_argument")
	fails(t, cs, "resource_ingest", map[string]any{"content": "x"}, "invalid_argument")
}
