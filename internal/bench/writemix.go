package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The write mix (issue 14): concurrent HTTP clients writing records the
// way an application does — content, metadata, two entities and a scope —
// and revising one write in five with a PATCH of an earlier record, against
// a running server's REST API. Every request must be acknowledged (2xx);
// the figure is acknowledged writes per second and their latency.

// WriteMixOptions configure RunWriteMix.
type WriteMixOptions struct {
	URL, Token string        // the server's base URL and a bearer token that may write
	Clients    int           // concurrent clients (default 16)
	Duration   time.Duration // how long to write (default 20 s)
	PatchEvery int           // one request in PatchEvery is a PATCH (default 5; 0 never)
	// Requests, when positive, ends each client after that many requests
	// instead of at the end of Duration (which still bounds the run).
	Requests int
	// FirstClient numbers the clients from it: two processes driving two
	// replicas split one mix (clients 0-7 and 8-15) instead of each
	// writing the same records, which the gate would take for one another.
	FirstClient int
}

// WriteMixResult is what RunWriteMix measured.
type WriteMixResult struct {
	Clients       int      `json:"clients"`
	Seconds       float64  `json:"seconds"`
	Writes        int      `json:"writes"`  // acknowledged, POST and PATCH
	Patches       int      `json:"patches"` // of which PATCH
	Failed        int      `json:"failed"`  // not acknowledged
	WritesPerSec  float64  `json:"writes_per_s"`
	P50MS         float64  `json:"p50_ms"`
	P95MS         float64  `json:"p95_ms"`
	P99MS         float64  `json:"p99_ms"`
	FirstFailures []string `json:"first_failures,omitempty"`
}

// RunWriteMix runs the mix until the duration ends or ctx does.
func RunWriteMix(ctx context.Context, o WriteMixOptions) (WriteMixResult, error) {
	if o.Clients <= 0 {
		o.Clients = 16
	}
	if o.Duration <= 0 {
		o.Duration = 20 * time.Second
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * o.Clients, MaxIdleConnsPerHost: 2 * o.Clients,
		IdleConnTimeout: time.Minute}, Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	run := memoryRunID()
	t := &mixTally{}
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range o.Clients {
		c := o.FirstClient + i
		wg.Go(func() { mixClient(ctx, hc, o, run, c, t) })
	}
	wg.Wait()
	el := time.Since(start)
	res := WriteMixResult{Clients: o.Clients, Failed: t.failed}
	res.Seconds = el.Seconds()
	res.Writes = len(t.lat)
	res.Patches = int(t.patches.Load())
	res.WritesPerSec = float64(res.Writes) / el.Seconds()
	slices.Sort(t.lat)
	res.P50MS, res.P95MS, res.P99MS = mixPercentile(t.lat, 0.5), mixPercentile(t.lat, 0.95), mixPercentile(t.lat, 0.99)
	res.FirstFailures = t.failures
	if res.Writes == 0 {
		return res, fmt.Errorf("bench writes: no write was acknowledged (first failures: %v)", t.failures)
	}
	return res, nil
}

// mixTally gathers the clients' figures.
type mixTally struct {
	mu       sync.Mutex
	lat      []time.Duration // acknowledged writes
	failed   int
	failures []string // the first few
	patches  atomic.Int64
}

// mixWritten is a record a client wrote, which a later PATCH revises.
type mixWritten struct {
	id      string
	version int
}

