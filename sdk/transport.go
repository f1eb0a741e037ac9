package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Response bodies are read up to these sizes; longer bodies are cut off
// (and then fail to decode as JSON).
const (
	maxResponseBytes = 32 << 20
	maxErrorBytes    = 64 << 10
)

// DefaultHTTPTimeout bounds each request made through the default HTTP
// client. A context deadline, when shorter, wins.
const DefaultHTTPTimeout = 60 * time.Second

// Option configures a Client or GatewayClient.
type Option func(*settings)

type settings struct {
	httpClient *http.Client
	userAgent  string
}

// WithHTTPClient makes the client send its requests through hc. The
// default client does not follow redirects (so a redirect can never carry
// a token or a user key to another host) and times out after
// DefaultHTTPTimeout; a client passed here is used as it is.
func WithHTTPClient(hc *http.Client) Option {
	return func(s *settings) {
		if hc != nil {
			s.httpClient = hc
		}
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(s *settings) { s.userAgent = ua }
}

// transport is what Client and GatewayClient share: a base URL, an HTTP
// client, JSON in and out, and the mapping of error answers to *Error.
type transport struct {
	base string // scheme://host[/prefix], no trailing slash
	hc   *http.Client
	ua   string
	now  func() time.Time
}

func newTransport(baseURL string, opts []Option) (*transport, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	s := settings{userAgent: "memgate-go-sdk"}
	for _, o := range opts {
		o(&s)
	}
	if s.httpClient == nil {
		s.httpClient = &http.Client{
			Timeout: DefaultHTTPTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	return &transport{base: base, hc: s.httpClient, ua: s.userAgent, now: time.Now}, nil
}

// errBaseURL never echoes the URL, which may hold credentials.
var errBaseURL = errors.New("memgate: base URL must be an absolute http or https URL")

func parseBaseURL(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", errBaseURL
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// validHeaderValue reports whether s can travel in an HTTP header as is.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// call is one request.
type call struct {
	method string
	path   string // already escaped, starting with "/"
	query  url.Values
	bearer string // sent as Authorization: Bearer when non-empty
	body   any    // JSON-encoded when non-nil
	// secrets are scrubbed from error answers.
	secrets []string
}

// do sends c and decodes a 2xx body into out (when out is non-nil). A
// non-2xx answer is an *Error. It never retries: a POST that may have
// reached the server is not sent twice.
func (t *transport) do(ctx context.Context, c call, out any) (int, error) {
	var body io.Reader
	if c.body != nil {
		b, err := json.Marshal(c.body)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	u := t.base + c.path
	if len(c.query) > 0 {
		u += "?" + c.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, c.method, u, body)
	if err != nil {
		return 0, errors.New("memgate: cannot build request for " + c.method + " " + c.path)
	}
	req.Header.Set("Accept", "application/json")
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if t.ua != "" {
		req.Header.Set("User-Agent", t.ua)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
		return resp.StatusCode, t.errorFrom(resp, raw, c.secrets)
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
		return resp.StatusCode, nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return resp.StatusCode, err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return resp.StatusCode, badResponse(c.method, c.path, resp.StatusCode, "body is not valid JSON of the documented shape")
	}
	return resp.StatusCode, nil
}

func (t *transport) errorFrom(resp *http.Response, raw []byte, secrets []string) *Error {
	e := &Error{
		Status:     resp.StatusCode,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), t.now()),
	}
	var env struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Details any    `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error != nil {
		e.Code = scrub(env.Error.Code, secrets)
		e.Message = scrub(env.Error.Message, secrets)
		e.Details = scrubAny(env.Error.Details, secrets)
	}
	if e.Message == "" {
		e.Message = strings.ToLower(http.StatusText(resp.StatusCode))
	}
	return e
}
