// Package remote is the plumbing shared by memgate's clients of remote
// model APIs (the OpenAI-compatible embedder and the LLM extractor):
// reading error bodies and Retry-After headers, and keeping API keys out
// of anything they return.
package remote

import (
	"encoding/json"
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
