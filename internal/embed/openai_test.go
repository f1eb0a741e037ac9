package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const testKey = "sk-test-SECRET-4f9a2c71e0"

// assertNoKey fails if the API key appears in err or anything it wraps.
func assertNoKey(t *testing.T, err error) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testKey) || strings.Contains(e.Error(), testKey[:12]) {
			t.Fatalf("error leaks the API key: %q", e.Error())
		}
	}
}

// fakeOpenAI speaks the OpenAI embeddings protocol. The vector of text
// "t<n>" is (1, n, 0, ...), so after normalisation v[1]/v[0] == n tells
// which text a vector belongs to.
type fakeOpenAI struct {
	t       *testing.T
	dim     int  // dimension of the vectors it returns
	reverse bool // return data in reverse index order

	// before, when set, runs first on every call (0-based); if it returns
	// true it has answered the request itself.
	before func(call int, w http.ResponseWriter, r *http.Request) bool

	mu      sync.Mutex
	calls   int
	batches [][]string
	auth    []string
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	call := f.calls
	f.calls++
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	dim := f.dim
	f.mu.Unlock()

	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, "not found: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if f.before != nil && f.before(call, w, r) {
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		http.Error(w, `{"error":{"message":"bad content type"}}`, http.StatusBadRequest)
		return
	}
	var req struct {
		Model          string   `json:"model"`
		Input          []string `json:"input"`
		EncodingFormat string   `json:"encoding_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || req.EncodingFormat != "float" || len(req.Input) == 0 {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.batches = append(f.batches, req.Input)
	f.mu.Unlock()

	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, text := range req.Input {
		v := make([]float32, dim)
		v[0] = 1
		if dim > 1 {
			n, err := strconv.Atoi(strings.TrimPrefix(text, "t"))
			if err != nil {
				n = len(text)
			}
			v[1] = float32(n)
		}
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
	}
	if f.reverse {
		slices.Reverse(data)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   data,
		"model":  req.Model,
		"usage":  map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)},
	})
}

func (f *fakeOpenAI) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// newFake starts a fake server and a client for it.
func newFake(t *testing.T, f *fakeOpenAI, cfg OpenAIConfig) (*OpenAI, *fakeOpenAI) {
	t.Helper()
	f.t = t
	if f.dim == 0 {
		f.dim = 3
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg.BaseURL = srv.URL + "/v1"
	if cfg.Model == "" {
		cfg.Model = "test-embed"
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 5 * time.Millisecond
	}
	o, err := NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return o, f
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i)
	}
	return out
}

// checkOrder verifies that vecs[i] is the unit vector of text "t<i>".
func checkOrder(t *testing.T, vecs [][]float32, n, dim int) {
	t.Helper()
	if len(vecs) != n {
		t.Fatalf("got %d vectors, want %d", len(vecs), n)
	}
	for i, v := range vecs {
		if len(v) != dim {
			t.Fatalf("vector %d has %d components, want %d", i, len(v), dim)
		}
		if got := float64(v[1]) / float64(v[0]); math.Abs(got-float64(i)) > 1e-3*float64(i+1) {
			t.Fatalf("vector %d belongs to text t%.0f", i, got)
		}
		if nv := norm(v); math.Abs(nv-1) > 1e-6 {
			t.Fatalf("vector %d has norm %v", i, nv)
		}
	}
}

func TestOpenAIBatchingOrderAndAuth(t *testing.T) {
	o, f := newFake(t, &fakeOpenAI{reverse: true}, OpenAIConfig{APIKey: testKey})
	if o.Dim() != 0 {
		t.Fatalf("Dim before the first answer = %d, want 0", o.Dim())
	}
	vecs, err := o.Embed(context.Background(), texts(150))
	if err != nil {
		t.Fatal(err)
	}
	checkOrder(t, vecs, 150, 3)
	if len(f.batches) != 3 || len(f.batches[0]) != 64 || len(f.batches[1]) != 64 || len(f.batches[2]) != 22 {
		sizes := []int{}
		for _, b := range f.batches {
			sizes = append(sizes, len(b))
		}
		t.Fatalf("batch sizes %v, want [64 64 22]", sizes)
	}
	if f.batches[1][0] != "t64" || f.batches[2][21] != "t149" {
		t.Errorf("batches not split in order: %q ... %q", f.batches[1][0], f.batches[2][21])
	}
	for i, a := range f.auth {
		if a != "Bearer "+testKey {
			t.Errorf("request %d: Authorization %q", i, a)
		}
	}
	if o.Dim() != 3 {
		t.Errorf("Dim() = %d after learning, want 3", o.Dim())
	}
	if o.Model() != "openai:test-embed" {
		t.Errorf("Model() = %q", o.Model())
	}
}

func TestOpenAINoKeyNoAuthorization(t *testing.T) {
	o, f := newFake(t, &fakeOpenAI{}, OpenAIConfig{BatchSize: 2})
	if _, err := o.Embed(context.Background(), texts(3)); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.auth {
		if a != "" {
			t.Errorf("Authorization %q sent without a key", a)
		}
	}
}

func TestOpenAIEmptyInput(t *testing.T) {
	o, f := newFake(t, &fakeOpenAI{}, OpenAIConfig{})
	vecs, err := o.Embed(context.Background(), nil)
	if err != nil || len(vecs) != 0 {
		t.Fatalf("Embed(nil) = %v, %v", vecs, err)
	}
	if f.callCount() != 0 {
		t.Errorf("%d requests for no texts", f.callCount())
	}
}

func TestOpenAIRetries429WithRetryAfter(t *testing.T) {
	o, f := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
		if call == 0 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":{"message":"rate limited","type":"requests"}}`, http.StatusTooManyRequests)
			return true
		}
		return false
	}}, OpenAIConfig{APIKey: testKey, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	// With a one-hour backoff, only Retry-After: 0 lets this finish.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vecs, err := o.Embed(ctx, texts(5))
	if err != nil {
		t.Fatal(err)
	}
	checkOrder(t, vecs, 5, 3)
	if n := f.callCount(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestOpenAIRetryAfterCappedByMaxBackoff(t *testing.T) {
	o, f := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
		if call < 2 {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	}}, OpenAIConfig{MaxBackoff: 20 * time.Millisecond})
	start := time.Now()
	if _, err := o.Embed(context.Background(), texts(1)); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v: Retry-After not capped by MaxBackoff", el)
	}
	if n := f.callCount(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

func TestOpenAI500RetriedThenGivesUp(t *testing.T) {
	big := `{"error":{"message":"` + testKey + " " + strings.Repeat("overloaded ", 500) + `"}}`
	o, f := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
		http.Error(w, big, http.StatusInternalServerError)
		return true
	}}, OpenAIConfig{APIKey: testKey, MaxRetries: 3})
	_, err := o.Embed(context.Background(), texts(2))
	if err == nil {
		t.Fatal("no error")
	}
	assertNoKey(t, err)
	if n := f.callCount(); n != 4 {
		t.Errorf("%d requests, want 4 (1 + MaxRetries 3)", n)
	}
	msg := err.Error()
	t.Logf("error: %s", msg)
	if !strings.Contains(msg, "HTTP 500") || !strings.Contains(msg, "4 attempts") {
		t.Errorf("error %q does not name the status and attempts", msg)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Fatalf("error %v does not unwrap to an APIError 500", err)
	}
	if len(apiErr.Message) > 200 {
		t.Errorf("error message echoes %d bytes of the body", len(apiErr.Message))
	}
	if len(msg) > 400 {
		t.Errorf("error is %d bytes long: %q", len(msg), msg)
	}
}

