package gate

// The secret detector of the PII screen (pii.go): credentials by their
// shape (known token prefixes, JWTs, PEM blocks, bearer headers) and by
// assignment to a secret-looking name.

import (
	"strings"
	"unicode/utf8"
)

// A tokenShape is a credential with a distinctive prefix: the prefix at a
// word start, then a body of at least min bytes of the charset.
type tokenShape struct {
	prefix  string
	charset func(byte) bool
	min     int
	// exact: the body is exactly min bytes and ends a word (AWS ids).
	exact bool
	// random: the body must look generated, not like an identifier.
	random bool
}

func upperDigitByte(c byte) bool { return c >= 'A' && c <= 'Z' || isDigitByte(c) }
func base64URLByte(c byte) bool  { return isAlnumByte(c) || c == '-' || c == '_' }
func alnumDashByte(c byte) bool  { return isAlnumByte(c) || c == '-' }

var tokenShapes = []tokenShape{
	// AWS access key ids.
	{prefix: "AKIA", charset: upperDigitByte, min: 16, exact: true},
	{prefix: "ASIA", charset: upperDigitByte, min: 16, exact: true},
	// OpenAI (sk-, sk-proj-) and Anthropic (sk-ant-) keys.
	{prefix: "sk-", charset: base64URLByte, min: 20, random: true},
	// GitHub tokens.
	{prefix: "ghp_", charset: isAlnumByte, min: 20, random: true},
	{prefix: "gho_", charset: isAlnumByte, min: 20, random: true},
	{prefix: "ghu_", charset: isAlnumByte, min: 20, random: true},
	{prefix: "ghs_", charset: isAlnumByte, min: 20, random: true},
	{prefix: "ghr_", charset: isAlnumByte, min: 20, random: true},
	{prefix: "github_pat_", charset: wordByte, min: 20, random: true},
	// Slack tokens.
	{prefix: "xoxb-", charset: alnumDashByte, min: 10, random: true},
	{prefix: "xoxa-", charset: alnumDashByte, min: 10, random: true},
	{prefix: "xoxp-", charset: alnumDashByte, min: 10, random: true},
	{prefix: "xoxr-", charset: alnumDashByte, min: 10, random: true},
	{prefix: "xoxs-", charset: alnumDashByte, min: 10, random: true},
	// Stripe secret and restricted keys.
	{prefix: "sk_live_", charset: isAlnumByte, min: 16},
	{prefix: "rk_live_", charset: isAlnumByte, min: 16},
	{prefix: "sk_test_", charset: isAlnumByte, min: 16},
	{prefix: "rk_test_", charset: isAlnumByte, min: 16},
	// Google API keys.
	{prefix: "AIza", charset: base64URLByte, min: 35},
	// memgate's own tokens (mg_<id>_<secret>) and gateway user keys.
	{prefix: "mg_", charset: base64URLByte, min: 20, random: true},
	{prefix: "uk_", charset: base64URLByte, min: 20, random: true},
}

func screenSecret(s string) []Finding {
	var out []Finding
	for i := range tokenShapes {
		out = screenTokenShape(s, &tokenShapes[i], out)
	}
	out = screenJWT(s, out)
	out = screenPEM(s, out)
	out = screenBearer(s, out)
	return screenAssignments(s, out)
}

func screenTokenShape(s string, t *tokenShape, out []Finding) []Finding {
	for off := 0; ; {
		i := strings.Index(s[off:], t.prefix)
		if i < 0 {
			return out
		}
		start := off + i
		body := start + len(t.prefix)
		off = body
		if start > 0 && wordByte(s[start-1]) {
			continue
		}
		end := body
		for end < len(s) && t.charset(s[end]) {
			end++
		}
		switch {
		case end-body < t.min:
			continue
		case t.exact && (end-body != t.min || end < len(s) && wordByte(s[end])):
			continue
		case t.random && !looksRandom(s[body:end]):
			continue
		}
		out = append(out, Finding{Kind: PIISecret, Start: start, End: end})
		off = end
	}
}

