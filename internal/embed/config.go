package embed

import (
	"errors"
	"fmt"
)

// Kinds of embedder accepted by Config.Kind.
const (
	KindNone   = "none"
	KindLocal  = "local"
	KindOpenAI = "openai"
	KindUSE    = "use"
)

// Config selects and configures an embedder.
type Config struct {
	// Kind is "none" (or empty), "local", "openai" or "use".
	Kind string
	// Path is the word-vector file of the local embedder (word2vec text
	// format, plain or gzip), or for "use" the USE Lite model directory
	// (see LoadUSELite); "use" without a Path is the built-in model
	// (BuiltinUSELite).
	Path string
	// OpenAI configures the "openai" kind.
	OpenAI OpenAIConfig
}

// New builds the embedder cfg describes. For kind "none" it returns
// (nil, nil): a nil Embedder means lexical and graph retrieval only.
func New(cfg Config) (Embedder, error) {
	switch cfg.Kind {
	case "", KindNone:
		return nil, nil
	case KindLocal:
		if cfg.Path == "" {
			return nil, errors.New(`embed: embedder kind "local" needs Path, the word-vector file`)
		}
		s, err := LoadWordVectors(cfg.Path)
		if err != nil {
			return nil, err
		}
		return s, nil
	case KindUSE:
		if cfg.Path == "" {
			u, err := BuiltinUSELite()
			if err != nil {
				return nil, err
			}
			return u, nil
		}
		u, err := LoadUSELite(cfg.Path)
		if err != nil {
			return nil, err
		}
		return u, nil
	case KindOpenAI:
		o, err := NewOpenAI(cfg.OpenAI)
		if err != nil {
			return nil, err
		}
		return o, nil
	default:
		return nil, fmt.Errorf("embed: unknown embedder kind %q, want none, local or openai, or use", cfg.Kind)
	}
}
