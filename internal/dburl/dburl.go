// Package dburl reads PostgreSQL connection strings (postgres:// URLs and
// libpq keyword/value strings) for what memgate must know of them without
// connecting: which backend they select, and their passwords, to redact
// from anything shown. The backend, the configuration and the CLI share
// this one copy.
package dburl

import (
	"net/url"
	"strings"
)

// IsURL reports whether s is a PostgreSQL database URL (postgres:// or
// postgresql://), the form that selects this backend.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// IsDSN reports whether s selects this backend: a URL (IsURL) or a
// libpq keyword/value connection string ("host=db dbname=memgate ...").
func IsDSN(s string) bool { return IsURL(s) || IsKeywordDSN(s) }

// libpqKeywords are the connection parameters a keyword/value string may
// start with; a path never looks like "host=...".
var libpqKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true, "passfile": true,
	"sslmode": true, "sslrootcert": true, "sslcert": true, "sslkey": true, "connect_timeout": true,
	"application_name": true, "target_session_attrs": true, "options": true, "service": true,
}

// IsKeywordDSN reports whether s is a libpq keyword/value connection
// string: "key=value" pairs separated by spaces, the first key a libpq
// connection parameter.
func IsKeywordDSN(s string) bool {
	key, _, ok := strings.Cut(strings.TrimSpace(s), "=")
	return ok && libpqKeywords[strings.TrimSpace(key)]
}

// dsnPairs splits a keyword/value string into its pairs, with libpq's
// quoting: a value in single quotes may hold spaces, and a backslash
// escapes the next character. start and end give each value's span in s.
type dsnPair struct {
	key        string
	value      string
	start, end int
}

func dsnPairs(s string) []dsnPair {
	var out []dsnPair
	i := 0
	for i < len(s) {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		k := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		key := s[k:i]
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			break
		}
		i++
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		start := i
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
			if i < len(s) {
				i++ // the closing quote
			}
		} else {
			for i < len(s) && !isSpace(s[i]) {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				v.WriteByte(s[i])
				i++
			}
		}
		out = append(out, dsnPair{key: key, value: v.String(), start: start, end: i})
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// Redact returns the URL with its password replaced by "xxxxx", for logs
// and error messages; in a keyword/value string the password's value is
// replaced. A string that does not parse as a URL is reduced to its
// scheme, since it may hold a password in a form Redact cannot see.
func Redact(rawURL string) string {
	if !IsURL(rawURL) && IsKeywordDSN(rawURL) {
		out := rawURL
		pairs := dsnPairs(rawURL)
		for i := len(pairs) - 1; i >= 0; i-- { // from the end, so spans stay valid
			if pairs[i].key == "password" {
				out = out[:pairs[i].start] + "xxxxx" + out[pairs[i].end:]
			}
		}
		return out
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		scheme, _, ok := strings.Cut(rawURL, "://")
		if !ok {
			return "(unparsable database URL)"
		}
		return scheme + "://(unparsable URL)"
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Secrets returns the passwords a URL carries, in the forms they may take
// in a message (as written and decoded).
func Secrets(rawURL string) []string {
	var out []string
	add := func(s string) {
		if s != "" && s != "xxxxx" {
			out = append(out, s)
			if e := url.QueryEscape(s); e != s {
				out = append(out, e)
			}
			if e := url.PathEscape(s); e != s {
				out = append(out, e)
			}
		}
	}
	if !IsURL(rawURL) && IsKeywordDSN(rawURL) {
		for _, p := range dsnPairs(rawURL) {
			if p.key == "password" {
				add(p.value)
				add(rawURL[p.start:p.end]) // as written, quotes and escapes included
			}
		}
		return out
	}
	if u, err := url.Parse(rawURL); err == nil {
		if u.User != nil {
			p, _ := u.User.Password()
			add(p)
		}
		add(u.Query().Get("password"))
	}
	return out
}
