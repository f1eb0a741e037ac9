package cli

import (
	"os"

	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/extract"
	"github.com/memgate/memgate/internal/fault"
)

// newExtraction builds the extraction options: patterns always, and the
// LLM extractor when --llm-url and --llm-model are set. Its API key comes
// only from the environment (MEMGATE_LLM_API_KEY, or a file named by
// MEMGATE_LLM_API_KEY_FILE), never from flags; a local model may need none.
func newExtraction(cfg *config.Config, getenv func(string) string) (core.ExtractionOptions, error) {
	if cfg.LLMURL == "" {
		return core.ExtractionOptions{}, nil
	}
	key, err := embed.APIKeyFromEnv("MEMGATE_LLM_API_KEY", getenv, os.ReadFile)
	if err != nil {
		return core.ExtractionOptions{}, fault.Wrap(fault.InvalidArgument, err, "LLM API key: %v", err)
	}
	l, err := extract.NewLLM(extract.LLMConfig{BaseURL: cfg.LLMURL, Model: cfg.LLMModel, APIKey: key})
	if err != nil {
		return core.ExtractionOptions{}, fault.Wrap(fault.InvalidArgument, err, "LLM extractor: %v", err)
	}
	return core.ExtractionOptions{LLM: l}, nil
}
