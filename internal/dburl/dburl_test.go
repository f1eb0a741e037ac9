package dburl

import (
	"slices"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	const pw = "s3cr#t pw"
	for _, c := range []struct{ in, want string }{
		{"postgres://u:hunter2@h/d", "postgres://u:xxxxx@h/d"},
		{"postgresql://u@h/d?password=hunter2&sslmode=disable", "postgresql://u@h/d?password=xxxxx&sslmode=disable"},
		{"host=db user=u password='" + pw + "' dbname=m", "host=db user=u password=xxxxx dbname=m"},
		{"host=db password=hunter2", "host=db password=xxxxx"},
		{"postgres://u:%zz@h/d", "postgres://(unparsable URL)"},
		{"/var/lib/memgate/memgate.db", "/var/lib/memgate/memgate.db"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Secrets("host=db password='" + pw + "'"); !slices.Contains(got, pw) {
		t.Errorf("Secrets misses the quoted password: %q", got)
	}
	if !IsDSN("host=db dbname=m") || !IsDSN("postgres://h/d") || IsDSN("/tmp/x.db") || IsURL("host=db") {
		t.Error("IsDSN/IsURL misclassify")
	}
	if strings.Contains(Redact("postgres://u:hunter2@h/d?password=hunter2"), "hunter2") {
		t.Error("a password survived")
	}
}
