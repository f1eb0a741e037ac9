package gate

import (
	"regexp"
	"slices"
	"strings"
)

// Finding is one PII screen hit: its kind and where it is, as byte offsets
// [Start, End) into the screened text. It deliberately does not carry the
// matched text, so findings can be logged and audited.
type Finding struct {
	Kind       string
	Start, End int
}

// Screen runs the best-effort PII screen (SPEC §4 step 4) over text for
// the given kinds (see PIIKinds; unknown kinds are ignored) and returns
// the findings ordered by Start, then End. Overlapping findings of the
// same kind are merged into one.
//
// The screen favours precision on ordinary prose: numbers must have the
// shape of a phone number, SSN or payment card (cards must also pass the
// Luhn check and start like a known issuer), and key-like strings must
// look random. It is a pattern screen, not a guarantee. Its cost is
// linear in len(text): each kind is a scan anchored on cheap cues ('@',
// digits, '-', ':', '=', fixed prefixes) and skipped outright when the
// text lacks them.
func Screen(text string, kinds []string) []Finding {
	if text == "" || len(kinds) == 0 {
		return nil
	}
	st := scanStats(text)
	var out []Finding
	for _, k := range PIIKinds {
		if !slices.Contains(kinds, k) {
			continue
		}
		var fs []Finding
		switch k {
		case PIIEmail:
			if st.at {
				fs = screenEmail(text)
			}
		case PIIPhone:
			if st.digits >= 8 {
				fs = screenPhone(text)
			}
		case PIISSN:
			if st.digits >= 9 && st.dash {
				fs = screenSSN(text)
			}
		case PIICard:
			if st.digits >= 13 {
				fs = screenCard(text)
			}
		case PIISecret:
			fs = screenSecret(text)
		}
		out = append(out, mergeFindings(fs)...)
	}
	slices.SortFunc(out, func(a, b Finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		if a.End != b.End {
			return a.End - b.End
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out
}

type textStats struct {
	digits int
	at     bool
	dash   bool
}

func scanStats(s string) textStats {
	var st textStats
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			st.digits++
		case c == '@':
			st.at = true
		case c == '-':
			st.dash = true
		}
	}
	return st
}

// mergeFindings sorts findings of one kind and merges overlapping ones.
func mergeFindings(fs []Finding) []Finding {
	if len(fs) < 2 {
		return fs
	}
	slices.SortFunc(fs, func(a, b Finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return a.End - b.End
	})
	out := fs[:1]
	for _, f := range fs[1:] {
		last := &out[len(out)-1]
		if f.Start < last.End {
			last.End = max(last.End, f.End)
			continue
		}
		out = append(out, f)
	}
	return out
}

func isDigitByte(c byte) bool { return c >= '0' && c <= '9' }

func isAlnumByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// wordByte reports whether c continues an identifier: an ASCII letter or
// digit, or '_'.
func wordByte(c byte) bool { return isAlnumByte(c) || c == '_' }

// numberEndsAt reports whether a numeric match ending at end is not
// continued by more of a number or identifier.
func numberEndsAt(s string, end int) bool {
	if end >= len(s) {
		return true
	}
	c := s[end]
	if wordByte(c) {
		return false
	}
	if (c == '-' || c == '.' || c == '/' || c == ':') && end+1 < len(s) && isDigitByte(s[end+1]) {
		return false
	}
	return true
}

// ---- email ----

func isEmailLocalByte(c byte) bool {
	return isAlnumByte(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func isDomainByte(c byte) bool { return isAlnumByte(c) || c == '.' || c == '-' }

// screenEmail finds local@domain.tld around every '@': a local part of
// letters, digits and ._%+-, and a domain of at least two labels, each
// starting and ending with a letter or digit, the last of 2 to 24 letters.
func screenEmail(s string) []Finding {
	var out []Finding
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '@')
		if i < 0 {
			return out
		}
		at := off + i
		off = at + 1
		start := at
		for start > 0 && isEmailLocalByte(s[start-1]) {
			start--
		}
		for start < at && s[start] == '.' {
			start++
		}
		end := at + 1
		for end < len(s) && isDomainByte(s[end]) {
			end++
		}
		for end > at+1 && s[end-1] == '.' {
			end-- // a full stop ending the sentence
		}
		if start == at || (end < len(s) && s[end] == '_') || !validDomain(s[at+1:end]) {
			continue
		}
		out = append(out, Finding{Kind: PIIEmail, Start: start, End: end})
		off = end
	}
}

func validDomain(d string) bool {
	labels := 0
	for d != "" {
		label, rest, more := strings.Cut(d, ".")
		if label == "" || !isAlnumByte(label[0]) || !isAlnumByte(label[len(label)-1]) {
			return false
		}
		labels++
		if !more {
			if labels < 2 || len(label) < 2 || len(label) > 24 {
				return false
			}
			for i := 0; i < len(label); i++ {
				if c := label[i] | 0x20; c < 'a' || c > 'z' {
					return false
				}
			}
			return true
		}
		d = rest
	}
	return false
}

// ---- phone ----

// phoneRe matches a phone-shaped number at the start of its input; it is
// applied to a short window at each place a number may start.
var phoneRe = regexp.MustCompile(`^(?:` +
	// International: +CC then up to seven digit groups, separators optional.
	`\+[1-9][0-9]{0,2}(?:[ .-]?(?:\([0-9]{1,4}\)|[0-9]{1,5})){1,7}` +
	// North American, optionally with a leading 1: (555) 123-4567.
	`|(?:1[ .-]?)?\([2-9][0-9]{2}\)[ .-]?[0-9]{3}[ .-][0-9]{4}` +
	// 555-123-4567, 555.123.4567, 555 123 4567 (one separator kind).
	`|(?:1-)?[0-9]{3}-[0-9]{3}-[0-9]{4}` +
	`|(?:1\.)?[0-9]{3}\.[0-9]{3}\.[0-9]{4}` +
	`|(?:1 )?[0-9]{3} [0-9]{3} [0-9]{4}` +
	// European national forms with a trunk 0: 020 7946 0958, 030 12345678,
	// 0151/12345678, 01 23 45 67 89.
	`|0[1-9][0-9]{1,3}[ -][0-9]{3,4}[ -][0-9]{3,4}` +
	`|0[1-9][0-9]{1,3}[ /-][0-9]{5,8}` +
	`|0[1-9](?:[ .][0-9]{2}){4}` +
	`)`)

// phoneWindow bounds the text phoneRe sees: longer matches have too many
// digits to be a phone number anyway.
const phoneWindow = 40

// numberMayStartAt reports whether a number starting at i stands on its
// own: it does not continue a word, a number or a signed value.
func numberMayStartAt(s string, i int) bool {
	if i == 0 {
		return true
	}
	c := s[i-1]
	return !wordByte(c) && c != '+' && c != '-' && c != '.' && c != '/'
}

func screenPhone(s string) []Finding {
	var out []Finding
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isDigitByte(c) || c == '+' || c == '(') || !numberMayStartAt(s, i) {
			continue
		}
		w := s[i:min(len(s), i+phoneWindow)]
		if countDigits(w) < 8 {
			continue // cheaper than the regex, and no phone has fewer
		}
		m := phoneRe.FindStringIndex(w)
		if m == nil {
			continue
		}
		end := i + m[1]
		if !numberEndsAt(s, end) {
			continue
		}
		n := countDigits(s[i:end])
		if c == '+' && (n < 8 || n > 15) || c != '+' && (n < 9 || n > 13) {
			continue
		}
		out = append(out, Finding{Kind: PIIPhone, Start: i, End: end})
		i = end - 1
	}
	return out
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigitByte(s[i]) {
			n++
		}
	}
	return n
}

