package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/memgate/memgate/internal/api"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/mcp"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/svctest"
	"github.com/memgate/memgate/internal/tracing"
)

// spansByName indexes ended spans.
func spansByName(sr *tracetest.SpanRecorder) map[string][]sdktrace.ReadOnlySpan {
	out := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range sr.Ended() {
		out[s.Name()] = append(out[s.Name()], s)
	}
	return out
}

// under reports whether span s descends from ancestor (same trace, a
// chain of parents).
func under(s sdktrace.ReadOnlySpan, ancestor trace.SpanContext, all []sdktrace.ReadOnlySpan) bool {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, x := range all {
		byID[x.SpanContext().SpanID()] = x
	}
	for cur := s; cur != nil; {
		p := cur.Parent()
		if !p.IsValid() || p.TraceID() != ancestor.TraceID() {
			return false
		}
		if p.SpanID() == ancestor.SpanID() {
			return true
		}
		next, ok := byID[p.SpanID()]
		if !ok {
			return false
		}
		cur = next
	}
	return false
}

// TestTracingSpans: with a tracer provider (the SDK's, recording in
// memory), an HTTP write is a server span continuing the caller's
// traceparent, with the gate decision and the store transaction beneath
// it; a search has the retrieval stages beneath its HTTP span; an MCP tool
// call has its own span with the retrieval under it. No span attribute
// holds what was written or searched.
func TestTracingSpans(t *testing.T) {
	ctx := t.Context()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	st := svctest.SQLite(t)
	ix := svctest.Index(t, st)
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix, Tracer: tp})
	tok, _, err := svc.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(svc, nil, nil, "test").Handler())
	t.Cleanup(srv.Close)

	const content, query = "The zebra pipeline deploys on Tuesdays", "zebra pipeline"
	post := func(path string, body any, traceparent string) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		if traceparent != "" {
			req.Header.Set("traceparent", traceparent)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	post("/v1/records", map[string]any{"type": "belief", "content": content}, "00-"+callerTrace+"-00f067aa0ba902b7-01")
	post("/v1/search", map[string]any{"query": query}, "")

	spans := spansByName(sr)
	all := sr.Ended()
	write := spans["POST /v1/records"]
	if len(write) != 1 || write[0].SpanKind() != trace.SpanKindServer || write[0].SpanContext().TraceID().String() != callerTrace {
		t.Fatalf("write span: %v", write)
	}
	for _, name := range []string{"gate.decide", "store.tx"} {
		if len(spans[name]) == 0 || !under(spans[name][0], write[0].SpanContext(), all) {
			t.Errorf("%s is not under the write's HTTP span", name)
		}
	}
	search := spans["POST /v1/search"]
	if len(search) != 1 {
		t.Fatalf("search spans: %d", len(search))
	}
	for _, name := range []string{"retrieve.search", "retrieve.lexical", "retrieve.fuse", "store.hydrate"} {
		if len(spans[name]) == 0 || !under(spans[name][0], search[0].SpanContext(), all) {
			t.Errorf("%s is not under the search's HTTP span", name)
		}
	}

	// MCP over an in-memory transport: the tool call is a root span of
	// the service's provider.
	op, err := svc.Authenticate(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	ct, stt := sdk.NewInMemoryTransports()
	who := func(context.Context, *sdk.RequestExtra) (memory.Principal, error) { return op, nil }
	ss, err := mcp.NewServer(svc, who, mcp.Options{Version: "test"}).Connect(ctx, stt, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { cs.Close(); ss.Wait() }) })
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "memory_query", Arguments: map[string]any{"query": query}}); err != nil {
		t.Fatal(err)
	}
	spans, all = spansByName(sr), sr.Ended()
	call := spans["mcp tools/call memory_query"]
	if len(call) != 1 {
		names := []string{}
		for n := range spans {
			names = append(names, n)
		}
		t.Fatalf("no MCP tool span; spans: %v", names)
	}
	found := false
	for _, s := range spans["retrieve.search"] {
		found = found || under(s, call[0].SpanContext(), all)
	}
	if !found {
		t.Error("retrieve.search is not under the MCP tool call's span")
	}

	for _, s := range all {
		for _, a := range s.Attributes() {
			v := a.Value.Emit()
			if strings.Contains(v, "zebra") || strings.Contains(v, tok) {
				t.Errorf("span %s attribute %s holds request text: %q", s.Name(), a.Key, v)
			}
		}
	}
}

// TestTracingSetup: off by default (the no-op provider); on with an
// endpoint, or with OTEL_EXPORTER_OTLP_ENDPOINT; an enabled provider sends
// its spans to the collector's /v1/traces over OTLP/HTTP when it shuts
// down.
func TestTracingSetup(t *testing.T) {
	ctx := t.Context()
	tp, stop, err := tracing.Setup(ctx, tracing.Options{Getenv: func(string) string { return "" }})
	if err != nil || stop(ctx) != nil {
		t.Fatal(err)
	}
	if _, isSDK := tp.(*sdktrace.TracerProvider); isSDK {
		t.Fatal("tracing is on without an endpoint")
	}
	if !(tracing.Options{Getenv: func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return "http://collector:4318"
		}
		return ""
	}}).Enabled() {
		t.Fatal("OTEL_EXPORTER_OTLP_ENDPOINT does not enable tracing")
	}
	if _, _, err := tracing.Setup(ctx, tracing.Options{Endpoint: "collector:4318"}); err == nil {
		t.Fatal("an endpoint without a scheme was accepted")
	}

	var mu sync.Mutex
	var got []string
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		if !bytes.Contains(body, []byte("probe-span")) {
			got = append(got, "body without the span")
		}
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer col.Close()
	tp, stop, err = tracing.Setup(ctx, tracing.Options{Endpoint: col.URL, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(ctx, "probe-span")
	span.End()
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "POST /v1/traces application/x-protobuf" {
		t.Fatalf("collector received %v", got)
	}
}
