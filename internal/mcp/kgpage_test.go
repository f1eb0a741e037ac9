package mcp_test

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// contentText is a content's text ("" when it is no text).
func contentText(c sdk.Content) string {
	if tc, ok := c.(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
}

// firstText is a result's first text content (the reference's JSON).
func firstText(res *sdk.CallToolResult) string { return contentText(res.Content[0]) }

// TestReadGraphCursor: read_graph with a limit names the next page's
// cursor in _meta (and in a text note), and the cursor continues where
// the page ended; search_nodes answers a question nothing contains with
// ranked entities, saying so in _meta.
func TestReadGraphCursor(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	ok(t, cs, "create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "Ana", "entityType": "person", "observations": []string{"maintains the billing service"}},
		map[string]any{"name": "Ben", "entityType": "person", "observations": []string{"plays chess"}},
	}}, nil)
	res := ok(t, cs, "read_graph", map[string]any{"limit": 1}, nil)
	cursor, _ := res.Meta["memgate/next_cursor"].(string)
	if cursor == "" || !strings.Contains(firstText(res), "Ana") || strings.Contains(firstText(res), "Ben") {
		t.Fatalf("first page: meta %v, text %s", res.Meta, firstText(res))
	}
	if note := res.Content[len(res.Content)-1]; !strings.Contains(contentText(note), cursor) {
		t.Fatalf("the note does not name the cursor: %v", contentText(note))
	}
	res = ok(t, cs, "read_graph", map[string]any{"limit": 1, "cursor": cursor}, nil)
	if _, more := res.Meta["memgate/next_cursor"]; more || !strings.Contains(firstText(res), "Ben") || strings.Contains(firstText(res), "Ana") {
		t.Fatalf("second page: meta %v, text %s", res.Meta, firstText(res))
	}
	res = ok(t, cs, "search_nodes", map[string]any{"query": "who maintains billing?"}, nil)
	if n, _ := res.Meta["memgate/ranked"].(float64); n != 1 || !strings.Contains(firstText(res), "Ana") {
		t.Fatalf("question: meta %v, text %s", res.Meta, firstText(res))
	}
}