// screenJWT finds JSON Web Tokens: three base64url segments joined by
// dots, the first starting "eyJ" (base64 of `{"`); the signature may be
// empty (alg none).
func screenJWT(s string, out []Finding) []Finding {
	for off := 0; ; {
		i := strings.Index(s[off:], "eyJ")
		if i < 0 {
			return out
		}
		start := off + i
		off = start + 3
		if start > 0 && wordByte(s[start-1]) {
			continue
		}
		end, ok := start, true
		for seg := range 3 {
			from := end
			for end < len(s) && base64URLByte(s[end]) {
				end++
			}
			if seg < 2 && (end-from < 8 || end >= len(s) || s[end] != '.') {
				ok = false
				break
			}
			if seg < 2 {
				end++ // the dot
			}
		}
		if !ok {
			continue
		}
		out = append(out, Finding{Kind: PIISecret, Start: start, End: end})
		off = end
	}
}

// screenPEM finds PEM private key headers ("-----BEGIN RSA PRIVATE
// KEY-----"). The finding runs to the matching END line when there is
// one, so it covers the whole key.
func screenPEM(s string, out []Finding) []Finding {
	const begin, endMarker = "-----BEGIN ", "-----END "
	// The next END marker after a header serves every header before it,
	// so it is cached: endAt is its offset (-1: none left, -2: unknown)
	// and blockEnd where the finding ends when the marker closes a
	// private key (0: it does not).
	endAt, blockEnd := -2, 0
	for off := 0; ; {
		i := strings.Index(s[off:], begin)
		if i < 0 {
			return out
		}
		start := off + i
		off = start + len(begin)
		j := off
		for j < len(s) && (upperDigitByte(s[j]) || s[j] == ' ') {
			j++
		}
		label := s[off:j]
		if !strings.HasPrefix(s[j:], "-----") ||
			!(strings.HasSuffix(label, "PRIVATE KEY") || strings.HasSuffix(label, "PRIVATE KEY BLOCK")) {
			continue
		}
		hdrEnd := j + len("-----")
		off = hdrEnd
		if endAt != -1 && endAt < hdrEnd {
			endAt, blockEnd = -1, 0
			if k := strings.Index(s[hdrEnd:], endMarker); k >= 0 {
				endAt = hdrEnd + k
				rest := s[endAt+len(endMarker):]
				if l := strings.Index(rest, "-----"); l >= 0 && strings.Contains(rest[:l], "PRIVATE KEY") {
					blockEnd = endAt + len(endMarker) + l + len("-----")
				}
			}
		}
		end := hdrEnd
		if endAt >= 0 && blockEnd > 0 {
			end = blockEnd
		}
		out = append(out, Finding{Kind: PIISecret, Start: start, End: end})
	}
}

// screenBearer finds "Bearer <credential>"; the finding is the credential.
func screenBearer(s string, out []Finding) []Finding {
	const word = "bearer"
	for off := 0; ; {
		i := indexFoldASCII(s[off:], word)
		if i < 0 {
			return out
		}
		start := off + i
		off = start + len(word)
		if start > 0 && wordByte(s[start-1]) {
			continue
		}
		v := off
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		if v == off {
			continue
		}
		end := v
		for end < len(s) && (isAlnumByte(s[end]) || strings.IndexByte("._~+/-", s[end]) >= 0) {
			end++
		}
		if end-v < 16 {
			continue
		}
		for end < len(s) && s[end] == '=' {
			end++
		}
		if !looksRandom(s[v:end]) {
			continue
		}
		out = append(out, Finding{Kind: PIISecret, Start: v, End: end})
		off = end
	}
}

// secretKeyWords end the names of keys whose values are secrets. Names
// ending in "key" count only after api, access, secret, private, signing
// or encryption (optionally joined by '_' or '-'): a bare "key" is too
// common.
var (
	secretKeyWords = []string{"password", "passwd", "passphrase", "secret", "token", "credentials", "credential", "apikey"}
	keyQualifiers  = []string{"api", "access", "secret", "private", "signing", "encryption"}
)

