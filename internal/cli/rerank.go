package cli

import (
	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/knowledge"
)

// newReranker builds the optional rerank stage of knowledge search from
// the server's configuration: nil (off) unless --rerank-url is set. Its
// API key comes only from the environment (MEMGATE_RERANK_API_KEY, or a
// file named by MEMGATE_RERANK_API_KEY_FILE), never from flags.
func newReranker(cfg *config.Config, getenv func(string) string) (*knowledge.Reranker, error) {
	if cfg.RerankURL == "" {
		return nil, nil
	}
	key, err := embed.APIKeyFromEnv("MEMGATE_RERANK_API_KEY", getenv, nil)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidArgument, err, "rerank API key: %v", err)
	}
	r, err := knowledge.NewReranker(knowledge.RerankConfig{URL: cfg.RerankURL, Shape: cfg.RerankShape, Model: cfg.RerankModel,
		APIKey: key, Timeout: cfg.RerankTimeout, TopN: cfg.RerankTopN})
	if err != nil {
		return nil, fault.Wrap(fault.InvalidArgument, err, "rerank: %v", err)
	}
	return r, nil
}