func TestOpenAI400NotRetried(t *testing.T) {
	o, f := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"input is too long for key %s","type":"invalid_request_error"}}`, testKey)
		return true
	}}, OpenAIConfig{APIKey: testKey})
	_, err := o.Embed(context.Background(), texts(2))
	if err == nil {
		t.Fatal("no error")
	}
	assertNoKey(t, err)
	if n := f.callCount(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("error %v is not an APIError 400", err)
	}
	if !strings.Contains(apiErr.Message, "input is too long") || !strings.Contains(apiErr.Message, "[REDACTED]") {
		t.Errorf("message %q", apiErr.Message)
	}
}

func TestOpenAIUnauthorizedEchoingHeader(t *testing.T) {
	// A server (or proxy) that echoes the Authorization header in a plain
	// short body, and one that cuts it at the 200-byte boundary.
	for _, pad := range []int{0, 190} {
		o, _ := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
			http.Error(w, strings.Repeat("x", pad)+"bad credentials: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
			return true
		}}, OpenAIConfig{APIKey: testKey})
		_, err := o.Embed(context.Background(), texts(1))
		if err == nil {
			t.Fatal("no error")
		}
		assertNoKey(t, err)
	}
}

func TestOpenAIDimensionMismatch(t *testing.T) {
	o, _ := newFake(t, &fakeOpenAI{dim: 4}, OpenAIConfig{APIKey: testKey, Dim: 8})
	_, err := o.Embed(context.Background(), texts(2))
	if err == nil || !strings.Contains(err.Error(), "expected 8") || !strings.Contains(err.Error(), "got 4") {
		t.Fatalf("error %v does not name expected 8 and got 4", err)
	}
	assertNoKey(t, err)

	// Learned from the first answer, then enforced.
	o, f := newFake(t, &fakeOpenAI{dim: 4}, OpenAIConfig{})
	if _, err := o.Embed(context.Background(), texts(2)); err != nil {
		t.Fatal(err)
	}
	if o.Dim() != 4 {
		t.Fatalf("learned Dim() = %d, want 4", o.Dim())
	}
	f.mu.Lock()
	f.dim = 5
	f.mu.Unlock()
	_, err = o.Embed(context.Background(), texts(2))
	if err == nil || !strings.Contains(err.Error(), "expected 4, got 5") {
		t.Fatalf("error %v, want a dimension mismatch expected 4, got 5", err)
	}
}

func TestOpenAIMalformedAnswers(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"count", `{"data":[{"index":0,"embedding":[1,0]}]}`, "sent 2 texts, got 1"},
		{"duplicate", `{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[0,1]}]}`, "appears twice"},
		{"range", `{"data":[{"index":0,"embedding":[1,0]},{"index":2,"embedding":[0,1]}]}`, "out of range"},
		{"empty vector", `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[0,1]}]}`, "is empty"},
		{"ragged", `{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[0,1,2]}]}`, "expected 2, got 3"},
		{"not json", `<html>` + testKey + `</html>`, "decoding response"},
		{"base64", `{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":"AAAA"}]}`, "decoding response"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, f := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(c.body))
				return true
			}}, OpenAIConfig{APIKey: testKey})
			_, err := o.Embed(context.Background(), []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			assertNoKey(t, err)
			if strings.Contains(err.Error(), "<html>") {
				t.Errorf("error echoes the body: %v", err)
			}
			if n := f.callCount(); n != 1 {
				t.Errorf("%d requests, want 1 (a malformed answer is not retried)", n)
			}
		})
	}
}

