package api_test

// Write-path benchmarks: the service alone, then REST over loopback with one
// client and with sixteen. Each reports latency percentiles from per-write
// timings next to ns/op. Run them with a fixed count so every run writes
// the same number of records into a fresh database:
//
//	go test -run XXX -bench Write -benchtime 3000x -count 5 ./internal/api/

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// benchEnv is a service on a fresh SQLite file with its operator.
type benchEnv struct {
	svc   *core.Service
	op    memory.Principal
	token string
}

func newBenchEnv(b *testing.B) benchEnv {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	// The search index as `memgate serve` builds it by default (no
	// embedder): the gate's near-duplicate check consults it inside the
	// write transaction and every committed write updates it.
	ix := retrieve.New(retrieve.Options{Logger: slog.New(slog.DiscardHandler)})
	if _, err := ix.Load(ctx, st); err != nil {
		b.Fatal(err)
	}
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Logger: slog.New(slog.DiscardHandler), Index: ix})
	token, created, err := svc.Bootstrap(ctx)
	if err != nil || !created {
		b.Fatalf("bootstrap: created %v, err %v", created, err)
	}
	op, err := svc.Authenticate(ctx, token)
	if err != nil {
		b.Fatal(err)
	}
	return benchEnv{svc: svc, op: op, token: token}
}

// benchWord spells n in base 26 with the letters a-z: unique contents
// without the digit runs the PII screen looks at.
func benchWord(n int) string {
	var b []byte
	for {
		b = append(b, byte('a'+n%26))
		n /= 26
		if n == 0 {
			break
		}
	}
	slices.Reverse(b)
	return string(b)
}

// Word lists for benchContent; see there.
var benchSlots = [][]string{
	{"The platform team", "The data team", "The release manager", "The support lead", "The mobile team",
		"The search team", "The security reviewer", "The billing squad", "The design lead", "The infra group",
		"The docs writer", "The QA lead", "The product owner", "The SRE pair", "The backend guild", "The frontend guild"},
	{"prefers", "asked for", "agreed on", "pushed back on", "proposed", "signed off on", "wants to revisit", "documented",
		"benchmarked", "rejected", "piloted", "scheduled", "approved", "questioned", "simplified", "standardised"},
	{"PostgreSQL for the ledger", "blue-green deploys for the gateway", "weekly dependency updates",
		"structured logs everywhere", "feature flags for risky migrations", "short-lived branches",
		"canary releases for mobile", "nightly restore drills", "typed configuration files", "a shared error catalogue",
		"contract tests between services", "smaller pull requests", "tracing on the checkout path",
		"read replicas for reporting", "a single build pipeline", "quarterly architecture reviews"},
	{"after the outage review", "during the planning meeting", "in the design review", "at the retro",
		"in the incident channel", "on the weekly sync", "before the code freeze", "after the customer call",
		"in the architecture forum", "during onboarding", "at the launch review", "in a hallway chat",
		"on the release call", "after the load test", "during the audit", "at the offsite"},
	{"new services should follow it", "the runbook needs an update", "the old path stays for a while",
		"support must hear about it first", "nobody should bypass it", "it needs a written rationale",
		"the dashboards have to reflect it", "the migration waits for the freeze", "exceptions go through review",
		"the wiki page is out of date", "it applies to every region", "the mobile apps come later",
		"the budget covers it", "legal has no concerns", "the vendor was informed", "it replaces the old rule"},
}

// benchContent is about 150 bytes of ordinary prose, unique per (w, n):
// a sentence whose five slots spell a scrambled n in base 16, tagged with
// w and n in letters. Distinct n below 2^20 get distinct slot tuples, so
// any two contents differ in whole phrases and stay clear of the gate's
// near-duplicate check (term overlap >= 0.9), as real notes would.
func benchContent(w, n int) string {
	const bits = 20 // 5 slots of 16 phrases
	x := uint32(n) & (1<<bits - 1)
	x = x * 0x9e3779b1 & (1<<bits - 1) // odd multipliers and xorshifts are
	x ^= x >> 9                        // bijections on 20-bit values
	x = x * 0x85ebca6b & (1<<bits - 1)
	pick := func(i int) string { return benchSlots[i][x>>(4*i)&15] }
	return fmt.Sprintf("Note %s-%s: %s %s %s %s, and %s.",
		benchWord(w), benchWord(n), pick(0), pick(1), pick(2), pick(3), pick(4))
}

