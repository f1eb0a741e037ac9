// Package remote is the plumbing shared by memgate's clients of remote
// model APIs (the OpenAI-compatible embedder and the LLM extractor):
// reading error bodies and Retry-After headers, and keeping API keys out
// of anything they return.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxRetryAfter caps what a Retry-After header may ask for.
const MaxRetryAfter = 24 * time.Hour

// ErrorMessage extracts a short message from an error body: the "message"
// of an OpenAI-style {"error": {...}} object, an {"error": "..."} string
// (Ollama) or a {"message": "..."} field, else the body itself; on one
// line and at most limit bytes (cut at a rune boundary, with "...").
func ErrorMessage(raw []byte, limit int) string {
	var msg string
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &v) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			msg = obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case v.Message != "":
			msg = v.Message
		}
	}
	if msg == "" {
		msg = string(raw)
	}
	msg = strings.Join(strings.Fields(strings.ToValidUTF8(msg, "?")), " ")
	if len(msg) > limit {
		const ellipsis = "..."
		cut := limit - len(ellipsis)
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:max(cut, 0)] + ellipsis
	}
	return msg
}

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date,
// at most MaxRetryAfter. ok is false when there is none or it is invalid.
func RetryAfter(h string, now time.Time) (d time.Duration, ok bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, int64(MaxRetryAfter/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(t.Sub(now), 0), MaxRetryAfter), true
	}
	return 0, false
}

// Redact removes secret from s.
func Redact(secret, s string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[REDACTED]")
}

// RedactedURL is raw with any password replaced, and secret removed, for
// messages; "(endpoint)" when raw does not parse.
func RedactedURL(raw, secret string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(endpoint)"
	}
	return Redact(secret, u.Redacted())
}

// NewPost builds the JSON POST both OpenAI-compatible clients send: JSON
// in and out, and the key, when there is one, as a bearer token.
func NewPost(ctx context.Context, endpoint, apiKey string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	return req, nil
}

// Failure is what a non-2xx answer says: its status, its error message
// (at most maxMessage bytes, apiKey redacted before and after cutting, so
// no piece of the key survives) and its Retry-After.
type Failure struct {
	Status        int
	Message       string
	RetryAfter    time.Duration
	HasRetryAfter bool
}

// ReadFailure reads a non-2xx answer's body (at most maxBody bytes).
func ReadFailure(resp *http.Response, apiKey string, maxBody int64, maxMessage int) Failure {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	f := Failure{Status: resp.StatusCode,
		Message: Redact(apiKey, ErrorMessage([]byte(Redact(apiKey, string(raw))), maxMessage))}
	f.RetryAfter, f.HasRetryAfter = RetryAfter(resp.Header.Get("Retry-After"), time.Now())
	return f
}

// Drain reads what is left of a body (at most limit bytes) and closes it,
// so the connection can be reused.
func Drain(body io.ReadCloser, limit int64) {
	_, _ = io.CopyN(io.Discard, body, limit)
	body.Close()
}
