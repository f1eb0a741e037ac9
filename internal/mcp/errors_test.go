package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/mcp"
	"github.com/memgate/memgate/internal/memory"
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

// Over stdio too, protocol errors carry fixed messages, never the params
// or the tool name sent.
func TestStdioProtocolErrorsDoNotEcho(t *testing.T) {
	h := newHarness(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- mcp.ServeStdio(ctx, h.svc, memory.DefaultWorkspace, "std", inR, outW, mcp.Options{})
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		<-done
	})
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20) // tools/list outgrew the default 64 KiB line
	send := func(msg string) string {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no answer: %v", lines.Err())
		}
		return lines.Text()
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"sk-secret-params-value"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sk-secret-tool-name","arguments":{}}}`,
	} {
		got := send(msg)
		if strings.Contains(got, "sk-secret") || !strings.Contains(got, `"code":-32602`) {
			t.Fatalf("answer to %s: %s", msg, got)
		}
	}
	// Ordinary answers pass unchanged.
	if got := send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`); !strings.Contains(got, "memory_write") {
		t.Fatalf("tools/list: %s", got)
	}
}
