package bench

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
)

// TestSearchHTTP: the search bench asks a real server over loopback HTTP,
// spreads the searches over the URLs given, counts the answers with
// results, and stops at the first refused request (a bad token here)
// instead of timing failures.
func TestSearchHTTP(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, nil)
	ag, err := svc.CreateAgent(ctx, core.LocalOperator(memory.DefaultWorkspace), "bench-search", memory.Standard)
	if err != nil {
		t.Fatal(err)
	}
	token := ag.Token
	for i := range 20 {
		if _, err := svc.Write(ctx, core.LocalOperator(memory.DefaultWorkspace), core.WriteRequest{Type: memory.Belief,
			Content: fmt.Sprintf("lighthouse %d stands on the northern cape", i)}); err != nil {
			t.Fatal(err)
		}
	}
	h := api.New(svc, nil, nil, "test").Handler()
	a, b := httptest.NewServer(h), httptest.NewServer(h)
	defer a.Close()
	defer b.Close()
	res, err := RunSearchHTTP(ctx, SearchHTTPOptions{URLs: []string{a.URL, b.URL}, Token: token,
		Queries: []string{"which lighthouse is on the cape?", "zzz nothing matches"}, N: 40, Warmup: 2, Clients: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Searches != 40 || res.Hits != 20 || res.P50MS <= 0 || res.P50MS > res.P95MS || res.P95MS > res.P99MS || res.PerS <= 0 {
		t.Fatalf("result %+v: want 40 searches, the 20 lighthouse questions with results", res)
	}
	_, err = RunSearchHTTP(ctx, SearchHTTPOptions{URLs: []string{a.URL}, Token: "wrong", Queries: []string{"x"}, N: 5})
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a refused search: %v, want the run to stop on the 401", err)
	}
}
