package extract

import (
	"strconv"
	"strings"
	"time"
)

// granularity of a resolved date expression.
type granularity int

const (
	granDay granularity = iota
	granWeek
	granMonth
	granYear
)

// dateMatch is a date expression found in a clause.
type dateMatch struct {
	from, to int // word span, a leading "on"/"in" included
	t        time.Time
	gran     granularity
	// absolute is true when the words name the date in full (with the
	// year), so they need no rewriting.
	absolute bool
	// bare is true when the words follow a preposition of their own
	// ("by", "until", ...), so the rewritten date needs none.
	bare bool
}

// text is the absolute form a rewritten statement uses for m.
func (m dateMatch) text() string {
	var prep, s string
	switch m.gran {
	case granDay:
		prep, s = "on ", m.t.Format("2006-01-02")
	case granWeek:
		prep, s = "in ", "the week of "+m.t.Format("2006-01-02")
	case granMonth:
		prep, s = "in ", m.t.Format("January 2006")
	default:
		prep, s = "in ", m.t.Format("2006")
	}
	if m.bare {
		return s
	}
	return prep + s
}

var months = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
	"september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
	"december": 12, "dec": 12,
}

var weekdays = map[string]time.Weekday{
	"monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday, "sunday": time.Sunday,
}

var numberWords = map[string]int{
	"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
	"seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2,
}

// pastMarkers make a bare weekday ("on Friday") refer to the past.
var pastMarkers = map[string]bool{
	"was": true, "were": true, "did": true, "had": true, "went": true, "met": true, "ago": true,
	"shipped": true, "deployed": true, "launched": true, "released": true, "finished": true,
	"started": true, "moved": true, "switched": true, "migrated": true, "talked": true,
	"spoke": true, "called": true, "saw": true, "visited": true, "arrived": true, "left": true,
	"got": true, "broke": true, "crashed": true, "happened": true, "decided": true,
}

// prepositions that keep their place before a rewritten date.
var datePrepositions = map[string]bool{
	"by": true, "until": true, "till": true, "before": true, "after": true, "since": true,
	"from": true, "to": true, "for": true, "through": true, "of": true,
}

// findDate returns the first date expression of the clause. Relative
// expressions resolve against ref (at midnight in ref's location) and
// need hasRef.
func findDate(toks []token, ref time.Time, hasRef bool) (dateMatch, bool) {
	loc := time.UTC
	if hasRef {
		loc = ref.Location()
		ref = time.Date(ref.Year(), ref.Month(), ref.Day(), 0, 0, 0, 0, loc)
	}
	for i := range toks {
		m, ok := absoluteDate(toks, i, ref, hasRef, loc)
		if !ok && hasRef {
			m, ok = relativeDate(toks, i, ref)
		}
		if !ok {
			continue
		}
		if m.from > 0 {
			switch p := toks[m.from-1].w; {
			case p == "on" && m.gran == granDay || p == "in" && m.gran != granDay:
				m.from--
			case datePrepositions[p]:
				m.bare = true
			}
		}
		return m, true
	}
	return dateMatch{}, false
}

func word(toks []token, i int) string {
	if i < 0 || i >= len(toks) {
		return ""
	}
	return toks[i].w
}

// dayNumber parses "3", "03", "3rd", "21st".
func dayNumber(w string) (int, bool) {
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		if strings.HasSuffix(w, suf) {
			w = w[:len(w)-2]
			break
		}
	}
	if len(w) == 0 || len(w) > 2 {
		return 0, false
	}
	d, err := strconv.Atoi(w)
	if err != nil || d < 1 || d > 31 {
		return 0, false
	}
	return d, true
}

func yearNumber(w string) (int, bool) {
	if len(w) != 4 {
		return 0, false
	}
	y, err := strconv.Atoi(w)
	if err != nil || y < 1900 || y > 2199 {
		return 0, false
	}
	return y, true
}