// ---- ssn ----

// screenSSN finds NNN-NN-NNNN standing on its own, excluding numbers
// never issued: area 000, 666 or 9xx, group 00, serial 0000.
func screenSSN(s string) []Finding {
	var out []Finding
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '-')
		if i < 0 {
			return out
		}
		dash := off + i
		off = dash + 1
		start, end := dash-3, dash+8
		if start < 0 || end > len(s) || !ssnShape(s[start:end]) ||
			!numberMayStartAt(s, start) || !numberEndsAt(s, end) {
			continue
		}
		area, group, serial := s[start:start+3], s[start+4:start+6], s[start+7:end]
		if area == "000" || area == "666" || area[0] == '9' || group == "00" || serial == "0000" {
			continue
		}
		out = append(out, Finding{Kind: PIISSN, Start: start, End: end})
		off = end
	}
}

func ssnShape(s string) bool {
	for i := 0; i < len(s); i++ {
		if i == 3 || i == 6 {
			if s[i] != '-' {
				return false
			}
		} else if !isDigitByte(s[i]) {
			return false
		}
	}
	return true
}

// ---- card ----

// screenCard scans runs of digit groups joined by single spaces or
// dashes and reports every window of whole groups that reads as a
// payment card number: 13 to 19 digits, one separator kind, card-like
// grouping, a known issuer prefix and a valid Luhn check digit.
func screenCard(s string) []Finding {
	var out []Finding
	type group struct{ start, end int }
	var groups []group
	for i := 0; i < len(s); {
		if !isDigitByte(s[i]) {
			i++
			continue
		}
		// A run glued to a word, a decimal point or a '+' (a phone number's
		// country code) is not a card.
		gluedLeft := i > 0 && (wordByte(s[i-1]) || s[i-1] == '.' || s[i-1] == '/' || s[i-1] == '+' ||
			(s[i-1] == '-' && i > 1 && isAlnumByte(s[i-2])))
		groups = groups[:0]
		j := i
		for {
			k := j
			for k < len(s) && isDigitByte(s[k]) {
				k++
			}
			groups = append(groups, group{j, k})
			if k+1 < len(s) && (s[k] == ' ' || s[k] == '-') && isDigitByte(s[k+1]) {
				j = k + 1
				continue
			}
			j = k
			break
		}
		gluedRight := !numberEndsAt(s, j)
		i = j

		for a := range groups {
			if a == 0 && gluedLeft {
				continue
			}
			digits := 0
			for b := a; b < len(groups); b++ {
				digits += groups[b].end - groups[b].start
				if digits > 19 {
					break
				}
				if digits < 13 || (b == len(groups)-1 && gluedRight) {
					continue
				}
				if b > a && !cardGrouping(s, groups[a].start, groups[b].end) {
					continue
				}
				num := s[groups[a].start:groups[b].end]
				if cardIssuer(num) && luhnValid(num) {
					out = append(out, Finding{Kind: PIICard, Start: groups[a].start, End: groups[b].end})
				}
			}
		}
	}
	return out
}

