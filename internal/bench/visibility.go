package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// Cross-replica visibility (issue 14): how long after a write one replica
// acknowledged another replica's search finds it. Each probe writes a
// record holding a word no other record has through Writer, then asks
// Reader's /v1/search for that word every Poll until the record is found.

// VisibilityOptions configure RunVisibility.
type VisibilityOptions struct {
	Writer, Reader string        // base URLs of two replicas on one database
	Token          string        // a token both accept (the database's principal)
	Probes         int           // default 100
	Poll           time.Duration // default 5 ms
	Timeout        time.Duration // per probe; default 30 s
}

// VisibilityResult is what RunVisibility measured.
type VisibilityResult struct {
	Probes int     `json:"probes"`
	P50MS  float64 `json:"p50_ms"`
	P95MS  float64 `json:"p95_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// RunVisibility runs the probes one after another.
func RunVisibility(ctx context.Context, o VisibilityOptions) (VisibilityResult, error) {
	if o.Probes <= 0 {
		o.Probes = 100
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	hc := &http.Client{Timeout: time.Minute}
	run := memoryRunID()
	var lat []time.Duration
	for i := range o.Probes {
		word := fmt.Sprintf("zq%sx%dv", run[4:], i)
		body, _ := json.Marshal(map[string]any{"type": "belief", "content": fmt.Sprintf("replica probe %d carries the marker %s", i, word)})
		status, out, err := mixDo(ctx, hc, http.MethodPost, o.Writer+"/v1/records", o.Token, body)
		if err != nil || status/100 != 2 {
			return VisibilityResult{}, fmt.Errorf("bench visibility: write on %s: %d %v %.200s", o.Writer, status, err, out)
		}
		acked := time.Now()
		q, _ := json.Marshal(map[string]any{"query": word, "k": 1, "signals": []string{"lexical"}})
		for {
			status, out, err := mixDo(ctx, hc, http.MethodPost, o.Reader+"/v1/search", o.Token, q)
			if err != nil || status != http.StatusOK {
				return VisibilityResult{}, fmt.Errorf("bench visibility: search on %s: %d %v %.200s", o.Reader, status, err, out)
			}
			var res struct {
				Results []json.RawMessage `json:"results"`
			}
			if json.Unmarshal(out, &res) == nil && len(res.Results) > 0 {
				lat = append(lat, time.Since(acked))
				break
			}
			if time.Since(acked) > o.Timeout {
				return VisibilityResult{}, fmt.Errorf("bench visibility: probe %d not visible on %s after %s", i, o.Reader, o.Timeout)
			}
			select {
			case <-ctx.Done():
				return VisibilityResult{}, ctx.Err()
			case <-time.After(o.Poll):
			}
		}
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return VisibilityResult{Probes: len(lat), P50MS: ms(lat[len(lat)/2]), P95MS: ms(lat[min(len(lat)-1, len(lat)*95/100)]), MaxMS: ms(lat[len(lat)-1])}, nil
}