// mixClient is client c of the mix: it writes until ctx ends or it has
// made o.Requests requests, every o.PatchEvery-th a PATCH of one of its
// recent records.
func mixClient(ctx context.Context, hc *http.Client, o WriteMixOptions, run string, c int, t *mixTally) {
	var mine []time.Duration
	failed := 0
	var last []mixWritten
	for n := 0; ctx.Err() == nil && (o.Requests <= 0 || n < o.Requests); n++ {
		patch := o.PatchEvery > 0 && n%o.PatchEvery == o.PatchEvery-1 && len(last) > 0
		var revise *mixWritten
		if patch {
			revise = &last[n%len(last)]
		}
		method, url, body := mixRequest(o.URL, run, c, n, revise)
		raw, _ := json.Marshal(body)
		t0 := time.Now()
		status, out, err := mixDo(ctx, hc, method, url, o.Token, raw)
		if ctx.Err() != nil && err != nil {
			break // the run ended mid-request: not counted
		}
		d := time.Since(t0)
		if err != nil || status/100 != 2 {
			failed++
			t.mu.Lock()
			if len(t.failures) < 5 {
				t.failures = append(t.failures, fmt.Sprintf("%s %d %v %.200s", method, status, err, out))
			}
			t.mu.Unlock()
			continue
		}
		mine = append(mine, d)
		if patch {
			t.patches.Add(1)
		}
		var ack struct {
			Record struct {
				ID      string `json:"id"`
				Version int    `json:"version"`
			} `json:"record"`
		}
		if json.Unmarshal(out, &ack) == nil && ack.Record.ID != "" {
			w := mixWritten{ack.Record.ID, ack.Record.Version}
			if patch {
				last[n%len(last)] = w
			} else if len(last) < 32 {
				last = append(last, w)
			} else {
				last[n%32] = w
			}
		}
	}
	t.mu.Lock()
	t.lat = append(t.lat, mine...)
	t.failed += failed
	t.mu.Unlock()
}

// mixRequest is request n of client c: a PATCH of revise when given, else
// a POST of a new note.
func mixRequest(base, run string, c, n int, revise *mixWritten) (method, url string, body map[string]any) {
	if revise != nil {
		return http.MethodPatch, base + "/v1/records/" + revise.id, map[string]any{"expected_version": revise.version,
			"content":  fmt.Sprintf("%s: client %d revised note %d, the %s rollout is now at stage %d", run, c, n, mixWords[n%len(mixWords)], 2+n%5),
			"metadata": map[string]any{"source": "bench-writes", "client": c, "n": n, "revised": true}}
	}
	return http.MethodPost, base + "/v1/records", map[string]any{"type": "belief", "category": "engineering",
		"content": fmt.Sprintf("%s: client %d note %d — the %s service %s",
			run, c, n, mixWords[n%len(mixWords)], mixPhrase(c, n)),
		"metadata": map[string]any{"source": "bench-writes", "client": c, "n": n, "ticket": fmt.Sprintf("OPS-%d", 1000+n)},
		"entities": []string{fmt.Sprintf("service:%s", mixWords[n%len(mixWords)]), fmt.Sprintf("person:owner-%d", (c*31+n)%200)},
		"scope":    map[string]any{"user_id": fmt.Sprintf("user-%d", c%8), "project_id": "bench-writes"}}
}

// mixPercentile is the p-th percentile of the sorted lat, in milliseconds.
func mixPercentile(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	i := max(0, min(len(lat)-1, int(float64(len(lat))*p+0.999999)-1))
	return float64(lat[i]) / float64(time.Millisecond)
}

var mixWords = []string{"billing", "search", "checkout", "ingest", "payments", "notifications", "auth", "reporting"}

// mixVocabulary makes each note's phrase: notes share few words, as an
// application's distinct facts do, so the gate keeps them apart instead
// of merging near-duplicates or superseding one by another.
var mixVocabulary = strings.Fields(`amber basalt cedar dune ember fjord glacier harbor iris juniper kelp lagoon
	meadow nectar orchid prairie quartz ravine sierra tundra umber valley willow yarrow zephyr anchor beacon
	canyon delta estuary falcon grove heron island jasper kestrel lichen marble nebula oasis pebble quill
	reef saffron thistle upland vertex walnut xenon yucca zinnia acorn bramble cobalt dahlia egret fennel`)

func mixPhrase(c, n int) string {
	h := uint64(c)*0x9e3779b97f4a7c15 ^ uint64(n)*0xbf58476d1ce4e5b9
	words := make([]string, 7)
	for i := range words {
		h ^= h >> 29
		h *= 0x94d049bb133111eb
		words[i] = mixVocabulary[h%uint64(len(mixVocabulary))]
	}
	return "logged " + strings.Join(words, " ") + fmt.Sprintf(" in ticket OPS-%d", 1000+n)
}

// memoryRunID tells one run's contents from another's, so runs against
// one server do not deduplicate each other.
func memoryRunID() string { return fmt.Sprintf("run-%x", time.Now().UnixNano()&0xffffffff) }

func mixDo(ctx context.Context, hc *http.Client, method, url, token string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
