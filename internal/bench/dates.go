package bench

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var months = []string{"january", "february", "march", "april", "may", "june", "july",
	"august", "september", "october", "november", "december"}

// month resolves an English month name or an abbreviation of at least
// three letters ("Sep", "Sept", "September").
func month(name string) (time.Month, bool) {
	n := strings.ToLower(strings.TrimSuffix(name, "."))
	if len(n) < 3 {
		return 0, false
	}
	for i, m := range months {
		if strings.HasPrefix(m, n) {
			return time.Month(i + 1), true
		}
	}
	return 0, false
}

var (
	// Time part of a LoCoMo date: "1:56 pm", "1 pm", "13:56", "1:56 p.m.".
	locomoClock = `(?:(\d{1,2})\b(?::(\d{2}))?\s*(?:([ap])\.?\s*m\.?)?\s*(?:on\s+|,\s*|\s+)?)?`
	// "1:56 pm on 8 May, 2023" (day first, the LoCoMo form).
	locomoDayFirst = regexp.MustCompile(`(?i)^\s*` + locomoClock + `(\d{1,2})(?:st|nd|rd|th)?\s+([a-z]+\.?)\s*,?\s*(\d{4})\s*$`)
	// "1:56 pm on May 8, 2023" (month first).
	locomoMonthFirst = regexp.MustCompile(`(?i)^\s*` + locomoClock + `([a-z]+\.?)\s+(\d{1,2})(?:st|nd|rd|th)?\s*,?\s*(\d{4})\s*$`)
)

// ParseLoCoMoTime parses a LoCoMo session date such as
// "1:56 pm on 8 May, 2023" (UTC). It also accepts the month before the
// day, a missing time ("8 May, 2023"), a 24-hour clock, "p.m." and
// abbreviated month names.
func ParseLoCoMoTime(s string) (time.Time, error) {
	var hh, mm, ampm, day, mon, year string
	if m := locomoDayFirst.FindStringSubmatch(s); m != nil {
		hh, mm, ampm, day, mon, year = m[1], m[2], m[3], m[4], m[5], m[6]
	} else if m := locomoMonthFirst.FindStringSubmatch(s); m != nil {
		hh, mm, ampm, mon, day, year = m[1], m[2], m[3], m[4], m[5], m[6]
	} else {
		return time.Time{}, fmt.Errorf("bench: unrecognised LoCoMo date %q", s)
	}
	mo, ok := month(mon)
	if !ok {
		return time.Time{}, fmt.Errorf("bench: unknown month in %q", s)
	}
	hour, minute := 0, 0
	if hh != "" {
		hour, _ = strconv.Atoi(hh)
		if mm != "" {
			minute, _ = strconv.Atoi(mm)
		}
		switch strings.ToLower(ampm) {
		case "a", "p":
			if hour < 1 || hour > 12 {
				return time.Time{}, fmt.Errorf("bench: hour out of range in %q", s)
			}
			hour %= 12
			if strings.EqualFold(ampm, "p") {
				hour += 12
			}
		default:
			if mm == "" { // a bare number is not a time of day
				return time.Time{}, fmt.Errorf("bench: unrecognised LoCoMo date %q", s)
			}
		}
	}
	d, _ := strconv.Atoi(day)
	y, _ := strconv.Atoi(year)
	return checkedDate(s, y, mo, d, hour, minute, 0)
}

var lmeDate = regexp.MustCompile(`^\s*(\d{4})[/.-](\d{1,2})[/.-](\d{1,2})(?:\s*\(\s*[A-Za-z]+\.?\s*\))?(?:[\sT]+(\d{1,2}):(\d{2})(?::(\d{2}))?)?\s*$`)

// ParseLongMemEvalTime parses a LongMemEval date such as
// "2023/05/20 (Sat) 02:21" (UTC). The weekday and the time are optional;
// "-" and "." are accepted as date separators.
func ParseLongMemEvalTime(s string) (time.Time, error) {
	m := lmeDate.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}, fmt.Errorf("bench: unrecognised LongMemEval date %q", s)
	}
	y, _ := strconv.Atoi(m[1])
	mo, _ := strconv.Atoi(m[2])
	d, _ := strconv.Atoi(m[3])
	var hh, mm, ss int
	if m[4] != "" {
		hh, _ = strconv.Atoi(m[4])
		mm, _ = strconv.Atoi(m[5])
		if m[6] != "" {
			ss, _ = strconv.Atoi(m[6])
		}
	}
	if mo < 1 || mo > 12 {
		return time.Time{}, fmt.Errorf("bench: month out of range in %q", s)
	}
	return checkedDate(s, y, time.Month(mo), d, hh, mm, ss)
}

// checkedDate builds a UTC time, rejecting fields that time.Date would
// silently normalise (31 April, 25:00).
func checkedDate(src string, y int, mo time.Month, d, hh, mm, ss int) (time.Time, error) {
	if hh > 23 || mm > 59 || ss > 59 {
		return time.Time{}, fmt.Errorf("bench: time of day out of range in %q", src)
	}
	t := time.Date(y, mo, d, hh, mm, ss, 0, time.UTC)
	if t.Day() != d || t.Month() != mo {
		return time.Time{}, fmt.Errorf("bench: no such day in %q", src)
	}
	return t, nil
}