// benchRequest is writer w's n-th write: a preference, so the gate runs
// its near-duplicate and conflict checks (SPEC §4 step 5) as it does for
// most agent memories. The second entity is the note's own, so no two
// writes are about the same subject and none supersedes another.
func benchRequest(w, n int) core.WriteRequest {
	return core.WriteRequest{
		Type:     memory.Preference,
		Category: "engineering",
		Content:  benchContent(w, n),
		Entities: []string{"team:platform", "note:" + benchWord(w) + "-" + benchWord(n)},
		Scope:    memory.Scope{ProjectID: "memgate"},
	}
}

// benchPercentileMS returns the p-th percentile (0 < p <= 1) of ds in ms,
// sorting ds in place.
func benchPercentileMS(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*p+0.999999) - 1
	i = max(0, min(i, len(ds)-1))
	return float64(ds[i]) / float64(time.Millisecond)
}

// BenchmarkWriteService is one writer calling core.Service.Write as the
// operator: gate, one SQLite transaction, audit entry.
func BenchmarkWriteService(b *testing.B) {
	env := newBenchEnv(b)
	ctx := context.Background()
	lat := make([]time.Duration, 0, 4096)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		req := benchRequest(0, n)
		n++
		start := time.Now()
		res, err := env.svc.Write(ctx, env.op, req)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		if res.Decision != memory.DecisionAccepted || res.Reason != gate.ReasonPolicyAccept {
			b.Fatalf("decision %s (%s), want accepted by policy", res.Decision, res.Reason)
		}
	}
	b.ReportMetric(benchPercentileMS(lat, 0.95), "p95-ms")
}

// benchHTTP is an API server on loopback and a keep-alive transport.
type benchHTTP struct {
	url   string
	token string
	hc    *http.Client
}

func newBenchHTTP(b *testing.B, conns int) benchHTTP {
	b.Helper()
	env := newBenchEnv(b)
	srv := httptest.NewServer(api.New(env.svc, nil, nil, "bench").Handler())
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConns: 2 * conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	return benchHTTP{url: srv.URL + "/v1/records", token: env.token, hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// acceptedByPolicy starts the answer to a write the gate accepted as is:
// not a duplicate, not a conflict superseding an earlier record.
var acceptedByPolicy = []byte(`{"decision":"accepted","reason":"policy",`)

// write POSTs one record and requires 201 accepted by policy. The body is read to the end so
// the connection is reused.
func (h benchHTTP) write(body []byte) error {
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated || !bytes.Contains(out, acceptedByPolicy) {
		return fmt.Errorf("status %d, want 201 accepted by policy: %.300s", resp.StatusCode, out)
	}
	return nil
}

func benchJSON(b *testing.B, v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkWriteHTTP is one client writing over REST on loopback with
// keep-alive, one request at a time.
func BenchmarkWriteHTTP(b *testing.B) {
	h := newBenchHTTP(b, 4)
	lat := make([]time.Duration, 0, 4096)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		body := benchJSON(b, benchRequest(0, n))
		n++
		start := time.Now()
		err := h.write(body)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
	}
	p50 := benchPercentileMS(lat, 0.50)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(benchPercentileMS(lat, 0.95), "p95-ms")
}

// BenchmarkWriteHTTP16 is sixteen concurrent clients sharing one keep-alive
// transport, b.N writes in all.
func BenchmarkWriteHTTP16(b *testing.B) {
	const clients = 16
	h := newBenchHTTP(b, 32)
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		lat   = make([]time.Duration, 0, b.N)
		first error
	)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			mine := make([]time.Duration, 0, b.N/clients+1)
			defer func() {
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			}()
			for {
				n := int(next.Add(1)) - 1
				if n >= b.N {
					return
				}
				body, err := json.Marshal(benchRequest(c+1, n))
				if err == nil {
					t0 := time.Now()
					err = h.write(body)
					mine = append(mine, time.Since(t0))
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					next.Store(int64(b.N)) // stop the others
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if first != nil {
		b.Fatal(first)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
	b.ReportMetric(benchPercentileMS(lat, 0.95), "p95-ms")
}
