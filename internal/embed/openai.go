package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/memgate/memgate/internal/backoff"
	"github.com/memgate/memgate/internal/remote"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// Defaults of OpenAIConfig.
const (
	DefaultBatchSize  = 64
	DefaultTimeout    = 30 * time.Second
	DefaultMaxRetries = 5
	DefaultMinBackoff = 200 * time.Millisecond
	DefaultMaxBackoff = 10 * time.Second
)

const (
	// maxErrorMessage bounds how much of a server's error answer is echoed
	// in an error.
	maxErrorMessage = 200
	// maxErrorBody bounds how much of an error answer is read at all.
	maxErrorBody = 8 << 10
	// maxResponseBody bounds a successful answer (64 texts of 3072
	// dimensions are about 4 MiB of JSON).
	maxResponseBody = 256 << 20
)

// OpenAIConfig configures an OpenAI-compatible embeddings client.
type OpenAIConfig struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1" or
	// "http://localhost:11434/v1"; the client POSTs BaseURL+"/embeddings".
	BaseURL string
	// Model is the model name sent in each request.
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <key>". It never
	// appears in an error.
	APIKey string
	// Dim is the expected dimension; 0 learns it from the first answer and
	// enforces it from then on.
	Dim int
	// BatchSize is the number of texts per request (default 64).
	BatchSize int
	// Timeout bounds each request attempt (default 30s).
	Timeout time.Duration
	// MaxRetries is how many times a failed request is retried (default 5;
	// a negative value disables retries).
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts (defaults 200ms and 10s).
	MinBackoff, MaxBackoff time.Duration
	// HTTPClient is the client to use; nil means a fresh client on
	// http.DefaultTransport. Its own Timeout, if any, also applies.
	HTTPClient *http.Client
}

// OpenAI is an Embedder backed by an OpenAI-compatible /embeddings
// endpoint. It is safe for concurrent use.
type OpenAI struct {
	cfg      OpenAIConfig
	endpoint string
	client   *http.Client
	dim      atomic.Int64 // 0 until known
}

var _ Embedder = (*OpenAI)(nil)

// NewOpenAI validates cfg, fills in the defaults and returns a client.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	u, err := url.Parse(cfg.BaseURL)
	switch {
	case cfg.BaseURL == "":
		return nil, errors.New("embed: openai: BaseURL is empty (want e.g. http://localhost:11434/v1)")
	case err != nil:
		return nil, errors.New("embed: openai: BaseURL is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("embed: openai: BaseURL must be an absolute http:// or https:// URL")
	case u.Host == "":
		return nil, errors.New("embed: openai: BaseURL has no host")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, errors.New("embed: openai: BaseURL must not have a query or fragment")
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("embed: openai: Model is empty")
	}
	if cfg.Dim < 0 {
		return nil, fmt.Errorf("embed: openai: Dim %d is negative", cfg.Dim)
	}
	if cfg.BatchSize < 0 {
		return nil, fmt.Errorf("embed: openai: BatchSize %d is negative", cfg.BatchSize)
	}
	if cfg.Timeout < 0 || cfg.MinBackoff < 0 || cfg.MaxBackoff < 0 {
		return nil, errors.New("embed: openai: Timeout, MinBackoff and MaxBackoff must not be negative")
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	} else if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MinBackoff > cfg.MaxBackoff {
		return nil, fmt.Errorf("embed: openai: MinBackoff %v exceeds MaxBackoff %v", cfg.MinBackoff, cfg.MaxBackoff)
	}
	o := &OpenAI{
		cfg:      cfg,
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/embeddings",
		client:   cfg.HTTPClient,
	}
	if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/api") {
		// Ollama's own API (http://host:11434/api): POST /api/embed with
		// the same model and input, answering {"embeddings": [[...]]}.
		// Its OpenAI-compatible API is the /v1 base URL.
		o.endpoint = strings.TrimRight(cfg.BaseURL, "/") + "/embed"
	}
	if o.client == nil {
		o.client = &http.Client{}
	}
	o.dim.Store(int64(cfg.Dim))
	return o, nil
}

// Model returns "openai:" followed by the configured model name.
func (o *OpenAI) Model() string { return "openai:" + o.cfg.Model }

// Dim returns the configured dimension, or the one learned from the first
// answer; it is 0 while neither is known.
func (o *OpenAI) Dim() int { return int(o.dim.Load()) }

