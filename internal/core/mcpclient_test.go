package core

import (
	"strings"
	"testing"
)

func TestClientAgentName(t *testing.T) {
	for _, tc := range []struct{ client, want string }{
		{"Claude Desktop", "mcp-claude-desktop"},
		{"claude-code", "mcp-claude-code"},
		{"cli", "mcp-cli"},
		{"system", "mcp-system"},
		{"operator", "mcp-operator"},
		{"", "mcp-client"},
		{"  ✨✨ ", "mcp-client"},
		{"Visual Studio Code / Copilot", "mcp-visual-studio-code-copilot"},
		{"a\x00b\nc", "mcp-a-b-c"},
		{"--x--", "mcp-x"},
		{strings.Repeat("ab", 60), "mcp-" + strings.Repeat("ab", 30)},
	} {
		got := ClientAgentName(tc.client)
		if got != tc.want {
			t.Errorf("ClientAgentName(%q) = %q, want %q", tc.client, got, tc.want)
		}
		if !validName(got) {
			t.Errorf("ClientAgentName(%q) = %q is not a valid agent name", tc.client, got)
		}
	}
}
