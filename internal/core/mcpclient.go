package core

import (
	"context"
	"strings"

	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// clientAgentPrefix starts the name of every agent created for an MCP
// client. A client names itself (initialize's clientInfo.name, which
// nothing authenticates), so the prefix keeps that name from ever picking
// an agent an operator created, or a name memgate reserves (cli, system,
// operator, ...).
const clientAgentPrefix = "mcp-"

// ClientAgentName is the agent name of an MCP client that calls itself
// client: "mcp-" and the name in lower case, every run of characters
// other than letters, digits, '_', '.' and '-' made one '-', at most 64
// characters in all; "mcp-client" for a client without a usable name.
func ClientAgentName(client string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(client) {
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-' {
			b.WriteRune(c)
			dash = c == '-'
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.Trim(b.String(), "-._")
	if name == "" {
		name = "client"
	}
	name = clientAgentPrefix + name
	if len(name) > 64 {
		name = strings.TrimRight(name[:64], "-._")
	}
	return name
}

// ClientAgent is the agent a stdio MCP session started without --agent
// acts as: the one named ClientAgentName(client), created on first use
// with the policy's mcp.client_trust by the operator the CLI acts as
// (audited as agent.create, like `memgate agents create`). A revoked one stays
// revoked.
func (s *Service) ClientAgent(ctx context.Context, ws, client string) (memory.Principal, error) {
	name := ClientAgentName(client)
	p, err := s.LocalAgent(ctx, ws, name)
	if fault.CodeOf(err) != fault.NotFound {
		return p, err
	}
	op, err := s.CLIOperator(ctx, ws)
	if err != nil {
		return memory.Principal{}, err
	}
	_, err = s.createPrincipal(ctx, op, memory.KindAgent, name, s.policy.MCP.ClientTrust)
	if err != nil && fault.CodeOf(err) != fault.Conflict { // Conflict: another session created it first
		return memory.Principal{}, err
	}
	return s.LocalAgent(ctx, ws, name)
}
