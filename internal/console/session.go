package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
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
	// maxSessions bounds the table; signing in needs an operator token,
	// so it is reached only by a misbehaving operator script.
	maxSessions = 10000
)

// Options configure the session table.
type Options struct {
	// TTL is a session's lifetime from sign-in; DefaultTTL when zero.
	TTL time.Duration
	// Clock is the time source (tests inject one); time.Now when nil.
	Clock func() time.Time
}

// Sessions is the table of signed-in console sessions. It lives in the
// process: a session is accepted by the replica that issued it, and a
// restart signs everyone out (docs/console.md).
type Sessions struct {
	ttl   time.Duration
	clock func() time.Time
	mu    sync.Mutex
	// byHash is keyed by the sha256 of the session id, so the table
	// (a heap dump) holds nothing a cookie could be made from.
	byHash map[[32]byte]*Session
}

// Session is one signed-in operator.
type Session struct {
	PrincipalID string
	CSRF        string
	Expires     time.Time
}

// NewSessions returns an empty table.
func NewSessions(o Options) *Sessions {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return &Sessions{ttl: o.TTL, clock: o.Clock, byHash: map[[32]byte]*Session{}}
}

// Create starts a session for principalID and returns its cookie
// (HttpOnly, SameSite=Strict, Secure when secure) and the session.
func (s *Sessions) Create(principalID string, secure bool) (*http.Cookie, Session) {
	id, csrf := randomToken(), randomToken()
	now := s.clock()
	sess := &Session{PrincipalID: principalID, CSRF: csrf, Expires: now.Add(s.ttl)}
	s.mu.Lock()
	s.pruneLocked(now)
	if len(s.byHash) >= maxSessions {
		// The oldest-expiring session makes room; a map has no order, so
		// find it (rare, and bounded by maxSessions).
		var oldest [32]byte
		var at time.Time
		for h, v := range s.byHash {
			if at.IsZero() || v.Expires.Before(at) {
				oldest, at = h, v.Expires
			}
		}
		delete(s.byHash, oldest)
	}
	s.byHash[sha256.Sum256([]byte(id))] = sess
	s.mu.Unlock()
	return &http.Cookie{Name: CookieName, Value: id, Path: "/", Expires: sess.Expires, MaxAge: int(s.ttl / time.Second),
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}, *sess
}

// Lookup finds the request's session. present is false when the request
// carries no session cookie at all (the caller then tries other
// credentials). A cookie for no live session is Unauthenticated. When
// csrf is set, the request must also carry the session's CSRF token in
// CSRFHeader.
func (s *Sessions) Lookup(r *http.Request, csrf bool) (sess Session, present bool, err error) {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return Session{}, false, nil
	}
	h := sha256.Sum256([]byte(c.Value))
	now := s.clock()
	s.mu.Lock()
	p, ok := s.byHash[h]
	if ok && !now.Before(p.Expires) {
		delete(s.byHash, h)
		ok = false
	}
	if ok {
		sess = *p
	}
	s.mu.Unlock()
	if !ok {
		return Session{}, true, fault.New(fault.Unauthenticated, "console session expired or signed out: sign in again")
	}
	if csrf && subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(sess.CSRF)) != 1 {
		return Session{}, true, fault.New(fault.PermissionDenied, "missing or wrong CSRF token: send the session's token in "+CSRFHeader)
	}
	return sess, true, nil
}

// Delete ends the request's session, if any.
func (s *Sessions) Delete(r *http.Request) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return
	}
	s.mu.Lock()
	delete(s.byHash, sha256.Sum256([]byte(c.Value)))
	s.mu.Unlock()
}

// ClearCookie is the cookie that removes the session cookie from the
// browser.
func ClearCookie(secure bool) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, Expires: time.Unix(0, 0),
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// Len is how many sessions are in the table (expired ones included
// until they are pruned).
func (s *Sessions) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byHash)
}

func (s *Sessions) pruneLocked(now time.Time) {
	for h, v := range s.byHash {
		if !now.Before(v.Expires) {
			delete(s.byHash, h)
		}
	}
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

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
