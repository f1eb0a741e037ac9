package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonical marshals v with encoding/json and returns its RFC 8785 (JCS)
// canonical form.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(raw)
}

// Canonicalize returns the RFC 8785 (JCS) canonical form of the JSON text
// raw. It rejects anything that would make the canonical form ambiguous:
// invalid JSON or UTF-8, lone surrogate escapes, duplicate object keys and
// numbers that are not finite IEEE doubles.
func Canonicalize(raw []byte) ([]byte, error) {
	// json.Valid catches trailing data and enforces encoding/json's nesting
	// limit, which also bounds the recursion in writeValue.
	if !json.Valid(raw) {
		return nil, errors.New("audit: canonicalize: invalid JSON")
	}
	// encoding/json silently turns bad UTF-8 and lone surrogates into
	// U+FFFD; two different inputs would then share one canonical form, so
	// refuse them up front.
	if !utf8.Valid(raw) {
		return nil, errors.New("audit: canonicalize: invalid UTF-8")
	}
	if err := checkSurrogates(raw); err != nil {
		return nil, err
	}
	// The text is valid JSON from here on: a scanner over its bytes
	// renders it (encoding/json's token decoder cost a fifth of a
	// compatibility write, issue 14).
	sc := scanner{b: raw}
	var out bytes.Buffer
	out.Grow(len(raw))
	if err := sc.value(&out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// checkSurrogates rejects \u escapes that do not form a valid UTF-16
// surrogate pair. raw is already known to be valid JSON, so every
// backslash is inside a string and starts an escape.
func checkSurrogates(raw []byte) error {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++ // raw[i] is the escape letter; valid JSON guarantees it exists
		if raw[i] != 'u' {
			continue
		}
		r := hex4(raw[i+1 : i+5])
		i += 4
		switch {
		case utf16.IsSurrogate(r) && r < 0xDC00:
			if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo := hex4(raw[i+3 : i+7]); lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return fmt.Errorf("audit: canonicalize: unpaired surrogate \\u%04x", r)
		case utf16.IsSurrogate(r):
			return fmt.Errorf("audit: canonicalize: unpaired surrogate \\u%04x", r)
		}
	}
	return nil
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// scanner renders valid JSON text in canonical form.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value(out *bytes.Buffer) error {
	s.ws()
	switch c := s.b[s.i]; c {
	case '{':
		return s.object(out)
	case '[':
		return s.array(out)
	case '"':
		str, err := s.str()
		if err != nil {
			return err
		}
		WriteString(out, str)
	case 't':
		out.WriteString("true")
		s.i += 4
	case 'f':
		out.WriteString("false")
		s.i += 5
	case 'n':
		out.WriteString("null")
		s.i += 4
	default:
		j := s.i
		for j < len(s.b) && strings.IndexByte("+-0123456789.eE", s.b[j]) >= 0 {
			j++
		}
		n, err := formatNumber(string(s.b[s.i:j]))
		if err != nil {
			return err
		}
		out.WriteString(n)
		s.i = j
	}
	return nil
}

// str reads the string at s.i (its opening quote) and returns its value.
func (s *scanner) str() (string, error) {
	start := s.i + 1
	j, esc := start, false
	for s.b[j] != '"' {
		if s.b[j] == '\\' {
			esc = true
			j++ // the escaped byte; \uXXXX's digits need no care
		}
		j++
	}
	s.i = j + 1
	if !esc {
		return string(s.b[start:j]), nil
	}
	var v string
	if err := json.Unmarshal(s.b[start-1:j+1], &v); err != nil {
		return "", fmt.Errorf("audit: canonicalize: %w", err)
	}
	return v, nil
}

type member struct {
	key      string
	units    []uint16 // key as UTF-16, the order RFC 8785 §3.2.3 sorts by (set for non-ASCII keys only)
	from, to int      // the value's span in the object's rendered values
}

func (s *scanner) object(out *bytes.Buffer) error {
	s.i++ // {
	var members []member
	var seen map[string]bool // for large objects; small ones are searched
	// Values are rendered into one buffer, each member keeping its span,
	// because their position is only known once every key has been read
	// and sorted.
	var vals bytes.Buffer
	ascii := true
	for {
		s.ws()
		if s.b[s.i] == '}' {
			s.i++
			break
		}
		if s.b[s.i] == ',' {
			s.i++
			s.ws()
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		dup := seen[key]
		if seen == nil {
			for _, m := range members {
				dup = dup || m.key == key
			}
			if len(members) >= 16 {
				seen = map[string]bool{}
				for _, m := range members {
					seen[m.key] = true
				}
			}
		}
		if dup {
			return fmt.Errorf("audit: canonicalize: duplicate key %q", key)
		}
		if seen != nil {
			seen[key] = true
		}
		s.ws()
		s.i++ // :
		from := vals.Len()
		if err := s.value(&vals); err != nil {
			return err
		}
		ascii = ascii && isASCII(key)
		members = append(members, member{key: key, from: from, to: vals.Len()})
	}
	if ascii {
		// For ASCII keys byte order is UTF-16 code unit order.
		slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	} else {
		for i := range members {
			members[i].units = utf16.Encode([]rune(members[i].key))
		}
		slices.SortFunc(members, func(a, b member) int { return slices.Compare(a.units, b.units) })
	}
	v := vals.Bytes()
	out.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			out.WriteByte(',')
		}
		WriteString(out, m.key)
		out.WriteByte(':')
		out.Write(v[m.from:m.to])
	}
	out.WriteByte('}')
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func (s *scanner) array(out *bytes.Buffer) error {
	s.i++ // [
	out.WriteByte('[')
	for n := 0; ; n++ {
		s.ws()
		if s.b[s.i] == ']' {
			s.i++
			break
		}
		if s.b[s.i] == ',' {
			s.i++
		}
		if n > 0 {
			out.WriteByte(',')
		}
		if err := s.value(out); err != nil {
			return err
		}
	}
	out.WriteByte(']')
	return nil
}

// WriteString writes s as a JSON string escaped per RFC 8785 §3.2.2.2:
// only '"', '\\' and control characters, with the short forms where JSON
// has them. encoding/json cannot be used because it also escapes <, >, &
// and U+2028/U+2029, which JCS keeps literal. Runs of plain bytes are
// copied at once.
func WriteString(out *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	out.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out.WriteString(s[start:i])
		switch c {
		case '"':
			out.WriteString(`\"`)
		case '\\':
			out.WriteString(`\\`)
		case '\b':
			out.WriteString(`\b`)
		case '\f':
			out.WriteString(`\f`)
		case '\n':
			out.WriteString(`\n`)
		case '\r':
			out.WriteString(`\r`)
		case '\t':
			out.WriteString(`\t`)
		default:
			out.WriteString(`\u00`)
			out.WriteByte(hexDigits[c>>4])
			out.WriteByte(hexDigits[c&0xF])
		}
		start = i + 1
	}
	out.WriteString(s[start:])
	out.WriteByte('"')
}

