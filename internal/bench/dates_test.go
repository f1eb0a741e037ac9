package bench

import (
	"testing"
	"time"
)

func TestParseLoCoMoTime(t *testing.T) {
	at := func(y int, mo time.Month, d, h, m int) time.Time { return time.Date(y, mo, d, h, m, 0, 0, time.UTC) }
	good := []struct {
		in   string
		want time.Time
	}{
		{"1:56 pm on 8 May, 2023", at(2023, time.May, 8, 13, 56)},
		{"10:37 am on 27 June, 2023", at(2023, time.June, 27, 10, 37)},
		{"12:09 am on 1 January, 2024", at(2024, time.January, 1, 0, 9)},
		{"12:30 pm on 15 August, 2023", at(2023, time.August, 15, 12, 30)},
		{"  7:18 PM on 27 May 2023 ", at(2023, time.May, 27, 19, 18)},
		{"9:55 a.m. on 22 Oct., 2023", at(2023, time.October, 22, 9, 55)},
		{"3 pm on 4 Sept, 2022", at(2022, time.September, 4, 15, 0)},
		{"1:56 pm on May 8, 2023", at(2023, time.May, 8, 13, 56)},
		{"13:56 on 8 May, 2023", at(2023, time.May, 8, 13, 56)},
		{"8 May, 2023", at(2023, time.May, 8, 0, 0)},
		{"21st March 2023", at(2023, time.March, 21, 0, 0)},
		{"6:03 pm, 5 September, 2022", at(2022, time.September, 5, 18, 3)},
	}
	for _, c := range good {
		got, err := ParseLoCoMoTime(c.in)
		if err != nil || !got.Equal(c.want) || got.Location() != time.UTC {
			t.Errorf("ParseLoCoMoTime(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "yesterday", "1:56 pm on 31 April, 2023", "13:56 pm on 8 May, 2023",
		"1:61 pm on 8 May, 2023", "1:56 pm on 8 Mayday, 2023", "1:56 pm on 8 Ma, 2023", "5 8 May, 2023",
		"2023/05/20 (Sat) 02:21"} {
		if got, err := ParseLoCoMoTime(in); err == nil {
			t.Errorf("ParseLoCoMoTime(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseLongMemEvalTime(t *testing.T) {
	good := []struct {
		in   string
		want time.Time
	}{
		{"2023/05/20 (Sat) 02:21", time.Date(2023, 5, 20, 2, 21, 0, 0, time.UTC)},
		{"2023/01/01 (Sun) 00:52", time.Date(2023, 1, 1, 0, 52, 0, 0, time.UTC)},
		{"2023/5/2 (Tue) 23:59", time.Date(2023, 5, 2, 23, 59, 0, 0, time.UTC)},
		{" 2023/05/20 02:21 ", time.Date(2023, 5, 20, 2, 21, 0, 0, time.UTC)},
		{"2023/05/20 (Sat)", time.Date(2023, 5, 20, 0, 0, 0, 0, time.UTC)},
		{"2023-05-20 (Sat) 02:21:09", time.Date(2023, 5, 20, 2, 21, 9, 0, time.UTC)},
		{"2023-05-20T02:21", time.Date(2023, 5, 20, 2, 21, 0, 0, time.UTC)},
	}
	for _, c := range good {
		got, err := ParseLongMemEvalTime(c.in)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("ParseLongMemEvalTime(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "2023/13/01 (Sat) 02:21", "2023/02/30 (Thu) 10:00", "2023/05/20 (Sat) 24:00",
		"2023/05/20 (Sat) 02:60", "20/05/2023 02:21", "1:56 pm on 8 May, 2023", "2023/05/20 (Sat) 02"} {
		if got, err := ParseLongMemEvalTime(in); err == nil {
			t.Errorf("ParseLongMemEvalTime(%q) = %v, want an error", in, got)
		}
	}
}

func TestNormaliseEvidence(t *testing.T) {
	cases := map[string][]string{
		"D1:3":        {"D1:3"},
		"D8:6; D9:17": {"D8:6", "D9:17"},
		"D:11:26":     {"D11:26"},
		"D30:05":      {"D30:5"},
		"D":           nil,
		"":            nil,
	}
	for in, want := range cases {
		got := NormaliseEvidence(in)
		if len(got) != len(want) {
			t.Errorf("NormaliseEvidence(%q) = %q, want %q", in, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("NormaliseEvidence(%q) = %q, want %q", in, got, want)
			}
		}
	}
}

func TestKsUpTo(t *testing.T) {
	for kmax, want := range map[int][]int{50: {1, 5, 10, 20, 50}, 10: {1, 5, 10}, 30: {1, 5, 10, 20, 30}, 3: {1, 3}, 100: {1, 5, 10, 20, 50, 100}} {
		got := KsUpTo(kmax)
		if len(got) != len(want) {
			t.Errorf("KsUpTo(%d) = %v, want %v", kmax, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("KsUpTo(%d) = %v, want %v", kmax, got, want)
			}
		}
	}
}
