package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Search latency against running servers (issue 14): `memgate bench
// search --url A [--url2 B]` sends questions to /v1/search, spread over
// the replicas named, from several clients at once, and reports the
// latency of each round trip. With replicas of one PostgreSQL database it
// measures what a user of either sees: each replica searches its own
// in-process index.

// SearchHTTPOptions configure RunSearchHTTP.
type SearchHTTPOptions struct {
	URLs    []string // base URLs; request i goes to URLs[i%len(URLs)]
	Token   string   // a token every replica accepts
	Queries []string // the questions, cycled
	N       int      // timed searches; default 300
	Warmup  int      // untimed searches first; default 20
	Clients int      // concurrent clients; default 4
	K       int      // results asked; default 10
}

// SearchHTTPResult is what RunSearchHTTP measured.
type SearchHTTPResult struct {
	Searches int     `json:"searches"`
	Hits     int     `json:"with_results"`
	PerS     float64 `json:"searches_per_s"`
	P50MS    float64 `json:"p50_ms"`
	P95MS    float64 `json:"p95_ms"`
	P99MS    float64 `json:"p99_ms"`
}

// RunSearchHTTP runs the warm-up, then the timed searches. Any answer
// other than 200 ends the run with an error: a latency over failures
// would mean nothing.
func RunSearchHTTP(ctx context.Context, o SearchHTTPOptions) (SearchHTTPResult, error) {
	if len(o.URLs) == 0 || len(o.Queries) == 0 {
		return SearchHTTPResult{}, errors.New("bench search: no server or no questions")
	}
	if o.N <= 0 {
		o.N = 300
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = 20
	}
	if o.Clients <= 0 {
		o.Clients = 4
	}
	if o.K <= 0 {
		o.K = 10
	}
	hc := &http.Client{Timeout: time.Minute}
	one := func(i int) (time.Duration, bool, error) {
		url := o.URLs[i%len(o.URLs)]
		body, _ := json.Marshal(map[string]any{"query": o.Queries[i%len(o.Queries)], "k": o.K})
		t0 := time.Now()
		status, out, err := mixDo(ctx, hc, http.MethodPost, url+"/v1/search", o.Token, body)
		took := time.Since(t0)
		if err != nil || status != http.StatusOK {
			return 0, false, fmt.Errorf("bench search: %s: %d %v %.200s", url, status, err, out)
		}
		var res struct {
			Results []json.RawMessage `json:"results"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return 0, false, fmt.Errorf("bench search: %s: answer: %w", url, err)
		}
		return took, len(res.Results) > 0, nil
	}
	for i := range o.Warmup {
		if _, _, err := one(i); err != nil {
			return SearchHTTPResult{}, err
		}
	}
	var (
		mu    sync.Mutex
		lat   []time.Duration
		hits  int
		first error
		next  int
		wg    sync.WaitGroup
	)
	start := time.Now()
	for range o.Clients {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := i >= o.N || first != nil
				mu.Unlock()
				if stop {
					return
				}
				took, hit, err := one(o.Warmup + i)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				lat = append(lat, took)
				if hit {
					hits++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if first != nil {
		return SearchHTTPResult{}, first
	}
	p := summarise(lat)
	ms := func(d time.Duration) float64 { return round4(float64(d) / float64(time.Millisecond)) }
	return SearchHTTPResult{Searches: len(lat), Hits: hits, PerS: round4(float64(len(lat)) / wall.Seconds()),
		P50MS: ms(p.P50), P95MS: ms(p.P95), P99MS: ms(p.P99)}, nil
}

// QuestionTexts are the dataset's question texts, in order.
func (ds *Dataset) QuestionTexts() []string {
	var out []string
	for _, c := range ds.Convs {
		for _, q := range c.Questions {
			out = append(out, q.Text)
		}
	}
	return out
}
