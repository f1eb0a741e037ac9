package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// Tool errors name the argument at fault and never repeat what was sent:
// the SDK's own schema messages quote the value.
func TestToolErrorsNameTheArgumentNotTheValue(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	const secret = "sk-secretvalue123"
	for _, c := range []struct {
		tool string
		args any
		want string
	}{
		{"memory_write", map[string]any{"type": secret, "content": "x"}, "invalid_argument: type: must be one of belief, decision"},
		{"memory_write", map[string]any{"type": "belief", "content": 12345678}, "invalid_argument: content: must be of type string"},
		{"memory_write", map[string]any{"type": "belief", "content": "x", "entities": secret}, "invalid_argument: entities: must be of type array"},
		{"memory_write", map[string]any{"type": "belief", "content": "x", secret: 1}, "invalid_argument: arguments: has arguments the tool does not take"},
		{"memory_write", map[string]any{"type": "belief", "content": "x", "valid_from": secret}, "invalid_argument: valid_from: must be an RFC 3339 time"},
		{"memory_write", map[string]any{"content": secret}, "invalid_argument: arguments: is missing required arguments type"},
		{"read_graph", map[string]any{"limit": secret}, "invalid_argument: limit: must be of type integer"},
		// Invalid text is refused, not stored as U+FFFD.
		{"memory_write", json.RawMessage(`{"type":"belief","content":"lone \ud800 surrogate ` + secret + `"}`), "invalid_argument: content: must be valid UTF-8"},
		{"memory_write", json.RawMessage("{\"type\":\"belief\",\"content\":\"bad \xff byte " + secret + "\"}"), "invalid_argument: content: must be valid UTF-8"},
		{"create_entities", json.RawMessage(`{"entities":[{"name":"A","entityType":"t","observations":["ok","\udc00 ` + secret + `"]}]}`),
			"invalid_argument: entities[0].observations[1]: must be valid UTF-8"},
	} {
		res := call(t, cs, c.tool, c.args)
		got := text(res)
		if !res.IsError || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s(%s): %q, want prefix %q", c.tool, c.args, got, c.want)
		}
		if strings.Contains(got, "secretvalue") {
			t.Errorf("%s: error echoes the value: %q", c.tool, got)
		}
	}
}
