package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/memgate/memgate/internal/config"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/store"
)

// settingEmbedder is the database setting that remembers the embedder a
// data directory's vectors are made with (docs/embeddings.md).
const settingEmbedder = "embedder"

// embedderSetting is the stored form of an embedder: enough to build it
// again without flags (Kind, Path, URL, Model) and its identity (ID, the
// embedder's Model(), and Dim). The API key is never stored.
type embedderSetting struct {
	Kind  string `json:"kind"`
	Path  string `json:"path,omitempty"`
	URL   string `json:"url,omitempty"`
	Model string `json:"model,omitempty"`
	ID    string `json:"id"`
	Dim   int    `json:"dim"`
}

// describe names the embedder for messages.
func (s embedderSetting) describe() string {
	if s.Dim > 0 {
		return fmt.Sprintf("%s (%d dimensions)", s.ID, s.Dim)
	}
	return s.ID
}

// probeTimeout bounds the start-up request that asks a remote embedder for
// its dimension: an endpoint that is down or slow must not hold up start.
var probeTimeout = 3 * time.Second

// readEmbedderSetting returns the stored embedder, ok false if none.
func readEmbedderSetting(ctx context.Context, st store.Reader) (embedderSetting, bool, error) {
	v, err := st.GetSetting(ctx, settingEmbedder)
	if errors.Is(err, store.ErrNotFound) {
		return embedderSetting{}, false, nil
	}
	if err != nil {
		return embedderSetting{}, false, fault.Wrap(fault.Unavailable, err, "cannot read the data directory's settings")
	}
	var s embedderSetting
	if err := json.Unmarshal([]byte(v), &s); err != nil || s.Kind == "" {
		return embedderSetting{}, false, fault.New(fault.Internal, "the data directory's embedder setting is not readable")
	}
	return s, true, nil
}

func writeEmbedderSetting(ctx context.Context, st store.Store, s embedderSetting) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := st.Tx(ctx, func(tx store.Tx) error { return tx.PutSetting(ctx, settingEmbedder, string(b)) }); err != nil {
		return fault.Wrap(fault.Unavailable, err, "cannot store the data directory's embedder setting")
	}
	return nil
}

// requestedEmbedder is the embedder cfg asks for; ok false when no
// --embedder (or MEMGATE_EMBEDDER) was given.
func requestedEmbedder(cfg *config.Config) (embedderSetting, bool) {
	if cfg.Embedder == "" {
		return embedderSetting{}, false
	}
	s := embedderSetting{Kind: cfg.Embedder, Dim: cfg.EmbedderDim}
	switch cfg.Embedder {
	case embed.KindLocal, embed.KindUSE:
		if cfg.EmbedderPath != "" {
			s.Path = cfg.EmbedderPath
			if abs, err := filepath.Abs(s.Path); err == nil {
				s.Path = abs
			}
		}
	case embed.KindOpenAI:
		s.URL, s.Model = cfg.EmbedderURL, cfg.EmbedderModel
	}
	return s, true
}

// resolveEmbedder builds the embedder of a data directory. Without
// --embedder it is the one the directory remembers, else the built-in
// USE-Lite; the choice is stored on first use. An --embedder that differs
// from the remembered one is refused with the re-embed command to run;
// --embedder none is always allowed (lexical and graph search only).
func resolveEmbedder(ctx context.Context, env Env, cfg *config.Config, st store.Store, log *slog.Logger) (embed.Embedder, error) {
	if cfg.Embedder == embed.KindNone {
		return nil, nil
	}
	stored, have, err := readEmbedderSetting(ctx, st)
	if err != nil {
		return nil, err
	}
	want, given := requestedEmbedder(cfg)
	switch {
	case !given && have:
		want = stored
		if cfg.EmbedderDim > 0 && stored.Dim > 0 && cfg.EmbedderDim != stored.Dim {
			return nil, mismatchError(cfg, stored, fmt.Sprintf("%d dimensions", cfg.EmbedderDim))
		}
	case !given:
		want = embedderSetting{Kind: embed.KindUSE}
	}
	if want.Kind == embed.KindOpenAI && want.Dim == 0 && have && stored.Kind == embed.KindOpenAI && stored.Model == want.Model {
		want.Dim = stored.Dim
	}
	if want.Kind == embed.KindOpenAI && want.Dim == 0 {
		// Not known yet (the endpoint was down whenever a command
		// started): the vectors the embedding job stored since know it.
		if want.Dim, err = storedVectorDim(ctx, st, "openai:"+want.Model); err != nil {
			return nil, err
		}
	}
	emb, err := buildEmbedder(ctx, want, env.Getenv, log)
	if err != nil {
		return nil, err
	}
	want.ID, want.Dim = emb.Model(), emb.Dim()
	if have {
		if want.ID != stored.ID || (stored.Dim > 0 && want.Dim > 0 && want.Dim != stored.Dim) {
			return nil, mismatchError(cfg, stored, want.describe())
		}
		if want.Dim == 0 {
			want.Dim = stored.Dim
		}
		if want == stored {
			return emb, nil
		}
	}
	if err := writeEmbedderSetting(ctx, st, want); err != nil {
		return nil, err
	}
	return emb, nil
}

