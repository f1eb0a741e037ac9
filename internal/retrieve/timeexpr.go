package retrieve

// Time expressions: "in May 2023", "on 8 December, 2023", "two weeks
// ago", "last weekend", "the past three months", "in the spring". A
// question's expressions are resolved against the question's own date
// (Query.Now, the caller's reference time, never the processing time when
// the caller gives one), and the turns whose event time (their session
// date) falls in the span are boosted (Query.Time).

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Span is a half-open interval of time [From, To).
type Span struct{ From, To time.Time }

func (s Span) contains(t time.Time) bool { return !t.Before(s.From) && t.Before(s.To) }

var monthNames = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
	"june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

var weekdayNames = map[string]time.Weekday{"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6}

var numberWords = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3}

const (
	reMonth = `(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)`
	reNum   = `(\d{1,3}|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a couple of|couple of|a few|few|several)`
)

var (
	dayMonthYearRe = regexp.MustCompile(`\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + reMonth + `\.?,?\s+(\d{4})\b`)
	monthDayYearRe = regexp.MustCompile(`\b` + reMonth + `\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b`)
	monthYearRe    = regexp.MustCompile(`\b` + reMonth + `\.?,?\s+(\d{4})\b`)
	// A month without a year only after a preposition: "may" is a verb.
	bareMonthRe = regexp.MustCompile(`\b(?:in|during|since|early|late|mid|of|last)\s+(?:-\s*)?` + reMonth + `\b`)
	yearRe      = regexp.MustCompile(`\b(?:in|during|since|of)\s+((?:19|20)\d{2})\b`)
	agoRe       = regexp.MustCompile(`\b` + reNum + `\s+(day|week|month|year)s?\s+ago\b`)
	pastRe      = regexp.MustCompile(`\b(?:the\s+)?(?:past|last)\s+` + reNum + `\s+(day|week|month|year)s?\b`)
	lastRe      = regexp.MustCompile(`\blast\s+(week|weekend|month|year|night|sunday|monday|tuesday|wednesday|thursday|friday|saturday|spring|summer|fall|autumn|winter)\b`)
	thisRe      = regexp.MustCompile(`\bthis\s+(week|month|year|morning|afternoon|evening)\b`)
	dayWordRe   = regexp.MustCompile(`\b(yesterday|today|tonight)\b`)
	seasonRe    = regexp.MustCompile(`\b(?:in|during)\s+(?:the\s+)?(spring|summer|fall|autumn|winter)\b`)
)

// TimeSpans resolves the time expressions of text. Absolute dates need no
// reference; relative ones ("last week", "in April") are resolved against
// ref and skipped when ref is zero. Spans are whole days, in UTC.
func TimeSpans(text string, ref time.Time) []Span {
	s := strings.ToLower(text)
	// Most queries name no time: a scan of their words decides which
	// patterns can match at all, so they cost no regular expression.
	w := timeWords(s)
	if w == 0 {
		return nil
	}
	out, s := absoluteSpans(s, w)
	if ref.IsZero() {
		return out
	}
	ref = ref.UTC()
	today := utcDay(ref.Year(), ref.Month(), ref.Day())
	out = bareMonthSpans(out, s, w, ref)
	out = dayWordSpans(out, s, w, today)
	out = agoSpans(out, s, w, today)
	out = pastSpans(out, s, w, today)
	out = lastSpans(out, s, w, ref, today)
	out = thisSpans(out, s, w, ref, today)
	for _, m := range submatchIf(w&twSeason != 0, seasonRe, s) {
		from, to := season(m[1], today, false)
		out = append(out, Span{from, to})
	}
	return out
}

func utcDay(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// absoluteSpans resolves the dates that need no reference: full dates,
// month and year, bare years. It returns s with the full dates and the
// months-with-year blanked, so a shorter pattern does not match them again.
func absoluteSpans(s string, w int) ([]Span, string) {
	var out []Span
	blank := func(loc []int) { s = s[:loc[0]] + strings.Repeat(" ", loc[1]-loc[0]) + s[loc[1]:] }
	hasMonth, hasYear := w&twMonth != 0, w&twYear != 0
	for _, re := range []*regexp.Regexp{dayMonthYearRe, monthDayYearRe} {
		if !hasMonth || !hasYear {
			break
		}
		for _, loc := range re.FindAllStringSubmatchIndex(s, -1) {
			g := func(i int) string { return s[loc[2*i]:loc[2*i+1]] }
			var d, y int
			var m time.Month
			if re == dayMonthYearRe {
				d, _ = strconv.Atoi(g(1))
				m = monthNames[g(2)]
			} else {
				m = monthNames[g(1)]
				d, _ = strconv.Atoi(g(2))
			}
			y, _ = strconv.Atoi(g(3))
			if d >= 1 && d <= 31 && m != 0 {
				t := utcDay(y, m, d)
				out = append(out, Span{t, t.AddDate(0, 0, 1)})
			}
		}
		for _, loc := range re.FindAllStringIndex(s, -1) {
			blank(loc)
		}
	}
	for _, loc := range matchIf(hasMonth && hasYear, monthYearRe, s) {
		m := monthNames[s[loc[2]:loc[3]]]
		y, _ := strconv.Atoi(s[loc[4]:loc[5]])
		t := utcDay(y, m, 1)
		out = append(out, Span{t, t.AddDate(0, 1, 0)})
	}
	if hasMonth && hasYear {
		for _, loc := range monthYearRe.FindAllStringIndex(s, -1) {
			blank(loc)
		}
	}
	for _, m := range submatchIf(hasYear, yearRe, s) {
		y, _ := strconv.Atoi(m[1])
		t := utcDay(y, 1, 1)
		out = append(out, Span{t, t.AddDate(1, 0, 0)})
	}
	return out, s
}

// bareMonthSpans: "in April" is the last April up to ref's month ("last
// April" in ref's month is a year back).
func bareMonthSpans(out []Span, s string, w int, ref time.Time) []Span {
	for _, m := range submatchIf(w&twMonth != 0, bareMonthRe, s) {
		mo := monthNames[m[1]]
		y := ref.Year()
		if mo > ref.Month() || mo == ref.Month() && strings.HasPrefix(m[0], "last") {
			y--
		}
		t := utcDay(y, mo, 1)
		out = append(out, Span{t, t.AddDate(0, 1, 0)})
	}
	return out
}

// dayWordSpans: yesterday, today, tonight.
func dayWordSpans(out []Span, s string, w int, today time.Time) []Span {
	for _, m := range submatchIf(w&twDay != 0, dayWordRe, s) {
		t := today
		if m[1] == "yesterday" {
			t = today.AddDate(0, 0, -1)
		}
		out = append(out, Span{t, t.AddDate(0, 0, 1)})
	}
	return out
}

// agoSpans: "three weeks ago", a window around the point that widens with
// the unit.
func agoSpans(out []Span, s string, w int, today time.Time) []Span {
	for _, m := range submatchIf(w&twAgo != 0, agoRe, s) {
		n := count(m[1])
		switch m[2] {
		case "day":
			t := today.AddDate(0, 0, -n)
			out = append(out, Span{t.AddDate(0, 0, -1), t.AddDate(0, 0, 2)})
		case "week":
			t := today.AddDate(0, 0, -7*n)
			out = append(out, Span{t.AddDate(0, 0, -4), t.AddDate(0, 0, 4)})
		case "month":
			t := today.AddDate(0, -n, 0)
			out = append(out, Span{t.AddDate(0, 0, -15), t.AddDate(0, 0, 16)})
		case "year":
			t := today.AddDate(-n, 0, 0)
			out = append(out, Span{t.AddDate(0, -6, 0), t.AddDate(0, 6, 0)})
		}
	}
	return out
}

// pastSpans: "the past two weeks", from then up to today.
func pastSpans(out []Span, s string, w int, today time.Time) []Span {
	for _, m := range submatchIf(w&(twPast|twLast) != 0, pastRe, s) {
		n := count(m[1])
		from := today
		switch m[2] {
		case "day":
			from = today.AddDate(0, 0, -n)
		case "week":
			from = today.AddDate(0, 0, -7*n)
		case "month":
			from = today.AddDate(0, -n, 0)
		case "year":
			from = today.AddDate(-n, 0, 0)
		}
		out = append(out, Span{from, today.AddDate(0, 0, 1)})
	}
	return out
}

// lastSpans: "last week", "last weekend", "last Friday", "last summer":
// the previous calendar unit, weeks starting on Monday.
func lastSpans(out []Span, s string, w int, ref, today time.Time) []Span {
	monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
	for _, m := range submatchIf(w&twLast != 0, lastRe, s) {
		switch w := m[1]; w {
		case "night":
			t := today.AddDate(0, 0, -1)
			out = append(out, Span{t, today.AddDate(0, 0, 1)})
		case "week":
			out = append(out, Span{monday.AddDate(0, 0, -7), monday})
		case "weekend":
			sat := monday.AddDate(0, 0, -2)
			out = append(out, Span{sat, monday})
		case "month":
			first := utcDay(ref.Year(), ref.Month(), 1)
			out = append(out, Span{first.AddDate(0, -1, 0), first})
		case "year":
			out = append(out, Span{utcDay(ref.Year()-1, 1, 1), utcDay(ref.Year(), 1, 1)})
		case "spring", "summer", "fall", "autumn", "winter":
			from, to := season(w, today, true)
			out = append(out, Span{from, to})
		default:
			wd := weekdayNames[w]
			back := (int(today.Weekday()) - int(wd) + 7) % 7
			if back == 0 {
				back = 7
			}
			t := today.AddDate(0, 0, -back)
			out = append(out, Span{t, t.AddDate(0, 0, 1)})
		}
	}
	return out
}

// thisSpans: "this week/month/year" up to today; "this morning" is today.
func thisSpans(out []Span, s string, w int, ref, today time.Time) []Span {
	monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
	for _, m := range submatchIf(w&twThis != 0, thisRe, s) {
		switch m[1] {
		case "week":
			out = append(out, Span{monday, today.AddDate(0, 0, 1)})
		case "month":
			out = append(out, Span{utcDay(ref.Year(), ref.Month(), 1), today.AddDate(0, 0, 1)})
		case "year":
			out = append(out, Span{utcDay(ref.Year(), 1, 1), today.AddDate(0, 0, 1)})
		default:
			out = append(out, Span{today, today.AddDate(0, 0, 1)})
		}
	}
	return out
}

// Word classes timeWords finds.
const (
	twMonth = 1 << iota
	twYear
	twDay // yesterday, today, tonight
	twAgo
	twPast
	twLast
	twThis
	twSeason
)

// timeWords returns the classes of time words s (lower case) holds.
func timeWords(s string) int {
	w := 0
	for f := range strings.FieldsFuncSeq(s, func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
		switch {
		case len(f) == 4 && (strings.HasPrefix(f, "19") || strings.HasPrefix(f, "20")) && strings.Trim(f, "0123456789") == "":
			w |= twYear
		case monthNames[f] != 0:
			w |= twMonth
		case f == "yesterday" || f == "today" || f == "tonight":
			w |= twDay
		case f == "ago":
			w |= twAgo
		case f == "past":
			w |= twPast
		case f == "last":
			w |= twLast
		case f == "this":
			w |= twThis
		case f == "spring" || f == "summer" || f == "fall" || f == "autumn" || f == "winter":
			w |= twSeason
		}
	}
	return w
}

func matchIf(ok bool, re *regexp.Regexp, s string) [][]int {
	if !ok {
		return nil
	}
	return re.FindAllStringSubmatchIndex(s, -1)
}

func submatchIf(ok bool, re *regexp.Regexp, s string) [][]string {
	if !ok {
		return nil
	}
	return re.FindAllStringSubmatch(s, -1)
}

// count reads a number word or digits.
func count(s string) int {
	if n, ok := numberWords[s]; ok {
		return n
	}
	n, _ := strconv.Atoi(s)
	return max(n, 1)
}

// season is the span of the named season (northern meteorological
// seasons) that last began on or before today, or the one before that
// when last is set and today is inside it.
func season(name string, today time.Time, last bool) (time.Time, time.Time) {
	start := map[string]time.Month{"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}[name]
	from := time.Date(today.Year(), start, 1, 0, 0, 0, 0, time.UTC)
	if from.After(today) {
		from = from.AddDate(-1, 0, 0)
	}
	to := from.AddDate(0, 3, 0)
	if last && today.Before(to) {
		from, to = from.AddDate(-1, 0, 0), to.AddDate(-1, 0, 0)
	}
	return from, to
}

// timeSlack is how long after an event a conversation may still be the
// one that tells it: a turn matches a span when its session date is in
// the span or at most this long after it ("we went last weekend").
const timeSlack = 7 * 24 * time.Hour

// timeBoost multiplies by 1+w the fused score of the candidates whose
// event time falls in one of spans (or up to timeSlack after).
func (e *Engine) timeBoost(spans []Span, fused map[uint32]float64, w float64, tr *boostTrace) {
	derived := e.derivedInSpans(spans)
	for k, s := range fused {
		in := derived[k]
		if !in {
			t := time.UnixMicro(e.docs[k].eventTime).UTC()
			for _, sp := range spans {
				if sp.contains(t) || (t.After(sp.To) || t.Equal(sp.To)) && t.Sub(sp.To) < timeSlack {
					in = true
					break
				}
			}
		}
		if in {
			fused[k] = s * (1 + w)
			if tr != nil {
				tr.time[k] = true
			}
		}
	}
}