// validDate builds y-m-d, refusing dates that do not exist (31 April).
func validDate(y int, m time.Month, d int, loc *time.Location) (time.Time, bool) {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	return t, t.Day() == d && t.Month() == m
}

// nearestYear picks, for a date written without a year, the year that
// puts it closest to ref.
func nearestYear(m time.Month, d int, ref time.Time) (time.Time, bool) {
	var best time.Time
	found := false
	for y := ref.Year() - 1; y <= ref.Year()+1; y++ {
		t, ok := validDate(y, m, d, ref.Location())
		if !ok {
			continue
		}
		if !found || absDur(t.Sub(ref)) < absDur(best.Sub(ref)) {
			best, found = t, true
		}
	}
	return best, found
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// absoluteDate matches "2024-03-03", "March 3, 2024", "March 3rd",
// "3 March 2024", "3rd of March" and "March 2024" at word i.
func absoluteDate(toks []token, i int, ref time.Time, hasRef bool, loc *time.Location) (dateMatch, bool) {
	w := toks[i].w
	if len(w) == 10 && w[4] == '-' && w[7] == '-' {
		if t, err := time.ParseInLocation("2006-01-02", w, loc); err == nil {
			return dateMatch{from: i, to: i + 1, t: t, absolute: true}, true
		}
	}
	// Month first.
	if m, ok := months[w]; ok {
		if d, ok := dayNumber(word(toks, i+1)); ok {
			if y, ok := yearNumber(word(toks, i+2)); ok {
				if t, ok := validDate(y, m, d, loc); ok {
					return dateMatch{from: i, to: i + 3, t: t, absolute: true}, true
				}
				return dateMatch{}, false
			}
			if hasRef {
				if t, ok := nearestYear(m, d, ref); ok {
					return dateMatch{from: i, to: i + 2, t: t}, true
				}
			}
			return dateMatch{}, false
		}
		if y, ok := yearNumber(word(toks, i+1)); ok && w != "may" {
			return dateMatch{from: i, to: i + 2, t: time.Date(y, m, 1, 0, 0, 0, 0, loc), gran: granMonth, absolute: true}, true
		}
		return dateMatch{}, false
	}
	// Day first.
	d, ok := dayNumber(w)
	if !ok {
		return dateMatch{}, false
	}
	j := i + 1
	if word(toks, j) == "of" {
		j++
	}
	m, ok := months[word(toks, j)]
	if !ok {
		return dateMatch{}, false
	}
	from := i
	if word(toks, i-1) == "the" {
		from--
	}
	if y, ok := yearNumber(word(toks, j+1)); ok {
		if t, ok := validDate(y, m, d, loc); ok {
			return dateMatch{from: from, to: j + 2, t: t, absolute: true}, true
		}
		return dateMatch{}, false
	}
	if hasRef {
		if t, ok := nearestYear(m, d, ref); ok {
			return dateMatch{from: from, to: j + 1, t: t}, true
		}
	}
	return dateMatch{}, false
}

// relativeDate matches the relative expressions at word i, resolved
// against ref (a midnight).
func relativeDate(toks []token, i int, ref time.Time) (dateMatch, bool) {
	day := func(to int, t time.Time) (dateMatch, bool) { return dateMatch{from: i, to: to, t: t}, true }
	w := toks[i].w
	switch w {
	case "today", "tonight":
		return day(i+1, ref)
	case "yesterday":
		return day(i+1, ref.AddDate(0, 0, -1))
	case "tomorrow":
		return day(i+1, ref.AddDate(0, 0, 1))
	case "the":
		if word(toks, i+1) == "day" {
			switch {
			case word(toks, i+2) == "after" && word(toks, i+3) == "tomorrow":
				return day(i+4, ref.AddDate(0, 0, 2))
			case word(toks, i+2) == "before" && word(toks, i+3) == "yesterday":
				return day(i+4, ref.AddDate(0, 0, -2))
			}
		}
	case "this", "next", "last", "coming":
		next := word(toks, i+1)
		if wd, ok := weekdays[next]; ok {
			switch w {
			case "next":
				// The weekday of next week (weeks start on Monday).
				return day(i+2, startOfWeek(ref).AddDate(0, 0, 7+weekdayIndex(wd)))
			case "last":
				return day(i+2, previous(ref, wd))
			default:
				return day(i+2, upcoming(ref, wd))
			}
		}
		if w == "this" && (next == "morning" || next == "afternoon" || next == "evening") {
			return day(i+2, ref)
		}
		if w == "coming" {
			break
		}
		step := 0
		switch w {
		case "next":
			step = 1
		case "last":
			step = -1
		}
		switch next {
		case "week":
			return dateMatch{from: i, to: i + 2, t: startOfWeek(ref).AddDate(0, 0, 7*step), gran: granWeek}, true
		case "weekend":
			sat := startOfWeek(ref).AddDate(0, 0, 5+7*step)
			return day(i+2, sat)
		case "month":
			return dateMatch{from: i, to: i + 2, t: time.Date(ref.Year(), ref.Month()+time.Month(step), 1, 0, 0, 0, 0, ref.Location()), gran: granMonth}, true
		case "year":
			return dateMatch{from: i, to: i + 2, t: time.Date(ref.Year()+step, 1, 1, 0, 0, 0, 0, ref.Location()), gran: granYear}, true
		}
	case "in", "within":
		if n, unit, to, ok := quantity(toks, i+1); ok {
			return day(to, addUnits(ref, n, unit))
		}
	}
	if wd, ok := weekdays[w]; ok {
		for _, t := range toks {
			if pastMarkers[t.w] {
				return day(i+1, previous(ref, wd))
			}
		}
		return day(i+1, upcoming(ref, wd))
	}
	if n, unit, to, ok := quantity(toks, i); ok && word(toks, to) == "ago" {
		return day(to+1, addUnits(ref, -n, unit))
	}
	return dateMatch{}, false
}

// quantity parses "two weeks", "3 days", "a month", "a couple of days"
// at word i.
func quantity(toks []token, i int) (n int, unit string, to int, ok bool) {
	w := word(toks, i)
	n, ok = numberWords[w]
	if !ok {
		v, err := strconv.Atoi(w)
		if err != nil || v < 1 || v > 1000 {
			return 0, "", 0, false
		}
		n = v
	}
	j := i + 1
	if w == "couple" || word(toks, j) == "couple" {
		if word(toks, j) == "couple" {
			j++
		}
		n = 2
		if word(toks, j) == "of" {
			j++
		}
	}
	switch u := strings.TrimSuffix(word(toks, j), "s"); u {
	case "day", "week", "month", "year":
		return n, u, j + 1, true
	}
	return 0, "", 0, false
}

func addUnits(t time.Time, n int, unit string) time.Time {
	switch unit {
	case "day":
		return t.AddDate(0, 0, n)
	case "week":
		return t.AddDate(0, 0, 7*n)
	case "month":
		return t.AddDate(0, n, 0)
	}
	return t.AddDate(n, 0, 0)
}

// weekdayIndex counts from Monday = 0.
func weekdayIndex(d time.Weekday) int { return (int(d) + 6) % 7 }

func startOfWeek(t time.Time) time.Time { return t.AddDate(0, 0, -weekdayIndex(t.Weekday())) }

// upcoming is the first wd strictly after t.
func upcoming(t time.Time, wd time.Weekday) time.Time {
	d := (int(wd) - int(t.Weekday()) + 7) % 7
	if d == 0 {
		d = 7
	}
	return t.AddDate(0, 0, d)
}

// previous is the last wd strictly before t.
func previous(t time.Time, wd time.Weekday) time.Time {
	d := (int(t.Weekday()) - int(wd) + 7) % 7
	if d == 0 {
		d = 7
	}
	return t.AddDate(0, 0, -d)
}
