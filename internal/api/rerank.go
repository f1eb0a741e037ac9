package api

import "github.com/memgate/memgate/internal/knowledge"

// SetReranker turns the rerank stage of knowledge search on (r) or off
// (nil) for REST and the MCP tools this server serves: they share one
// knowledge service. The server's configuration sets it (docs/knowledge.md).
func (s *Server) SetReranker(r *knowledge.Reranker) { s.knowledge.SetReranker(r) }
