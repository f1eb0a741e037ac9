package gate

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/memgate/memgate/internal/fault"
)

// JSON text that memgate stores as it came (metadata, node and edge
// properties) must survive every later step — canonical export, import,
// migration, the other backend — byte for byte. encoding/json silently
// turns invalid UTF-8 and lone surrogate escapes into U+FFFD and cannot
// represent a number beyond the range of a double, so such text is
// refused at the gate instead of breaking an export later.

// Problems CheckJSONText reports.
const (
	ProblemUTF8   = "must be valid UTF-8 text (no invalid bytes or unpaired surrogate escapes)"
	ProblemNumber = "must be a finite number within the range of a 64-bit float"
)

// CheckJSON validates raw, stored under field: its strings must be valid
// UTF-8 and its numbers finite doubles. The error names the offending
// member's path under field (e.g. metadata.n or metadata.list[2]) when
// the path is made of plain names, and never the value.
func CheckJSON(field string, raw []byte) error {
	path, problem := CheckJSONText(raw)
	if problem == "" {
		return nil
	}
	name := field
	if path != "" {
		name = field + "." + path
		if strings.HasPrefix(path, "[") {
			name = field + path
		}
	}
	if !plainPath(name) {
		name = field
	}
	return fault.Field(name, problem).With("reason", ReasonSchema)
}

// NeedsTextCheck is a fast test of whether raw may hold text
// CheckJSONText refuses for its strings: invalid UTF-8 or a surrogate
// escape. Valid text without either needs no walk.
func NeedsTextCheck(raw []byte) bool {
	return !utf8.Valid(raw) || hasSurrogateEscape(raw)
}

// CheckJSONText walks the JSON text raw and returns the path (a.b[2].c,
// "" for the top level) of the first string or key holding invalid UTF-8
// or an unpaired surrogate escape, or of the first number that is not a
// finite double, with the problem; problem is "" when there is none or
// raw is not JSON (decoding reports that).
func CheckJSONText(raw []byte) (path, problem string) {
	textCheck := NeedsTextCheck(raw)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		arr     bool
		idx     int
		key     string
		wantKey bool
	}
	var st []frame
	// where is the path of the value the first n frames lead to.
	where := func(n int) string {
		var b strings.Builder
		for _, f := range st[:n] {
			if f.arr {
				b.WriteString("[" + strconv.Itoa(f.idx) + "]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
		return b.String()
	}
	valueDone := func() {
		if n := len(st); n > 0 && !st[n-1].arr {
			st[n-1].wantKey = true
		}
	}
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", ""
		}
		end := dec.InputOffset()
		top := len(st) - 1
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			st = st[:top]
			valueDone()
			if len(st) == 0 {
				return "", ""
			}
			continue
		}
		if top >= 0 && !st[top].arr && st[top].wantKey {
			key, _ := tok.(string)
			if textCheck && badText(raw[start:end]) {
				return where(top), ProblemUTF8 // a key: name its object
			}
			st[top].key, st[top].wantKey = key, false
			continue
		}
		if top >= 0 && st[top].arr {
			st[top].idx++
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' {
				st = append(st, frame{wantKey: true})
			} else {
				st = append(st, frame{arr: true, idx: -1})
			}
			continue
		case string:
			if textCheck && badText(raw[start:end]) {
				return where(len(st)), ProblemUTF8
			}
		case json.Number:
			if _, err := strconv.ParseFloat(string(t), 64); err != nil {
				return where(len(st)), ProblemNumber
			}
		}
		valueDone()
		if len(st) == 0 {
			return "", ""
		}
	}
}

// badText reports whether the raw bytes of one JSON string token hold
// invalid UTF-8 or a \u escape that is not part of a surrogate pair.
func badText(tok []byte) bool {
	if !utf8.Valid(tok) {
		return true
	}
	for i := 0; i+5 < len(tok); i++ {
		if tok[i] != '\\' {
			continue
		}
		if tok[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		r := hex4(tok[i+2 : i+6])
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+11 < len(tok) && tok[i+6] == '\\' && tok[i+7] == 'u' {
				if lo := hex4(tok[i+8 : i+12]); lo >= 0xDC00 && lo <= 0xDFFF && utf16.DecodeRune(r, lo) != utf8.RuneError {
					i += 11
					continue
				}
			}
			return true
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		}
		i += 5
	}
	return false
}

// hasSurrogateEscape reports whether raw holds a \u escape in the
// surrogate range (\uD800-\uDFFF, any case).
func hasSurrogateEscape(raw []byte) bool {
	for i := bytes.Index(raw, []byte(`\u`)); i >= 0 && i+3 < len(raw); {
		if c, d := raw[i+2], raw[i+3]; (c == 'd' || c == 'D') && strings.IndexByte("89abcdefABCDEF", d) >= 0 {
			return true
		}
		j := bytes.Index(raw[i+2:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}

// hex4 is the code unit of a \u escape's four hex digits, or -1.
func hex4(b []byte) rune {
	v, err := strconv.ParseUint(string(b), 16, 16)
	if err != nil {
		return -1
	}
	return rune(v)
}

// plainPath reports whether a path is made of plain lowercase names and
// indices, safe to show: anything else may be user text.
func plainPath(p string) bool {
	if p == "" || len(p) > 128 {
		return false
	}
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '[' || c == ']' || c == '-') {
			return false
		}
	}
	return true
}