// screenAssignments finds values assigned to secret-named keys:
// api_key=..., "password": "...", DB_PASSWORD=..., token: ... The
// finding is the value, which must be 8 or more characters and not a
// placeholder.
func screenAssignments(s string, out []Finding) []Finding {
	for i := 0; i < len(s); i++ {
		if s[i] != ':' && s[i] != '=' {
			continue
		}
		// Key: NAME["']?[ \t]*  before the operator.
		k := i
		for k > 0 && (s[k-1] == ' ' || s[k-1] == '\t') {
			k--
		}
		if k > 0 && (s[k-1] == '"' || s[k-1] == '\'') {
			k--
		}
		if !endsWithSecretKey(s[:k]) {
			continue
		}
		// Value: [ \t]*["']?VALUE after it.
		v := i + 1
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		if v < len(s) && (s[v] == '"' || s[v] == '\'') {
			v++
		}
		end := v
		for end < len(s) && !isSpaceByte(s[end]) && strings.IndexByte("\"'`,;<>", s[end]) < 0 {
			end++
		}
		if utf8.RuneCountInString(s[v:end]) < 8 || !notPlaceholder(s[v:end]) {
			continue
		}
		out = append(out, Finding{Kind: PIISecret, Start: v, End: end})
		i = end - 1
	}
	return out
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// endsWithSecretKey reports whether name ends, ASCII case-insensitively,
// with a secret key word.
func endsWithSecretKey(name string) bool {
	for _, w := range secretKeyWords {
		if hasSuffixFoldASCII(name, w) {
			return true
		}
	}
	if !hasSuffixFoldASCII(name, "key") {
		return false
	}
	name = name[:len(name)-3]
	if n := len(name); n > 0 && (name[n-1] == '_' || name[n-1] == '-') {
		name = name[:n-1]
	}
	for _, q := range keyQualifiers {
		if hasSuffixFoldASCII(name, q) {
			return true
		}
	}
	return false
}

// hasSuffixFoldASCII reports whether s ends with suffix, which must be
// lowercase ASCII, ignoring the case of ASCII letters in s.
func hasSuffixFoldASCII(s, suffix string) bool {
	if len(s) < len(suffix) {
		return false
	}
	s = s[len(s)-len(suffix):]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != suffix[i] {
			return false
		}
	}
	return true
}

// indexFoldASCII returns the index of the first occurrence of sub, which
// must be lowercase ASCII, in s ignoring the case of ASCII letters, or -1.
func indexFoldASCII(s, sub string) int {
	if len(sub) == 0 {
		return 0
	}
	first, upper := sub[0], sub[0]
	if first >= 'a' && first <= 'z' {
		upper = first - 'a' + 'A'
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if c := s[i]; c != first && c != upper {
			continue
		}
		if hasSuffixFoldASCII(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// looksRandom reports whether a token body looks generated rather than
// like an identifier or a word: it mixes at least two of lowercase,
// uppercase and digits, and uppercase letters and digits make up at least
// a fifth of it.
func looksRandom(s string) bool {
	var lower, upper, digit int
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z':
			lower++
		case c >= 'A' && c <= 'Z':
			upper++
		case c >= '0' && c <= '9':
			digit++
		}
	}
	classes := 0
	for _, n := range []int{lower, upper, digit} {
		if n > 0 {
			classes++
		}
	}
	return classes >= 2 && (upper+digit)*5 >= len(s)
}

// notPlaceholder rejects assignment values that are documentation rather
// than secrets: masks, template references and a few words.
func notPlaceholder(v string) bool {
	if strings.Trim(v, v[:1]) == "" { // ******** or xxxxxxxx
		return false
	}
	lower := strings.ToLower(v)
	for _, p := range []string{"${", "$(", "{{", "%(", "process.env", "os.environ", "env("} {
		if strings.HasPrefix(lower, p) {
			return false
		}
	}
	switch strings.Trim(lower, ".()[]") {
	case "required", "optional", "redacted", "undefined", "placeholder":
		return false
	}
	return !isCallExpr(v)
}

// isCallExpr reports whether v starts like a function call in code,
// f(... or pkg.Func(..., as in `token = os.Getenv("X")`.
func isCallExpr(v string) bool {
	i := 0
	for i < len(v) && (wordByte(v[i]) || v[i] == '.') {
		i++
	}
	return i > 0 && i < len(v) && v[i] == '(' && !isDigitByte(v[0])
}
