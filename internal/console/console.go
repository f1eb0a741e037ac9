// Package console is memgate's operator console: a web page served at
// /console/ by `memgate serve`, embedded in the binary, written as plain
// HTML, CSS and JavaScript modules (no build step, nothing fetched from
// elsewhere). The page calls the REST API on the same origin; this
// package holds only the assets, the security headers every console
// response carries, and the session cookie and CSRF rules that let a
// signed-in operator's cookie stand in for its token (internal/api
// checks it, in the one place it checks tokens; the sessions live in the
// database, core.ConsoleSignIn). See docs/console.md.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// CSP is the Content-Security-Policy of every console response: scripts
// and styles only from the console's own files (no inline script, no
// eval), requests only to the same origin, never framed.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// SecureHeaders sets the headers every console response carries.
func SecureHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
}

// Assets serves the console's files under Prefix, with SecureHeaders on
// every answer (errors included). Any path that is not a file is the
// page itself, so a reload on a deep link works.
func Assets() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SecureHeaders(w.Header())
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name == "" || name == "index.html" || !strings.Contains(name, ".") {
			// FileServer redirects index.html to the directory; serve the
			// page directly instead.
			b, err := fs.ReadFile(sub, "index.html")
			if err != nil {
				http.Error(w, "console unavailable", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(b)
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = "/" + name
		files.ServeHTTP(w, r2)
	})
}