func TestOpenAICancelDuringBackoff(t *testing.T) {
	called := make(chan struct{}, 10)
	o, f := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Retry-After", "60") // a deterministic one-minute wait
		w.WriteHeader(http.StatusBadGateway)
		called <- struct{}{}
		return true
	}}, OpenAIConfig{APIKey: testKey, MinBackoff: time.Minute, MaxBackoff: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	go func() {
		<-called
		time.Sleep(50 * time.Millisecond) // let the client start waiting
		cancelled = time.Now()
		cancel()
	}()
	_, err := o.Embed(ctx, texts(1))
	if el := time.Since(cancelled); el > 2*time.Second {
		t.Fatalf("Embed returned %v after cancellation", el)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v is not context.Canceled", err)
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "HTTP 502") {
		t.Errorf("error %q does not mention the last failure", err)
	}
	assertNoKey(t, err)
	if n := f.callCount(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestOpenAIRetriesTransportErrors(t *testing.T) {
	o, f := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
		if call == 0 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // drop the connection without an answer
			}
			return true
		}
		return false
	}}, OpenAIConfig{APIKey: testKey})
	vecs, err := o.Embed(context.Background(), texts(3))
	if err != nil {
		t.Fatal(err)
	}
	checkOrder(t, vecs, 3, 3)
	if n := f.callCount(); n < 2 {
		t.Errorf("%d requests, want a retry", n)
	}
}

