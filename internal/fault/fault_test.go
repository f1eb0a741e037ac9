package fault

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

var allCodes = []Code{InvalidArgument, Unauthenticated, PermissionDenied, NotFound, VersionConflict, TooLarge,
	GateRejected, RateLimited, Unavailable, Internal, MethodNotAllowed}

func TestEveryCodeHasADistinctExitCode(t *testing.T) {
	seen := map[int]Code{}
	for _, c := range allCodes {
		e := ExitCode(c)
		if e == 0 || e == ExitUsage {
			t.Errorf("%s maps to reserved exit %d", c, e)
		}
		if prev, ok := seen[e]; ok {
			t.Errorf("%s and %s share exit code %d", c, prev, e)
		}
		seen[e] = c
	}
}

func TestHTTPStatusMatchesSpec(t *testing.T) {
	want := map[Code]int{InvalidArgument: 400, Unauthenticated: 401, PermissionDenied: 403, NotFound: 404,
		VersionConflict: 409, TooLarge: 413, GateRejected: 422, RateLimited: 429, Unavailable: 503, Internal: 500, MethodNotAllowed: 405}
	for c, s := range want {
		if got := HTTPStatus(c); got != s {
			t.Errorf("%s: %d, want %d", c, got, s)
		}
		if c != Internal && c != VersionConflict && FromHTTPStatus(s) != c {
			t.Errorf("FromHTTPStatus(%d) = %s", s, FromHTTPStatus(s))
		}
	}
	if HTTPStatus(Conflict) != http.StatusConflict {
		t.Error("conflict")
	}
}

func TestAsWrapsForeignErrorsAsInternal(t *testing.T) {
	cause := errors.New("disk on fire")
	fe := As(fmt.Errorf("writing: %w", cause))
	if fe.Code != Internal || fe.Message != "internal error" || !errors.Is(fe, cause) {
		t.Fatalf("%+v", fe)
	}
	wrapped := fmt.Errorf("ctx: %w", Field("name", "bad"))
	if CodeOf(wrapped) != InvalidArgument || As(wrapped).Details["field"] != "name" {
		t.Fatal("wrapped fault lost")
	}
	if CodeOf(nil) != "" || ExitCode(CodeOf(nil)) != 0 {
		t.Fatal("nil")
	}
}

func TestToolErrorTextHidesCauses(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{Wrap(NotFound, errors.New("sql: no rows in table secret_things"), "record not found"), "not_found: record not found"},
		{errors.New("disk on fire at /var/lib/memgate"), "internal: internal error"},
		{&Error{Code: RateLimited, Message: "rate limit exceeded, retry later", RetryAfter: 1500 * time.Millisecond}, "rate_limited: rate limit exceeded, retry later (retry after 2s)"},
		{fmt.Errorf("ctx: %w", Field("type", "must be a record type")), "invalid_argument: type: must be a record type"},
	} {
		if got := ToolErrorText(c.err); got != c.want {
			t.Errorf("ToolErrorText(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestStoreUnavailable(t *testing.T) {
	own := Field("path", "is required")
	if got := StoreUnavailable(own); got != error(own) {
		t.Fatalf("a fault changed: %v", got)
	}
	for _, c := range []struct {
		err   error
		retry time.Duration
	}{{context.DeadlineExceeded, time.Second}, {errors.New("disk I/O error"), 5 * time.Second}} {
		fe := As(StoreUnavailable(c.err))
		if fe.Code != Unavailable || fe.RetryAfter != c.retry || !errors.Is(fe, c.err) {
			t.Fatalf("%v mapped to %+v", c.err, fe)
		}
	}
}