// formatNumber parses the JSON number text s as an IEEE 754 double and
// formats it the way ECMAScript's Number.prototype.toString does, as RFC
// 8785 §3.2.2.3 requires. Values that overflow to ±Inf are rejected.
func formatNumber(s string) (string, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return "", fmt.Errorf("audit: canonicalize: bad number %q: %w", s, err)
	}
	// ParseFloat reports ErrRange only for overflow (underflow silently
	// rounds to zero, as JCS wants), so a range error is always an Inf.
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("audit: canonicalize: number %q is not a finite double", s)
	}
	return formatFloat(f), nil
}

func formatFloat(f float64) string {
	if f == 0 {
		return "0" // also covers -0, which ECMAScript prints as "0"
	}
	if f < 0 {
		return "-" + formatFloat(-f)
	}
	// ECMAScript picks the fewest digits that round-trip, preferring the
	// candidate closest to the exact value; strconv's shortest formatting
	// makes the same choice, so only the layout needs ECMAScript's rules.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d[.ddd]e±XX
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	k := len(digits)
	n := exp + 1 // position of the decimal point relative to the digits
	switch {
	case k <= n && n <= 21:
		return digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return "0." + strings.Repeat("0", -n) + digits
	}
	var b strings.Builder
	b.WriteString(digits[:1])
	if k > 1 {
		b.WriteByte('.')
		b.WriteString(digits[1:])
	}
	b.WriteByte('e')
	if n-1 >= 0 {
		b.WriteByte('+')
	}
	b.WriteString(strconv.Itoa(n - 1))
	return b.String()
}
