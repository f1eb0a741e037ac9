package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
)

var (
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promString   = regexp.MustCompile(`"[^"]*"`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true,
		"on": true, "ignoring": true, "group_left": true, "group_right": true, "e": true}
)

// promMetricNames returns the metric names a PromQL expression selects:
// identifiers outside label matchers, grouping lists, ranges and strings
// that are neither functions (followed by "(") nor keywords.
func promMetricNames(expr string) []string {
	for _, re := range []*regexp.Regexp{promMatchers, promGrouping, promRange, promString} {
		expr = re.ReplaceAllString(expr, " ")
	}
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(expr, -1) {
		name := expr[loc[0]:loc[1]]
		if loc[0] > 0 && (expr[loc[0]-1] >= '0' && expr[loc[0]-1] <= '9' || expr[loc[0]-1] == '.') {
			continue // an exponent or a unit inside a number (1e-9)
		}
		if promKeywords[name] || strings.HasPrefix(strings.TrimLeft(expr[loc[1]:], " "), "(") {
			continue
		}
		out = append(out, name)
	}
	return out
}

// dashboardExprs returns every "expr" of the dashboard's panels.
func dashboardExprs(t *testing.T, v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && k == "expr" {
				out = append(out, s)
			} else {
				out = append(out, dashboardExprs(t, c)...)
			}
		}
	case []any:
		for _, c := range x {
			out = append(out, dashboardExprs(t, c)...)
		}
	}
	return out
}

func TestPromMetricNames(t *testing.T) {
	got := promMetricNames(`sum(rate(a_total{code=~"5.."}[5m])) / clamp_min(sum by (le, route) (rate(b_bucket[5m])), 1e-9) and on (x) c`)
	if strings.Join(got, ",") != "a_total,b_bucket,c" {
		t.Fatalf("promMetricNames = %v", got)
	}
}

// TestDashboardMetricsExist: every metric the Grafana dashboard
// (deploy/grafana/memgate.json) queries is exposed by a live server's
// /metrics once the server has done the work each metric counts: writes
// (one quarantined), a search, a webhook delivery.
func TestDashboardMetricsExist(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/grafana/memgate.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	exprs := dashboardExprs(t, dash)
	if len(exprs) < 10 {
		t.Fatalf("the dashboard has %d expressions", len(exprs))
	}

	h := newHarness(t, nil)
	h.write("op", map[string]any{"type": "belief", "content": "The deploy pipeline uses Go 1.25"}, 201)
	h.write("op", map[string]any{"type": "belief", "content": "deploy key sk-proj-4fQx9LmN2pR7tV3wZ8yB6cD1eG5hJ0kM"}, 202)
	h.mustDo("POST", "/v1/search", "op", map[string]any{"query": "deploy pipeline"}, 200, nil)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer rcv.Close()
	h.mustDo("POST", "/v1/webhooks", "op", map[string]any{"url": rcv.URL}, 201, nil)
	h.write("op", map[string]any{"type": "belief", "content": "another key sk-proj-9fQx9LmN2pR7tV3wZ8yB6cD1eG5hJ0kZ"}, 202)
	if err := h.svc.Deliverer().RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}

	code, _, body := h.do("GET", "/metrics", "", nil)
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	exposed := map[string]bool{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		exposed[name] = true
	}
	for _, e := range exprs {
		names := promMetricNames(e)
		if len(names) == 0 {
			t.Errorf("expression %q names no metric", e)
		}
		for _, n := range names {
			if !exposed[n] {
				t.Errorf("the dashboard queries %s (in %q), which /metrics does not expose", n, e)
			}
		}
	}
}