// errFound stops a scan at its first row.
var errFound = errors.New("found")

// storedVectorDim is the length of a stored vector of model, 0 if none.
func storedVectorDim(ctx context.Context, st store.Reader, model string) (int, error) {
	dim := 0
	err := st.ScanVectors(ctx, model, func(_, _ string, vec []float32) error {
		dim = len(vec)
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return 0, fault.Wrap(fault.Unavailable, err, "cannot read stored vectors")
	}
	return dim, nil
}

func mismatchError(cfg *config.Config, stored embedderSetting, asked string) error {
	where := cfg.DataDir
	if cfg.DatabaseURL != "" {
		where = "the database"
	}
	cmd := "memgate reembed --embedder " + cfg.Embedder
	if cfg.Embedder == "" {
		cmd += stored.Kind
	}
	for _, f := range []struct{ flag, v string }{
		{"--embedder-path", cfg.EmbedderPath}, {"--embedder-url", cfg.EmbedderURL}, {"--embedder-model", cfg.EmbedderModel},
	} {
		if u, err := url.Parse(f.v); f.flag == "--embedder-url" && (err != nil || u.User != nil) {
			f.v = "URL" // never echo credentials
		}
		if f.v != "" {
			cmd += " " + f.flag + " " + f.v
		}
	}
	if cfg.EmbedderDim > 0 {
		cmd += fmt.Sprintf(" --embedder-dim %d", cfg.EmbedderDim)
	}
	return fault.New(fault.Conflict, fmt.Sprintf(
		"%s was created with the embedder %s; this command asks for %s. Drop --embedder (and MEMGATE_EMBEDDER) to use the directory's embedder, "+
			"or switch the directory to the new one with: %s (resumable)",
		where, stored.describe(), asked, cmd))
}

// buildEmbedder makes the embedder s describes. A remote embedder whose
// dimension is not known yet is asked for it with one short request; if
// the endpoint is down the embedder starts anyway (search reports dense
// as degraded and the embedding job fills vectors in once it answers),
// but an endpoint that answers with another dimension than the expected
// one is an error.
func buildEmbedder(ctx context.Context, s embedderSetting, getenv func(string) string, log *slog.Logger) (embed.Embedder, error) {
	ec := embed.Config{Kind: s.Kind, Path: s.Path}
	if s.Kind == embed.KindOpenAI {
		key, err := embed.APIKeyFromEnv("MEMGATE_EMBEDDER_API_KEY", getenv, os.ReadFile)
		if err != nil {
			return nil, fault.Wrap(fault.InvalidArgument, err, "embedder API key: %v", err)
		}
		ec.OpenAI = embed.OpenAIConfig{BaseURL: s.URL, Model: s.Model, APIKey: key, Dim: s.Dim}
	}
	emb, err := embed.New(ec)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidArgument, err, "embedder: %v", err)
	}
	if s.Kind != embed.KindOpenAI {
		return emb, nil
	}
	// The probe runs on a client of its own that learns the dimension,
	// so that a wrong one is reported as such.
	pc := ec.OpenAI
	pc.Dim, pc.MaxRetries, pc.Timeout = 0, -1, probeTimeout
	probe, err := embed.NewOpenAI(pc)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidArgument, err, "embedder: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if _, err := probe.Embed(pctx, []string{"memgate dimension probe"}); err != nil {
		if log != nil {
			log.Warn("the embedder does not answer; starting with lexical and graph search, vectors are filled in once it does",
				"model", emb.Model(), "err", err)
		}
		return emb, nil
	}
	switch got := probe.Dim(); {
	case s.Dim == 0:
		ec.OpenAI.Dim = got
		return embed.New(ec)
	case got != s.Dim:
		return nil, fault.New(fault.InvalidArgument, fmt.Sprintf(
			"embedder: %s answers with %d-dimensional vectors, expected %d (--embedder-dim or the data directory's setting)", emb.Model(), got, s.Dim))
	}
	return emb, nil
}
