package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/metrics"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// clock is a manually advanced clock shared by the service and its rate
// limiters, so time-dependent behaviour is tested without sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer collects logs from concurrent handlers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	t       *testing.T
	srv     *httptest.Server
	svc     *core.Service
	store   *sqlite.Store
	dbPath  string
	clock   *clock
	logs    *syncBuffer
	metrics *metrics.Metrics
	index   *retrieve.Engine
	tokens  map[string]string
	// secrets lists every token handed out, for leak checks.
	secrets []string
}

// newHarness starts the real router on a loopback HTTP server over a
// fresh SQLite database, with an operator and one agent per trust level.
func newHarness(t *testing.T, tweak func(*gate.Policy)) *harness {
	t.Helper()
	return newHarnessWith(t, tweak, nil)
}

// newHarnessWith is newHarness with an embedder for the dense signal.
func newHarnessWith(t *testing.T, tweak func(*gate.Policy), emb embed.Embedder) *harness {
	t.Helper()
	return newHarnessOpts(t, harnessOptions{tweak: tweak, emb: emb})
}

// harnessOptions configure a harness beyond the defaults.
type harnessOptions struct {
	tweak      func(*gate.Policy)
	emb        embed.Embedder
	extraction core.ExtractionOptions
	// jobs starts the durable job workers for the test's lifetime.
	jobs bool
	// operatorOnly skips creating the agents: the workspace holds only
	// the bootstrap operator, as on a fresh server.
	operatorOnly bool
	// wrapStore, when set, wraps the real store the service uses (to
	// inject failures); h.store stays the real one.
	wrapStore func(store.Store) store.Store
	// jobOptions, when set, replace the harness's job queue options.
	jobOptions *core.JobOptions
}

func newHarnessOpts(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	tweak, emb := o.tweak, o.emb
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "memgate.db")
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pol := gate.Default()
	if tweak != nil {
		tweak(&pol)
	}
	if err := pol.Validate(); err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := metrics.New()
	ix := retrieve.New(retrieve.Options{Embedder: emb, Logger: log})
	if _, err := ix.Load(ctx, st); err != nil {
		t.Fatal(err)
	}
	var svcStore store.Store = st
	if o.wrapStore != nil {
		svcStore = o.wrapStore(st)
	}
	jo := core.JobOptions{Workers: 2, Poll: 50 * time.Millisecond, BackoffBase: time.Millisecond}
	if o.jobOptions != nil {
		jo = *o.jobOptions
	}
	svc := core.New(core.Options{Store: svcStore, Policy: pol, Logger: log, Metrics: m, Now: clk.Now, Index: ix,
		Extraction: o.extraction, Jobs: jo})
	opTok, created, err := svc.Bootstrap(ctx)
	if err != nil || !created {
		t.Fatalf("bootstrap: %v %v", created, err)
	}
	srv := httptest.NewServer(api.New(svc, log, m, "test").Handler())
	h := &harness{t: t, srv: srv, svc: svc, store: st, dbPath: dbPath, clock: clk, logs: logs, metrics: m, index: ix,
		tokens: map[string]string{"op": opTok}, secrets: []string{opTok}}
	jobsCtx, stopJobs := context.WithCancel(ctx)
	jobsDone := make(chan struct{})
	if o.jobs {
		go func() {
			defer close(jobsDone)
			svc.RunJobs(jobsCtx)
		}()
	} else {
		close(jobsDone)
	}
	t.Cleanup(func() {
		srv.Close()
		stopJobs()
		<-jobsDone
		st.Close()
	})
	if o.operatorOnly {
		return h
	}
	for _, a := range []struct{ name, trust string }{
		{"trusted", "trusted"}, {"std", "standard"}, {"std2", "standard"}, {"restricted", "restricted"}, {"ro", "read_only"},
	} {
		var out struct {
			Token string `json:"token"`
		}
		h.mustDo("POST", "/v1/agents", "op", map[string]any{"name": a.name, "trust": a.trust}, http.StatusCreated, &out)
		h.tokens[a.name] = out.Token
		h.secrets = append(h.secrets, out.Token)
	}
	return h
}

// do sends a request. body may be nil, a string (sent raw) or a value
// (sent as JSON). who names a token in h.tokens, or is used verbatim.
func (h *harness) do(method, path, who string, body any) (int, http.Header, []byte) {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if who != "" {
		tok, ok := h.tokens[who]
		if !ok {
			tok = who
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, raw
}

// mustDo sends a request, checks the status and decodes the answer into out.
func (h *harness) mustDo(method, path, who string, body any, want int, out any) []byte {
	h.t.Helper()
	code, _, raw := h.do(method, path, who, body)
	if code != want {
		h.t.Fatalf("%s %s as %s: status %d, want %d: %s", method, path, who, code, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatalf("decode %s: %v", raw, err)
		}
	}
	return raw
}

type apiError struct {
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

// wantError checks a request fails with the given status and code.
func (h *harness) wantError(method, path, who string, body any, status int, code string) apiError {
	h.t.Helper()
	got, hdr, raw := h.do(method, path, who, body)
	var e apiError
	if err := json.Unmarshal(raw, &e); err != nil {
		h.t.Fatalf("%s %s: error body is not JSON: %s", method, path, raw)
	}
	if got != status || e.Error.Code != code {
		h.t.Fatalf("%s %s as %s: got %d %q, want %d %q: %s", method, path, who, got, e.Error.Code, status, code, raw)
	}
	checkErrorShape(h.t, raw)
	if ct := hdr.Get("Content-Type"); ct != "application/json" {
		h.t.Fatalf("error Content-Type %q", ct)
	}
	return e
}

type writeResult struct {
	Decision   string        `json:"decision"`
	Reason     string        `json:"reason"`
	Record     memory.Record `json:"record"`
	Citation   string        `json:"citation"`
	ApprovalID string        `json:"approval_id"`
	PIIKinds   []string      `json:"pii_kinds"`
}

func (h *harness) write(who string, body map[string]any, want int) writeResult {
	h.t.Helper()
	var res writeResult
	h.mustDo("POST", "/v1/records", who, body, want, &res)
	return res
}

type auditEntry struct {
	Seq       int64          `json:"seq"`
	ActorKind string         `json:"actor_kind"`
	ActorID   string         `json:"actor_id"`
	Event     string         `json:"event"`
	Payload   map[string]any `json:"payload"`
}

// auditLog returns every audit entry of the workspace.
func (h *harness) auditLog() []auditEntry {
	h.t.Helper()
	var all []auditEntry
	after := int64(0)
	for {
		var page struct {
			Entries []auditEntry `json:"entries"`
			Next    int64        `json:"next_after"`
		}
		h.mustDo("GET", "/v1/audit?limit=500&after="+itoa(after), "op", nil, http.StatusOK, &page)
		all = append(all, page.Entries...)
		if page.Next == 0 {
			return all
		}
		after = page.Next
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// checkErrorShape fails unless raw is the one error envelope:
// {"error":{"code","message","details"}} with details an object (never
// absent or null) and nothing else.
func checkErrorShape(t testing.TB, raw []byte) {
	t.Helper()
	var env map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil || len(env) != 1 || env["error"] == nil {
		t.Fatalf("not the error envelope: %s", raw)
	}
	e := env["error"]
	var code, msg string
	var details map[string]any
	if len(e) != 3 || json.Unmarshal(e["code"], &code) != nil || code == "" || json.Unmarshal(e["message"], &msg) != nil || msg == "" ||
		json.Unmarshal(e["details"], &details) != nil || details == nil {
		t.Fatalf("error envelope without code, message and details object: %s", raw)
	}
}
