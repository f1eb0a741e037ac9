// Package fault defines memgate's error values: a small set of codes that
// every layer returns and that map, in this one file, to HTTP statuses, MCP
// tool errors and CLI exit codes.
//
// A fault's Message is written for the client and must never contain a
// secret or echo user input verbatim; the wrapped cause is for logs only.
package fault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Code is a stable, machine-readable error code (SPEC §12).
type Code string

const (
	InvalidArgument  Code = "invalid_argument"
	Unauthenticated  Code = "unauthenticated"
	PermissionDenied Code = "permission_denied"
	NotFound         Code = "not_found"
	MethodNotAllowed Code = "method_not_allowed" // the route exists under other methods (HTTP only)
	VersionConflict  Code = "version_conflict"
	Conflict         Code = "conflict" // a state conflict other than versions (e.g. approval already decided)
	TooLarge         Code = "too_large"
	GateRejected     Code = "gate_rejected"
	RateLimited      Code = "rate_limited"
	Unavailable      Code = "unavailable"
	Internal         Code = "internal"
)

// Error is a coded error. Details is optional structured context safe to
// show to the client (field names, allowed values, retry hints).
type Error struct {
	Code       Code
	Message    string
	Details    map[string]any
	RetryAfter time.Duration // for rate_limited and unavailable
	Cause      error         // logged, never shown to clients
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// New returns a coded error with a client-safe message.
func New(code Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Wrap returns a coded error that keeps cause for logs.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Cause: cause}
}

// Field returns an invalid_argument error naming the offending field.
func Field(field, problem string) *Error {
	return &Error{Code: InvalidArgument, Message: field + ": " + problem, Details: map[string]any{"field": field}}
}

// With returns a copy of e with a detail added.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// As extracts a *Error from err. Errors that are not faults are internal.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	return &Error{Code: Internal, Message: "internal error", Cause: err}
}

// StoreUnavailable maps an error from reading the store in a capability
// package over core (memory files, knowledge): a fault passes through, a
// cancelled or timed-out request and any other failure are unavailable,
// with a retry hint.
func StoreUnavailable(err error) error {
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: Unavailable, Message: "request cancelled or timed out", RetryAfter: time.Second, Cause: err}
	}
	return &Error{Code: Unavailable, Message: "database unavailable, retry later", RetryAfter: 5 * time.Second, Cause: err}
}

// CodeOf returns err's code, Internal for foreign errors and "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return As(err).Code
}

// Is reports whether err carries code.
func Is(err error, code Code) bool { return err != nil && CodeOf(err) == code }

// HTTPStatus maps a code to its HTTP status.
func HTTPStatus(c Code) int {
	switch c {
	case InvalidArgument:
		return http.StatusBadRequest
	case Unauthenticated:
		return http.StatusUnauthorized
	case PermissionDenied:
		return http.StatusForbidden
	case NotFound:
		return http.StatusNotFound
	case MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case VersionConflict, Conflict:
		return http.StatusConflict
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case GateRejected:
		return http.StatusUnprocessableEntity
	case RateLimited:
		return http.StatusTooManyRequests
	case Unavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// ExitCode maps a code to a distinct CLI exit status. 1 is reserved for
// internal errors and 2 for usage errors detected by the CLI itself.
func ExitCode(c Code) int {
	switch c {
	case "":
		return 0
	case InvalidArgument:
		return 3
	case Unauthenticated:
		return 4
	case PermissionDenied:
		return 5
	case NotFound:
		return 6
	case VersionConflict, Conflict:
		return 7
	case TooLarge:
		return 8
	case GateRejected:
		return 9
	case RateLimited:
		return 10
	case Unavailable:
		return 11
	case MethodNotAllowed:
		return 13 // 12 is the CLI's "audit chain broken"
	default:
		return 1
	}
}

// ToolErrorText is how err reads in an MCP tool result (isError set):
// "code: message", with the retry hint of rate_limited and unavailable.
// Like an HTTP error body it carries the client message, never the cause,
// so a model can act on the code without seeing internals.
func ToolErrorText(err error) string {
	fe := As(err)
	text := string(fe.Code) + ": " + fe.Message
	if fe.RetryAfter > 0 {
		text += fmt.Sprintf(" (retry after %s)", fe.RetryAfter.Round(time.Second))
	}
	return text
}

// ExitUsage is the exit status for command-line usage errors.
const ExitUsage = 2

// FromHTTPStatus recovers a code from a status for clients that only see
// the status (the CLI talking to a remote server uses the body's code).
func FromHTTPStatus(status int) Code {
	switch status {
	case http.StatusBadRequest:
		return InvalidArgument
	case http.StatusUnauthorized:
		return Unauthenticated
	case http.StatusForbidden:
		return PermissionDenied
	case http.StatusNotFound:
		return NotFound
	case http.StatusMethodNotAllowed:
		return MethodNotAllowed
	case http.StatusConflict:
		return Conflict
	case http.StatusRequestEntityTooLarge:
		return TooLarge
	case http.StatusUnprocessableEntity:
		return GateRejected
	case http.StatusTooManyRequests:
		return RateLimited
	case http.StatusServiceUnavailable:
		return Unavailable
	}
	return Internal
}
