package cli

import (
	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/core"
)

// newExtraction builds the extraction options; the LLM key comes only from
// the environment (or a file it names), never from flags.
func newExtraction(cfg *config.Config, getenv func(string) string) (core.ExtractionOptions, error) {
	return core.ExtractionOptions{}, nil
}
