package knowledge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Rerank API shapes.
const (
	// ShapeTEI is Text-Embeddings-Inference's POST /rerank:
	// {"query","texts","truncate"} → [{"index","score"}].
	ShapeTEI = "tei"
	// ShapeCohere is the Cohere/Jina-style POST /v1/rerank:
	// {"model","query","documents","top_n"} → {"results":[{"index","relevance_score"}]}.
	ShapeCohere = "cohere"
)

// RerankConfig configures the optional second ranking stage.
type RerankConfig struct {
	// URL is the endpoint, e.g. http://tei:8080/rerank or
	// https://api.example/v1/rerank.
	URL   string
	Shape string // ShapeTEI or ShapeCohere
	Model string // sent in the cohere shape
	// APIKey, when set, is sent as a bearer token (never logged).
	APIKey string
	// Timeout bounds one call (default 2s); on timeout or error the
	// search keeps the fused order and says it is degraded.
	Timeout time.Duration
	// TopN is how many fused hits are reranked (default 20).
	TopN int
	// Client overrides the HTTP client (tests).
	Client *http.Client
}

// Reranker reorders hits with a cross-encoder served over HTTP.
type Reranker struct {
	cfg RerankConfig
	hc  *http.Client
}

// NewReranker checks cfg and returns a reranker.
func NewReranker(cfg RerankConfig) (*Reranker, error) {
	if cfg.URL == "" || !(strings.HasPrefix(cfg.URL, "http://") || strings.HasPrefix(cfg.URL, "https://")) {
		return nil, errors.New("rerank URL must be an http(s) URL")
	}
	switch cfg.Shape {
	case "":
		cfg.Shape = ShapeTEI
		if strings.HasSuffix(strings.TrimRight(cfg.URL, "/"), "/v1/rerank") {
			cfg.Shape = ShapeCohere
		}
	case ShapeTEI, ShapeCohere:
	default:
		return nil, fmt.Errorf("rerank shape must be %q or %q", ShapeTEI, ShapeCohere)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.TopN <= 0 {
		cfg.TopN = 20
	}
	hc := cfg.Client
	if hc == nil {
		hc = &http.Client{}
	}
	return &Reranker{cfg: cfg, hc: hc}, nil
}

// TopN is how many fused hits the reranker sees.
func (r *Reranker) TopN() int { return r.cfg.TopN }

type teiReq struct {
	Query    string   `json:"query"`
	Texts    []string `json:"texts"`
	Truncate bool     `json:"truncate"`
}

type teiHit struct {
	Index int     `json:"index"`
	Score float64 `json:"score"`
}

type cohereReq struct {
	Model     string   `json:"model,omitempty"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
}

type cohereResp struct {
	Results []struct {
		Index          int     `json:"index"`
		RelevanceScore float64 `json:"relevance_score"`
	} `json:"results"`
}

// Scores returns one score per text (higher is more relevant). An error
// means the stage is down; the caller keeps its order.
func (r *Reranker) Scores(ctx context.Context, query string, texts []string) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var body any = teiReq{Query: query, Texts: texts, Truncate: true}
	if r.cfg.Shape == ShapeCohere {
		body = cohereReq{Model: r.cfg.Model, Query: query, Documents: texts, TopN: len(texts)}
	}
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.URL, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if r.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.cfg.APIKey)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, errors.New("rerank: service unreachable or timed out")
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, errors.New("rerank: reading the answer failed")
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rerank: service answered HTTP %d", resp.StatusCode)
	}
	scores := make([]float64, len(texts))
	seen := make([]bool, len(texts))
	set := func(i int, s float64) error {
		if i < 0 || i >= len(texts) {
			return errors.New("rerank: answer names an index out of range")
		}
		scores[i], seen[i] = s, true
		return nil
	}
	if r.cfg.Shape == ShapeCohere {
		var cr cohereResp
		if err := json.Unmarshal(data, &cr); err != nil {
			return nil, errors.New("rerank: malformed answer")
		}
		for _, h := range cr.Results {
			if err := set(h.Index, h.RelevanceScore); err != nil {
				return nil, err
			}
		}
	} else {
		var hs []teiHit
		if err := json.Unmarshal(data, &hs); err != nil {
			return nil, errors.New("rerank: malformed answer")
		}
		for _, h := range hs {
			if err := set(h.Index, h.Score); err != nil {
				return nil, err
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			scores[i] = -1e9 // not scored: after every scored text, in fused order
		}
	}
	return scores, nil
}
