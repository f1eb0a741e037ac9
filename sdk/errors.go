package sdk

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error codes a memgate server answers with (SPEC §12). Error.Code holds
// one of these, or whatever a newer server sends.
const (
	CodeInvalidArgument  = "invalid_argument"
	CodeUnauthenticated  = "unauthenticated"
	CodePermissionDenied = "permission_denied"
	CodeNotFound         = "not_found"
	CodeVersionConflict  = "version_conflict"
	CodeConflict         = "conflict"
	CodeTooLarge         = "too_large"
	CodeGateRejected     = "gate_rejected"
	CodeRateLimited      = "rate_limited"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
)

// Error is a non-2xx answer from the server, parsed from the
// {"error": {"code", "message", "details"}} envelope. When the body is not
// such an envelope, Code is empty and Message is the HTTP status text.
//
// The client's bearer token and the gateway user key are removed from
// Message and Details before an Error is returned, in case a server or a
// proxy in front of it echoes them.
type Error struct {
	Status  int    // HTTP status
	Code    string // e.g. CodeNotFound; empty when the body had no envelope
	Message string
	Details any // the envelope's details object, decoded; nil when absent
	// RetryAfter is the Retry-After header as a duration (zero when absent
	// or unparseable); servers send it with 429 and 503.
	RetryAfter time.Duration
}

// Error implements error: "memgate: <status> <code>: <message>".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("memgate: ")
	b.WriteString(strconv.Itoa(e.Status))
	if e.Code != "" {
		b.WriteString(" ")
		b.WriteString(e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// ErrBadResponse is wrapped by the error returned when a server answers
// 2xx with a body that is not the documented JSON shape (malformed JSON,
// or a required field such as "results" missing).
var ErrBadResponse = errors.New("memgate: response body is not the documented shape")

// StatusOf returns the HTTP status carried by err if it is (or wraps) an
// *Error, else 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool { return StatusOf(err) == http.StatusNotFound }

// IsConflict reports whether err is a 409 answer (version_conflict or
// conflict).
func IsConflict(err error) bool { return StatusOf(err) == http.StatusConflict }

// parseRetryAfter reads a Retry-After header: delay-seconds or an
// HTTP-date. now is passed so tests need not depend on the wall clock.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > 1<<31 {
			n = 1 << 31
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// scrub replaces every occurrence of a secret in s.
func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	return s
}

// scrubAny scrubs every string inside a decoded JSON value.
func scrubAny(v any, secrets []string) any {
	switch x := v.(type) {
	case string:
		return scrub(x, secrets)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[scrub(k, secrets)] = scrubAny(val, secrets)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = scrubAny(val, secrets)
		}
		return out
	}
	return v
}

// badResponseError is a 2xx answer whose body is not the documented
// shape. It matches ErrBadResponse with errors.Is.
type badResponseError struct {
	status int
	msg    string
}

func (e *badResponseError) Error() string        { return e.msg }
func (e *badResponseError) Is(target error) bool { return target == ErrBadResponse }

// badResponse says what went wrong, never what the body held.
func badResponse(method, path string, status int, what string) error {
	return &badResponseError{status: status, msg: fmt.Sprintf("%v: %s %s answered %d: %s", ErrBadResponse, method, path, status, what)}
}
