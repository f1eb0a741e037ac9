package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/memgate/memgate/internal/console"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
)

// EnableConsole serves the operator console at /console/ and lets its
// session cookie authenticate REST requests (sessionPrincipal). Call it
// before Handler. o sets the session lifetime; sessions live in the
// database, so every replica accepts them.
func (s *Server) EnableConsole(o console.Options) {
	if o.TTL <= 0 {
		o.TTL = console.DefaultTTL
	}
	s.console = &o
}

// sessionPrincipal is the principal of the request's console session.
// present is false when the request carries no session cookie (or the
// console is off). A request that changes state must also carry the
// session's CSRF token: the cookie alone never authorises a write.
func (s *Server) sessionPrincipal(r *http.Request) (p memory.Principal, sess core.ConsoleSession, present bool, err error) {
	if s.console == nil {
		return p, sess, false, nil
	}
	id, present := console.SessionID(r)
	if !present {
		return p, sess, false, nil
	}
	p, sess, err = s.svc.ConsoleSessionOf(r.Context(), id)
	if err == nil {
		err = console.CheckCSRF(r, sess.CSRF)
	}
	if err != nil {
		return memory.Principal{}, core.ConsoleSession{}, true, err
	}
	return p, sess, true, nil
}

// mountConsole adds the console's page and session endpoint to mux.
func (s *Server) mountConsole(mux *http.ServeMux) {
	mux.Handle(console.Prefix, console.Assets())
	mux.Handle("/console", http.RedirectHandler(console.Prefix, http.StatusMovedPermanently))
	mux.Handle(consoleSessionPath, s.wrap(Route{Path: consoleSessionPath, Auth: public, handle: s.consoleSession}))
}

const consoleSessionPath = "/console/session"

// sessionInfo is what the page learns about its session: who it acts as
// and the CSRF token it must send. The token never is in it.
type sessionInfo struct {
	Principal memory.Principal `json:"principal"`
	CSRFToken string           `json:"csrf_token"`
	ExpiresAt time.Time        `json:"expires_at"`
}

type signInRequest struct {
	Token string `json:"token"`
}

// consoleSession signs in (POST, with an operator token), reports the
// session (GET) and signs out (DELETE, with the CSRF token).
func (s *Server) consoleSession(w http.ResponseWriter, r *http.Request, _ memory.Principal) error {
	console.SecureHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	secure := r.TLS != nil
	switch r.Method {
	case http.MethodPost:
		// No cookie yet, so no CSRF token: a sign-in from another site
		// (login CSRF) is refused by its Origin.
		if !sameOrigin(r) {
			return fault.New(fault.PermissionDenied, "sign-in must come from the console's own origin")
		}
		var req signInRequest
		if err := Decode(r, &req); err != nil {
			return err
		}
		if req.Token == "" {
			return fault.Field("token", "is required")
		}
		p, sess, err := s.svc.ConsoleSignIn(r.Context(), req.Token, s.console.TTL)
		if err != nil {
			return err
		}
		http.SetCookie(w, console.Cookie(sess.ID, sess.ExpiresAt, s.console.TTL, secure))
		return writeJSON(w, http.StatusOK, sessionInfo{Principal: p, CSRFToken: sess.CSRF, ExpiresAt: sess.ExpiresAt})
	case http.MethodGet, http.MethodHead:
		p, sess, present, err := s.sessionPrincipal(r)
		if !present {
			err = fault.New(fault.Unauthenticated, "not signed in")
		}
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, sessionInfo{Principal: p, CSRFToken: sess.CSRF, ExpiresAt: sess.ExpiresAt})
	case http.MethodDelete:
		p, _, present, err := s.sessionPrincipal(r)
		if !present {
			err = fault.New(fault.Unauthenticated, "not signed in")
		}
		if err != nil {
			return err
		}
		id, _ := console.SessionID(r)
		if err := s.svc.ConsoleSignOut(r.Context(), p, id); err != nil {
			return err
		}
		http.SetCookie(w, console.ClearCookie(secure))
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Allow", "DELETE, GET, HEAD, POST")
	return &fault.Error{Code: fault.MethodNotAllowed, Message: "method " + allowedToken(r.Method) + " is not allowed on this route",
		Details: map[string]any{"allow": []string{"DELETE", "GET", "HEAD", "POST"}}}
}

// sameOrigin reports whether a browser request came from this server's
// own pages: browsers send Origin on every POST. A request without one
// is not a browser's cross-site request.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}
