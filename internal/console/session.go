package console

import (
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/memgate/memgate/internal/fault"
)

const (
	// CookieName is the session cookie. It holds a random session id,
	// never the operator's token.
	CookieName = "memgate_console"
	// CSRFHeader carries the session's CSRF token on every request that
	// is not GET or HEAD.
	CSRFHeader = "X-CSRF-Token"
	// DefaultTTL is how long a session lasts from sign-in.
	DefaultTTL = 8 * time.Hour
)

// Options configure console sessions. The sessions themselves live in
// the database (core.ConsoleSignIn): they survive a restart, every
// replica accepts them, and their expiry follows the service's clock.
type Options struct {
	// TTL is a session's lifetime from sign-in; DefaultTTL when zero.
	TTL time.Duration
}

// SessionID is the session id the request's cookie carries; present is
// false when the request carries no session cookie at all (the caller
// then tries other credentials).
func SessionID(r *http.Request) (id string, present bool) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return "", false
	}
	return c.Value, true
}

// CheckCSRF refuses a request that changes state (NeedsCSRF) without
// the session's CSRF token in CSRFHeader: the cookie alone never
// authorises a write.
func CheckCSRF(r *http.Request, csrf string) error {
	if !NeedsCSRF(r.Method) {
		return nil
	}
	if csrf == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(csrf)) != 1 {
		return fault.New(fault.PermissionDenied, "missing or wrong CSRF token: send the session's token in "+CSRFHeader)
	}
	return nil
}

// Cookie is the session cookie for id: HttpOnly, SameSite=Strict,
// Secure when secure, expiring with the session (at expires, ttl from
// now).
func Cookie(id string, expires time.Time, ttl time.Duration, secure bool) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: id, Path: "/", Expires: expires, MaxAge: max(1, int(ttl/time.Second)),
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// ClearCookie is the cookie that removes the session cookie from the
// browser.
func ClearCookie(secure bool) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// NeedsCSRF reports whether a request with this method changes state
// and so must carry the CSRF token.
func NeedsCSRF(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}