// Embed embeds texts in batches of BatchSize, one request per batch, in
// order. Texts are sent as they are; servers typically reject empty
// strings.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += o.cfg.BatchSize {
		end := min(start+o.cfg.BatchSize, len(texts))
		vecs, err := o.embedBatch(ctx, texts[start:end])
		if err != nil {
			if len(texts) > o.cfg.BatchSize {
				return nil, fmt.Errorf("%w (texts %d to %d of %d)", err, start, end-1, len(texts))
			}
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// embedBatch sends one batch, retrying temporary failures.
func (o *OpenAI) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(embeddingRequest{Model: o.cfg.Model, Input: texts, EncodingFormat: "float"})
	if err != nil {
		return nil, fmt.Errorf("embed: openai: encoding request: %w", err)
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embed: openai: %w", err)
		}
		vecs, err := o.post(ctx, body, len(texts))
		if err == nil {
			return vecs, nil
		}
		var te *temporaryError
		if !errors.As(err, &te) {
			return nil, err
		}
		if attempt >= o.cfg.MaxRetries {
			if attempt == 0 {
				return nil, te.err
			}
			return nil, &wrapError{prefix: fmt.Sprintf("giving up after %d attempts: ", attempt+1), err: te.err}
		}
		wait := o.backoff(attempt, te)
		if wait <= 0 {
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("embed: openai: %w while waiting to retry (last error: %s)", ctx.Err(), strings.TrimPrefix(te.Error(), errPrefix))
		case <-timer.C:
		}
	}
}

// backoff is the wait before retry number attempt+1: the server's
// Retry-After when it sent one, capped by MaxBackoff; otherwise
// memgate's one backoff (internal/backoff): MinBackoff·2^attempt, capped
// by MaxBackoff, with equal jitter.
func (o *OpenAI) backoff(attempt int, te *temporaryError) time.Duration {
	if te.hasRetryAfter {
		return min(max(te.retryAfter, 0), o.cfg.MaxBackoff)
	}
	return backoff.Delay(o.cfg.MinBackoff, o.cfg.MaxBackoff, attempt)
}

// post makes one attempt. Errors worth retrying come wrapped in a
// *temporaryError; all errors are free of the API key.
func (o *OpenAI) post(ctx context.Context, body []byte, n int) ([][]float32, error) {
	rctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	req, err := remote.NewPost(rctx, o.endpoint, o.cfg.APIKey, body)
	if err != nil {
		return nil, o.sanitize(fmt.Errorf("embed: openai: building request: %w", err))
	}
	resp, err := o.client.Do(req)
	if err != nil {
		if ctx.Err() != nil { // the caller gave up: no retry
			return nil, fmt.Errorf("embed: openai: %w", ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if rctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("request timed out after %v: %w", o.cfg.Timeout, err)
		}
		return nil, &temporaryError{err: o.sanitize(fmt.Errorf("embed: openai: POST %s: %w", remote.RedactedURL(o.endpoint, o.cfg.APIKey), err))}
	}
	defer remote.Drain(resp.Body, maxErrorBody)

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		f := remote.ReadFailure(resp, o.cfg.APIKey, maxErrorBody, maxErrorMessage)
		apiErr := &APIError{StatusCode: f.Status, Message: f.Message}
		if f.Status == http.StatusTooManyRequests || f.Status >= 500 {
			return nil, &temporaryError{err: apiErr, retryAfter: f.RetryAfter, hasRetryAfter: f.HasRetryAfter}
		}
		return nil, apiErr
	}

	var er embeddingResponse
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxResponseBody))
	if err := dec.Decode(&er); err != nil {
		if rctx.Err() != nil && ctx.Err() == nil { // per-attempt timeout while reading
			return nil, &temporaryError{err: fmt.Errorf("embed: openai: reading response: request timed out after %v", o.cfg.Timeout)}
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("embed: openai: %w", ctx.Err())
		}
		err = o.sanitize(fmt.Errorf("embed: openai: decoding response: %w", err))
		var se *json.SyntaxError
		var ute *json.UnmarshalTypeError
		if errors.As(err, &se) || errors.As(err, &ute) {
			return nil, err
		}
		return nil, &temporaryError{err: err} // cut off mid-answer: retry
	}
	return o.vectors(&er, n)
}

