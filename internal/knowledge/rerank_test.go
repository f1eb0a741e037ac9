package knowledge_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/knowledge"
)

// rerankServer answers in one shape, scoring a text by whether it holds
// "tea" (so the reranker's order differs from the fused one), and checks
// the request's field names.
func rerankServer(t *testing.T, shape string, calls *int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*calls++
		if r.Method != "POST" || r.Header.Get("Authorization") != "Bearer k3y" {
			http.Error(w, "bad", 400)
			return
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad", 400)
			return
		}
		field := "texts"
		if shape == knowledge.ShapeCohere {
			field = "documents"
			if req["model"] != "rr-1" || req["top_n"] == nil {
				http.Error(w, "model/top_n missing", 400)
				return
			}
		}
		texts, _ := req[field].([]any)
		if req["query"] == nil || len(texts) == 0 {
			http.Error(w, "query/"+field+" missing", 400)
			return
		}
		type hit struct {
			Index int     `json:"index"`
			Score float64 `json:"score,omitempty"`
			Rel   float64 `json:"relevance_score,omitempty"`
		}
		var hits []hit
		for i, x := range texts {
			s := 0.1
			if strings.Contains(x.(string), "tea") {
				s = 0.9
			}
			if shape == knowledge.ShapeCohere {
				hits = append(hits, hit{Index: i, Rel: s})
			} else {
				hits = append(hits, hit{Index: i, Score: s})
			}
		}
		if shape == knowledge.ShapeCohere {
			json.NewEncoder(w).Encode(map[string]any{"results": hits})
		} else {
			json.NewEncoder(w).Encode(hits)
		}
	}))
}

func TestRerankShapes(t *testing.T) {
	for _, shape := range []string{knowledge.ShapeTEI, knowledge.ShapeCohere} {
		t.Run(shape, func(t *testing.T) {
			calls := 0
			srv := rerankServer(t, shape, &calls)
			defer srv.Close()
			rr, err := knowledge.NewReranker(knowledge.RerankConfig{URL: srv.URL + "/rerank", Shape: shape, Model: "rr-1", APIKey: "k3y"})
			if err != nil {
				t.Fatal(err)
			}
			e := sqliteEnv(t, knowledge.Options{Reranker: rr})
			p := e.who["std"]
			for uri, doc := range map[string]string{
				"a.md": "# Drinks\n\nThe office drinks: coffee coffee coffee, and the office also has coffee machines for drinks.\n",
				"b.md": "# Kitchen\n\nThe office kitchen has green tea for drinks.\n",
			} {
				if _, err := e.kn.Ingest(t.Context(), p, knowledge.Document{URI: uri, Content: []byte(doc)}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := e.kn.Search(t.Context(), p, knowledge.SearchRequest{Query: "office drinks coffee", K: 2})
			if err != nil {
				t.Fatal(err)
			}
			if calls != 1 || len(res.Results) != 2 || !strings.Contains(res.Results[0].Record.Content, "tea") || res.Results[0].RerankScore == nil || len(res.Degraded) != 0 {
				t.Fatalf("reranked: calls %d degraded %v first %q", calls, res.Degraded, res.Results[0].Record.Content)
			}
			// Off on request: the fused order.
			off := false
			res, err = e.kn.Search(t.Context(), p, knowledge.SearchRequest{Query: "office drinks coffee", K: 2, Rerank: &off})
			if err != nil || calls != 1 || strings.Contains(res.Results[0].Record.Content, "tea") {
				t.Fatalf("rerank off: calls %d %v", calls, err)
			}
			// Down: the fused order, and the response says so.
			srv.Close()
			res, err = e.kn.Search(t.Context(), p, knowledge.SearchRequest{Query: "office drinks coffee", K: 2})
			if err != nil || len(res.Degraded) != 1 || !strings.Contains(res.Degraded[0], "rerank") || strings.Contains(res.Results[0].Record.Content, "tea") {
				t.Fatalf("rerank down: %v %v", res.Degraded, err)
			}
		})
	}
}

func TestRerankTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer srv.Close()
	defer close(release)
	rr, err := knowledge.NewReranker(knowledge.RerankConfig{URL: srv.URL + "/v1/rerank", Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := rr.Scores(t.Context(), "q", []string{"a", "b"}); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %v after %s", err, time.Since(start))
	}
	if _, err := knowledge.NewReranker(knowledge.RerankConfig{URL: "ftp://x"}); err == nil {
		t.Fatal("a non-HTTP URL was accepted")
	}
}
