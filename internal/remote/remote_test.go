package remote

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"7", 7 * time.Second, true},
		{" 2 ", 2 * time.Second, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"999999999", MaxRetryAfter, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), MaxRetryAfter, true},
	}
	for _, c := range cases {
		got, ok := RetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"error":{"message":"model not found","type":"x"}}`, "model not found"},
		{`{"error":"model \"x\" not found, try pulling it first"}`, `model "x" not found, try pulling it first`},
		{`{"message":"bad input"}`, "bad input"},
		{"plain\ntext  body", "plain text body"},
		{"", ""},
	}
	for _, c := range cases {
		if got := ErrorMessage([]byte(c.in), 200); got != c.want {
			t.Errorf("ErrorMessage(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := ErrorMessage([]byte(strings.Repeat("é", 300)), 200)
	if len(long) > 200 || !strings.HasSuffix(long, "...") || !strings.HasPrefix(long, "éé") {
		t.Errorf("long message cut to %d bytes: %q", len(long), long)
	}
}

func TestRedact(t *testing.T) {
	if got := Redact("sk-1", "key sk-1 leaked"); got != "key [REDACTED] leaked" {
		t.Errorf("Redact = %q", got)
	}
	if got := Redact("", "nothing"); got != "nothing" {
		t.Errorf("Redact with no secret = %q", got)
	}
	if got := RedactedURL("http://u:pw@host/v1?k=sk-1", "sk-1"); strings.Contains(got, "pw") || strings.Contains(got, "sk-1") {
		t.Errorf("RedactedURL = %q", got)
	}
}