// vectors checks an answer for n texts and returns its vectors in input
// order, normalised.
func (o *OpenAI) vectors(er *embeddingResponse, n int) ([][]float32, error) {
	if len(er.Data) == 0 && len(er.Embeddings) > 0 { // Ollama's /api/embed
		for i, v := range er.Embeddings {
			er.Data = append(er.Data, embeddingDatum{Index: i, Embedding: v})
		}
	}
	if len(er.Data) != n {
		return nil, fmt.Errorf("embed: openai: sent %d texts, got %d embeddings", n, len(er.Data))
	}
	out := make([][]float32, n)
	for _, d := range er.Data {
		if d.Index < 0 || d.Index >= n {
			return nil, fmt.Errorf("embed: openai: embedding index %d out of range [0, %d)", d.Index, n)
		}
		if out[d.Index] != nil {
			return nil, fmt.Errorf("embed: openai: embedding index %d appears twice", d.Index)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("embed: openai: embedding %d is empty", d.Index)
		}
		out[d.Index] = d.Embedding
	}
	want := o.dim.Load()
	if want == 0 {
		// Learn the dimension; a concurrent call may have learned it first.
		if !o.dim.CompareAndSwap(0, int64(len(out[0]))) {
			want = o.dim.Load()
		} else {
			want = int64(len(out[0]))
		}
	}
	for i, v := range out {
		if int64(len(v)) != want {
			return nil, fmt.Errorf("embed: openai: dimension mismatch for model %q: expected %d, got %d (embedding %d)", o.cfg.Model, want, len(v), i)
		}
		Normalize(v)
	}
	return out, nil
}

// sanitize returns err with the API key removed from its message; the
// result still unwraps to err.
func (o *OpenAI) sanitize(err error) error {
	msg := err.Error()
	if clean := remote.Redact(o.cfg.APIKey, msg); clean != msg {
		return &redactedError{msg: clean, err: err}
	}
	return err
}

// APIError is a non-2xx answer of the embeddings endpoint.
type APIError struct {
	StatusCode int
	// Message is the server's error message (or the start of its body),
	// at most 200 bytes, with the API key removed.
	Message string
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("embed: openai: HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("embed: openai: HTTP %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// temporaryError marks a failure worth retrying.
type temporaryError struct {
	err           error
	retryAfter    time.Duration
	hasRetryAfter bool
}

func (e *temporaryError) Error() string { return e.err.Error() }
func (e *temporaryError) Unwrap() error { return e.err }

const errPrefix = "embed: openai: "

// wrapError adds context after errPrefix to an error that starts with it.
type wrapError struct {
	prefix string
	err    error
}

func (e *wrapError) Error() string {
	return errPrefix + e.prefix + strings.TrimPrefix(e.err.Error(), errPrefix)
}
func (e *wrapError) Unwrap() error { return e.err }

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

type embeddingRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type embeddingResponse struct {
	Data  []embeddingDatum `json:"data"`
	Model string           `json:"model"`
	Usage json.RawMessage  `json:"usage"`
	// Embeddings is the answer of Ollama's /api/embed, in input order.
	Embeddings [][]float32 `json:"embeddings"`
}

type embeddingDatum struct {
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

// APIKeyFromEnv reads an API key from the environment variable name, or
// from the file named by name+"_FILE" (contents trimmed of surrounding
// white space), as container secrets are usually mounted. It is an error
// to set both. Neither set gives "", nil: a key is optional for local
// servers. getenv and readFile default to os.Getenv and os.ReadFile.
func APIKeyFromEnv(name string, getenv func(string) string, readFile func(string) ([]byte, error)) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if readFile == nil {
		readFile = os.ReadFile
	}
	fileVar := name + "_FILE"
	key, file := getenv(name), getenv(fileVar)
	switch {
	case key != "" && file != "":
		return "", fmt.Errorf("embed: both %s and %s are set; set only one", name, fileVar)
	case key != "":
		return strings.TrimSpace(key), nil
	case file == "":
		return "", nil
	}
	b, err := readFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("embed: reading %s (%s): %w", fileVar, file, err)
	}
	key = strings.TrimSpace(string(b))
	if key == "" {
		return "", fmt.Errorf("embed: %s (%s) is empty", fileVar, file)
	}
	return key, nil
}
