package mcp_test

import (
	"testing"
)

func TestMemoryToolMCP(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	res := call(t, cs, "memory", map[string]any{"command": "create", "path": "/memories/notes.md", "file_text": "one\ntwo\n"})
	if res.IsError || text(res) != "File created successfully at: /memories/notes.md" {
		t.Fatalf("create: %v %q", res.IsError, text(res))
	}
	res = call(t, cs, "memory", map[string]any{"command": "view", "path": "/memories/notes.md", "view_range": []int{2, 2}})
	if res.IsError || text(res) != "Here's the content of /memories/notes.md with line numbers:\n     2\ttwo" {
		t.Fatalf("view: %q", text(res))
	}
	res = call(t, cs, "memory", map[string]any{"command": "str_replace", "path": "/memories/notes.md", "old_str": "three", "new_str": "3"})
	if !res.IsError || text(res) != "No replacement was performed, old_str `three` did not appear verbatim in /memories/notes.md." {
		t.Fatalf("str_replace: %v %q", res.IsError, text(res))
	}
	res = call(t, cs, "memory", map[string]any{"command": "view", "path": "/memories/../../etc"})
	if !res.IsError || text(res) != "Path /memories/../../etc would escape /memories directory" {
		t.Fatalf("traversal: %q", text(res))
	}
	// A read_only agent gets the refusal as an error result.
	res = call(t, h.connect("ro"), "memory", map[string]any{"command": "create", "path": "/memories/x.md", "file_text": "x"})
	if !res.IsError {
		t.Fatalf("read_only create succeeded: %q", text(res))
	}
}

func TestBlockTools(t *testing.T) {
	h := newHarness(t)
	cs := h.connect("std")
	var b struct {
		Path          string `json:"path"`
		Content       string `json:"content"`
		ContentSHA256 string `json:"content_sha256"`
		Version       int    `json:"version"`
		Pinned        bool   `json:"pinned"`
		Exists        bool   `json:"exists"`
	}
	ok(t, cs, "block_read", map[string]any{"name": "MEMORY.md"}, &b)
	if b.Exists || b.Path != "/memories/MEMORY.md" {
		t.Fatalf("read of a missing block: %+v", b)
	}
	ok(t, cs, "block_append", map[string]any{"name": "MEMORY.md", "text": "- likes tea"}, &b)
	if !b.Exists || !b.Pinned || b.Version != 1 || b.Content != "- likes tea" {
		t.Fatalf("append creates: %+v", b)
	}
	ok(t, cs, "block_append", map[string]any{"name": "MEMORY.md", "text": "- works remotely\n"}, &b)
	if b.Content != "- likes tea\n- works remotely\n" || b.Version != 2 {
		t.Fatalf("append: %+v", b)
	}
	fails(t, cs, "block_replace", map[string]any{"name": "MEMORY.md", "content": "x", "expected_content_sha256": "00"}, "conflict")
	ok(t, cs, "block_replace", map[string]any{"name": "/memories/MEMORY.md", "content": "fresh\n", "expected_content_sha256": b.ContentSHA256}, &b)
	ok(t, cs, "block_read", map[string]any{"name": "MEMORY.md"}, &b)
	if b.Content != "fresh\n" || b.Version != 3 {
		t.Fatalf("replace: %+v", b)
	}
	fails(t, cs, "block_read", map[string]any{"name": "../etc/passwd"}, "invalid_argument")
	fails(t, h.connect("ro"), "block_append", map[string]any{"name": "MEMORY.md", "text": "x"}, "permission_denied")
}