func TestOpenAIPerRequestTimeout(t *testing.T) {
	o, f := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
		if call == 0 {
			hang(r)
			return true
		}
		return false
	}}, OpenAIConfig{Timeout: 100 * time.Millisecond})
	start := time.Now()
	if _, err := o.Embed(context.Background(), texts(1)); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v despite a 100ms request timeout", el)
	}
	if n := f.callCount(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}

	// Without retries the timeout is reported as such.
	o, _ = newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
		hang(r)
		return true
	}}, OpenAIConfig{Timeout: 50 * time.Millisecond, MaxRetries: -1, APIKey: testKey})
	_, err := o.Embed(context.Background(), texts(1))
	if err == nil || !strings.Contains(err.Error(), "timed out after 50ms") {
		t.Fatalf("error %v, want a request timeout", err)
	}
	assertNoKey(t, err)
}

// hang blocks until the client goes away. It reads the body first: only
// then does the server watch the connection and cancel r.Context() when the
// client closes it.
func hang(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

func TestOpenAIErrorNamesBatch(t *testing.T) {
	o, _ := newFake(t, &fakeOpenAI{before: func(call int, w http.ResponseWriter, r *http.Request) bool {
		if call == 1 {
			http.Error(w, "nope", http.StatusBadRequest)
			return true
		}
		return false
	}}, OpenAIConfig{BatchSize: 10})
	_, err := o.Embed(context.Background(), texts(25))
	if err == nil || !strings.Contains(err.Error(), "texts 10 to 19 of 25") {
		t.Fatalf("error %v does not name the failed batch", err)
	}
}

func TestOpenAIConcurrent(t *testing.T) {
	o, _ := newFake(t, &fakeOpenAI{reverse: true}, OpenAIConfig{BatchSize: 7})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			vecs, err := o.Embed(context.Background(), texts(30))
			if err == nil && len(vecs) != 30 {
				err = fmt.Errorf("%d vectors", len(vecs))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if o.Dim() != 3 {
		t.Errorf("Dim() = %d", o.Dim())
	}
}

func TestOpenAIBackoffBounds(t *testing.T) {
	o, err := NewOpenAI(OpenAIConfig{BaseURL: "http://localhost:1/v1", Model: "m", MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := range 70 {
		ceil := min(time.Second, 100*time.Millisecond<<min(attempt, 20))
		var maxSeen time.Duration
		for range 200 {
			d := o.backoff(attempt, &temporaryError{})
			if d < 0 || d > ceil {
				t.Fatalf("attempt %d: backoff %v outside [0, %v]", attempt, d, ceil)
			}
			maxSeen = max(maxSeen, d)
		}
		if maxSeen < ceil/4 {
			t.Errorf("attempt %d: 200 draws all below %v: not jittered over [0, %v]", attempt, maxSeen, ceil)
		}
	}
	if d := o.backoff(3, &temporaryError{hasRetryAfter: true, retryAfter: 300 * time.Millisecond}); d != 300*time.Millisecond {
		t.Errorf("Retry-After 300ms gave %v", d)
	}
	if d := o.backoff(0, &temporaryError{hasRetryAfter: true, retryAfter: time.Hour}); d != time.Second {
		t.Errorf("Retry-After 1h gave %v, want MaxBackoff", d)
	}
}

func TestNewOpenAIValidation(t *testing.T) {
	ok := OpenAIConfig{BaseURL: "http://localhost:11434/v1", Model: "nomic-embed-text"}
	cases := []struct {
		name string
		edit func(*OpenAIConfig)
		want string
	}{
		{"empty base", func(c *OpenAIConfig) { c.BaseURL = "" }, "BaseURL"},
		{"no scheme", func(c *OpenAIConfig) { c.BaseURL = "localhost:11434/v1" }, "BaseURL"},
		{"relative", func(c *OpenAIConfig) { c.BaseURL = "/v1" }, "BaseURL"},
		{"ftp", func(c *OpenAIConfig) { c.BaseURL = "ftp://host/v1" }, "BaseURL"},
		{"no host", func(c *OpenAIConfig) { c.BaseURL = "http:///v1" }, "BaseURL"},
		{"query", func(c *OpenAIConfig) { c.BaseURL = "http://host/v1?key=" + testKey }, "BaseURL"},
		{"bad url", func(c *OpenAIConfig) { c.BaseURL = "http://host:badport/" + testKey }, "BaseURL"},
		{"model", func(c *OpenAIConfig) { c.Model = " " }, "Model"},
		{"dim", func(c *OpenAIConfig) { c.Dim = -1 }, "Dim"},
		{"batch", func(c *OpenAIConfig) { c.BatchSize = -3 }, "BatchSize"},
		{"timeout", func(c *OpenAIConfig) { c.Timeout = -time.Second }, "Timeout"},
		{"backoff order", func(c *OpenAIConfig) { c.MinBackoff, c.MaxBackoff = time.Minute, time.Second }, "MinBackoff"},
	}
	for _, c := range cases {
		cfg := ok
		cfg.APIKey = testKey
		c.edit(&cfg)
		_, err := NewOpenAI(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
			continue
		}
		assertNoKey(t, err)
	}
	o, err := NewOpenAI(OpenAIConfig{BaseURL: "https://api.example.com/v1/", Model: "text-embedding-3-small"})
	if err != nil {
		t.Fatal(err)
	}
	if o.endpoint != "https://api.example.com/v1/embeddings" {
		t.Errorf("endpoint %q", o.endpoint)
	}
	if o.cfg.BatchSize != 64 || o.cfg.Timeout != 30*time.Second || o.cfg.MaxRetries != 5 ||
		o.cfg.MinBackoff != 200*time.Millisecond || o.cfg.MaxBackoff != 10*time.Second {
		t.Errorf("defaults not applied: %+v", o.cfg)
	}
	if o.Model() != "openai:text-embedding-3-small" {
		t.Errorf("Model() = %q", o.Model())
	}
}

func TestAPIKeyFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if s, ok := m[p]; ok {
				return []byte(s), nil
			}
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
		}
	}
	noFiles := files(nil)

	key, err := APIKeyFromEnv("MEMGATE_OPENAI_API_KEY", env(map[string]string{"MEMGATE_OPENAI_API_KEY": testKey}), noFiles)
	if err != nil || key != testKey {
		t.Errorf("from NAME: %q, %v", key, err)
	}

	key, err = APIKeyFromEnv("MEMGATE_OPENAI_API_KEY",
		env(map[string]string{"MEMGATE_OPENAI_API_KEY_FILE": "/run/secrets/openai"}),
		files(map[string]string{"/run/secrets/openai": "  " + testKey + "\n"}))
	if err != nil || key != testKey {
		t.Errorf("from NAME_FILE: %q, %v", key, err)
	}

	_, err = APIKeyFromEnv("K", env(map[string]string{"K": testKey, "K_FILE": "/run/secrets/k"}),
		files(map[string]string{"/run/secrets/k": testKey}))
	if err == nil || !strings.Contains(err.Error(), "K_FILE") {
		t.Errorf("both set: error %v", err)
	} else {
		assertNoKey(t, err)
	}

	key, err = APIKeyFromEnv("K", env(nil), noFiles)
	if err != nil || key != "" {
		t.Errorf("neither set: %q, %v", key, err)
	}

	_, err = APIKeyFromEnv("K", env(map[string]string{"K_FILE": "/missing"}), noFiles)
	if err == nil || !strings.Contains(err.Error(), "K_FILE") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: error %v", err)
	}

	_, err = APIKeyFromEnv("K", env(map[string]string{"K_FILE": "/empty"}), files(map[string]string{"/empty": "\n"}))
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: error %v", err)
	}
}