// cardGrouping reports whether s[start:end], digit groups joined by single
// separators, is grouped like a card: one separator kind, 2 to 5 groups,
// the first of 4 to 6 digits and the others of 3 to 6 (4-4-4-4, 4-6-5,
// 4-6-4, 4-4-4-4-3, ...).
func cardGrouping(s string, start, end int) bool {
	var sep byte
	groups, size := 0, 0
	for i := start; i <= end; i++ {
		if i < end && isDigitByte(s[i]) {
			size++
			continue
		}
		if i < end {
			if sep == 0 {
				sep = s[i]
			} else if s[i] != sep {
				return false
			}
		}
		groups++
		if groups == 1 && (size < 4 || size > 6) || groups > 1 && (size < 3 || size > 6) {
			return false
		}
		size = 0
	}
	return groups >= 2 && groups <= 5
}

// cardIssuer reports whether the digits of num begin like a card of a
// major network: Visa 4, Mastercard 51-55 and 2221-2720, Maestro 50 and
// 56-69, Amex 34/37, Diners 30/36/38/39, JCB 35, Discover and UnionPay 6,
// Mir 2200-2204. Other leading digits are mostly timestamps and ids.
func cardIssuer(num string) bool {
	var d []byte
	for i := 0; i < len(num) && len(d) < 4; i++ {
		if isDigitByte(num[i]) {
			d = append(d, num[i])
		}
	}
	if len(d) < 4 {
		return false
	}
	switch d[0] {
	case '3':
		return d[1] == '0' || d[1] >= '4' && d[1] <= '9'
	case '4', '5', '6':
		return true
	case '2':
		p := (int(d[0]-'0')*10+int(d[1]-'0'))*100 + int(d[2]-'0')*10 + int(d[3]-'0')
		return p >= 2200 && p <= 2204 || p >= 2221 && p <= 2720
	}
	return false
}

// luhnValid reports whether the digits of s (other bytes are skipped)
// pass the Luhn check. Fewer than two digits never pass.
func luhnValid(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if !isDigitByte(c) {
			continue
		}
		d := int(c - '0')
		if n%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n >= 2 && sum%10 == 0
}
