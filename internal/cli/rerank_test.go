package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// rerankService answers in one rerank shape (tei or cohere), scoring a
// text high when it holds "tea" so its order differs from the fused one;
// it refuses a request without the configured key or with the wrong
// field names.
func rerankService(t *testing.T, shape string, calls *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req map[string]any
		if r.Header.Get("Authorization") != "Bearer rr-k3y" || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		field := map[string]string{"tei": "texts", "cohere": "documents"}[shape]
		texts, _ := req[field].([]any)
		if req["query"] == nil || len(texts) == 0 || (shape == "cohere" && (req["model"] != "rr-1" || req["top_n"] == nil)) {
			http.Error(w, "bad fields", http.StatusBadRequest)
			return
		}
		var hits []map[string]any
		for i, x := range texts {
			s := 0.1
			if strings.Contains(x.(string), "tea") {
				s = 0.9
			}
			if shape == "cohere" {
				hits = append(hits, map[string]any{"index": i, "relevance_score": s})
			} else {
				hits = append(hits, map[string]any{"index": i, "score": s})
			}
		}
		if shape == "cohere" {
			json.NewEncoder(w).Encode(map[string]any{"results": hits})
			return
		}
		json.NewEncoder(w).Encode(hits)
	}))
}

// TestServeRerankConfig: the rerank stage is off by default, and set from
// the server's configuration (URL, shape, model, key, top-N) it reorders
// knowledge search over REST and MCP in either shape; when the service is
// down the fused order is kept and the response says "degraded".
func TestServeRerankConfig(t *testing.T) {
	type hit struct {
		Record struct {
			Content string `json:"content"`
		} `json:"record"`
		RerankScore *float64 `json:"rerank_score"`
	}
	type answer struct {
		Results  []hit    `json:"results"`
		Degraded []string `json:"degraded"`
	}
	for _, shape := range []string{"", "tei", "cohere"} {
		t.Run("shape="+shape, func(t *testing.T) {
			var calls atomic.Int32
			served := shape
			if served == "" {
				served = "tei"
			}
			rr := rerankService(t, served, &calls)
			defer rr.Close()
			dir := filepath.Join(t.TempDir(), "data")
			env := map[string]string{"MEMGATE_EMBEDDER": "none"}
			r := mustRun(t, run(t, dir, env, "agents", "create", "--name", "w", "--trust", "standard", "--json"))
			m := regexp.MustCompile(`operator token \(shown once, store it now\): (\S+)`).FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("no operator token in %q", r.stderr)
			}
			op := m[1]
			if shape != "" {
				path := map[string]string{"tei": "/rerank", "cohere": "/v1/rerank"}[shape]
				env = map[string]string{"MEMGATE_RERANK_URL": rr.URL + path, "MEMGATE_RERANK_SHAPE": shape, "MEMGATE_RERANK_MODEL": "rr-1",
					"MEMGATE_RERANK_TOP_N": "5", "MEMGATE_RERANK_API_KEY": "rr-k3y", "MEMGATE_EMBEDDER": "none"}
			}
			srv := startServe(t, dir, env)
			for uri, doc := range map[string]string{
				"a.md": "# Drinks\n\nThe office drinks: coffee coffee coffee, and the office also has coffee machines for drinks.\n",
				"b.md": "# Kitchen\n\nThe office kitchen has green tea for drinks.\n",
			} {
				srv.do("POST", "/v1/resources", op, map[string]any{"uri": uri, "content": doc}, http.StatusCreated, nil)
			}
			var res answer
			srv.do("POST", "/v1/resources/search", op, map[string]any{"query": "office drinks coffee", "k": 2}, http.StatusOK, &res)
			if len(res.Results) != 2 {
				t.Fatalf("search: %+v", res)
			}
			if shape == "" { // off by default: the fused order, no call
				if calls.Load() != 0 || strings.Contains(res.Results[0].Record.Content, "tea") || res.Results[0].RerankScore != nil {
					t.Fatalf("rerank off by default: calls %d, first %q", calls.Load(), res.Results[0].Record.Content)
				}
				return
			}
			if calls.Load() != 1 || !strings.Contains(res.Results[0].Record.Content, "tea") || res.Results[0].RerankScore == nil || len(res.Degraded) != 0 {
				t.Fatalf("reranked: calls %d, degraded %v, first %q", calls.Load(), res.Degraded, res.Results[0].Record.Content)
			}
			// The MCP tool shares the stage.
			out := srv.callTool(srv.mcp(op), "resource_search", map[string]any{"query": "office drinks coffee", "k": 2})
			raw, _ := json.Marshal(out)
			var viaMCP struct {
				Results []struct{ Content string } `json:"results"`
			}
			if err := json.Unmarshal(raw, &viaMCP); err != nil || len(viaMCP.Results) == 0 || !strings.Contains(viaMCP.Results[0].Content, "tea") || calls.Load() != 2 {
				t.Fatalf("MCP resource_search: calls %d, %s", calls.Load(), raw)
			}
			// Down: the fused order, and the response says degraded.
			rr.Close()
			srv.do("POST", "/v1/resources/search", op, map[string]any{"query": "office drinks coffee", "k": 2}, http.StatusOK, &res)
			if len(res.Degraded) != 1 || !strings.Contains(res.Degraded[0], "rerank") || strings.Contains(res.Results[0].Record.Content, "tea") {
				t.Fatalf("rerank down: degraded %v, first %q", res.Degraded, res.Results[0].Record.Content)
			}
			out = srv.callTool(srv.mcp(op), "resource_search", map[string]any{"query": "office drinks coffee", "k": 2})
			if d, _ := out["degraded"].([]any); len(d) != 1 {
				t.Fatalf("MCP resource_search with the rerank service down: %v", out)
			}
		})
	}
}

// TestServeRerankConfigRefused: a bad rerank setting stops serve at start
// with the setting named.
func TestServeRerankConfigRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	r := run(t, dir, map[string]string{"MEMGATE_RERANK_URL": "http://127.0.0.1:1/rerank", "MEMGATE_RERANK_SHAPE": "grpc"}, "serve", "--addr", "127.0.0.1:0")
	if r.code == 0 || !strings.Contains(r.stderr, "rerank-shape") {
		t.Fatalf("serve with a bad rerank shape: exit %d, %s", r.code, r.stderr)
	}
}
