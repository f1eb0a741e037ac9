package api

import (
	"net/http"
	"strings"

	"github.com/memgate/memgate/internal/memory"
)

// The A2A agent card (GET /.well-known/agent-card.json) lets agent
// platforms that discover agents by the Agent2Agent protocol find
// memgate and learn what it offers and how to authenticate. Field names
// are the AgentCard object of the protocol's JSON schema
// (a2aproject/A2A, specification/json/a2a.json, protocol 0.3): memgate
// does not speak A2A's task messages; the card points to its REST API
// (the preferred interface) and MCP endpoint, which are how its skills
// are used (docs/deploy.md, "Discovery").

// a2aProtocolVersion is the A2A protocol version the card follows.
const a2aProtocolVersion = "0.3.0"

type agentCard struct {
	ProtocolVersion      string                    `json:"protocolVersion"`
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	URL                  string                    `json:"url"`
	PreferredTransport   string                    `json:"preferredTransport"`
	AdditionalInterfaces []agentInterface          `json:"additionalInterfaces"`
	Provider             agentProvider             `json:"provider"`
	Version              string                    `json:"version"`
	DocumentationURL     string                    `json:"documentationUrl"`
	Capabilities         agentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]securityScheme `json:"securitySchemes"`
	Security             []map[string][]string     `json:"security"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []agentSkill              `json:"skills"`
	ExtendedCard         bool                      `json:"supportsAuthenticatedExtendedCard"`
}

type agentInterface struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

type agentProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

type agentCapabilities struct {
	Streaming              bool `json:"streaming"`
	PushNotifications      bool `json:"pushNotifications"`
	StateTransitionHistory bool `json:"stateTransitionHistory"`
}

// securityScheme is the HTTP authentication scheme object (OpenAPI 3.0's,
// which A2A adopts).
type securityScheme struct {
	Type         string `json:"type"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	Description  string `json:"description,omitempty"`
}

type agentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

// agentSkills are memgate's capabilities as an agent sees them; each
// names the REST route and MCP tool that performs it.
var agentSkills = []agentSkill{
	{ID: "remember", Name: "Remember", Description: "Write a memory record through the gate (PII, secrets and policy screening, approvals, audit): POST /v1/records, MCP tool memory_write.",
		Tags: []string{"memory", "write", "governance"}, Examples: []string{"Remember that the staging database is db-staging-2."}},
	{ID: "recall", Name: "Recall", Description: "Hybrid search over the records the caller may read (lexical, dense and graph signals, explained and cited): POST /v1/search, MCP tool memory_query.",
		Tags: []string{"memory", "search", "retrieval"}, Examples: []string{"What do we know about the staging database?"}},
	{ID: "context", Name: "Assemble context", Description: "One bounded, sectioned context for a task: constraints, procedures, knowledge, graph facts and recent activity: POST /v1/context, MCP tool memory_context.",
		Tags: []string{"memory", "context"}},
	{ID: "forget", Name: "Forget", Description: "Forget a record or a whole subject, leaving tombstones and an audit trail: DELETE /v1/records/{id}, POST /v1/graph/forget_subject, MCP tool memory_forget.",
		Tags: []string{"memory", "erasure", "governance"}},
	{ID: "memory-files", Name: "Memory files", Description: "Versioned memory files and the Claude memory tool: /v1/files, /v1/memory-tool, /v1/memory_stores, MCP tool memory.",
		Tags: []string{"memory", "files"}},
	{ID: "graph", Name: "Knowledge graph", Description: "Nodes, edges, neighbors and paths of the memory graph: /v1/graph, MCP tools graph_*.",
		Tags: []string{"memory", "graph"}},
}

// agentCard serves the A2A agent card. It is public, as discovery
// documents are, and holds nothing about the workspace's contents.
func (s *Server) agentCard(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	base := baseURL(r)
	w.Header().Set("Cache-Control", "public, max-age=300")
	return writeJSON(w, http.StatusOK, agentCard{
		ProtocolVersion: a2aProtocolVersion,
		Name:            "memgate",
		Description: "Governed memory for AI agents: every write passes a gate and the audit log, every read the same access check. " +
			"Use it over REST (" + base + "/v1, described by " + base + "/openapi.json) or MCP (" + base + "/mcp).",
		URL:                  base + "/v1",
		PreferredTransport:   "HTTP+JSON",
		AdditionalInterfaces: []agentInterface{{URL: base + "/v1", Transport: "HTTP+JSON"}},
		Provider:             agentProvider{Organization: "memgate", URL: "https://github.com/memgate/memgate"},
		Version:              s.version,
		DocumentationURL:     base + "/openapi.json",
		Capabilities:         agentCapabilities{Streaming: false},
		SecuritySchemes: map[string]securityScheme{"bearerAuth": {Type: "http", Scheme: "bearer", BearerFormat: "memgate token",
			Description: "An agent or operator token (memgate agents create); operators may also use operator-only routes."}},
		Security:           []map[string][]string{{"bearerAuth": {}}},
		DefaultInputModes:  []string{"application/json", "text/plain"},
		DefaultOutputModes: []string{"application/json"},
		Skills:             agentSkills,
	})
}

// baseURL is the URL clients reached this server at: the Host header, and
// https when the request came over TLS or a proxy says so
// (X-Forwarded-Proto). A Host that is not a plain host[:port] is not
// repeated back.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	host := r.Host
	if host == "" || len(host) > 255 || strings.ContainsFunc(host, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune(".-:[]_", c))
	}) {
		host = "localhost"
	}
	return scheme + "://" + host
}
