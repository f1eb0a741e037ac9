package extract

import "testing"

func TestParseClaim(t *testing.T) {
	a, b := ParseClaim("Alice uses Vim for Go"), ParseClaim("alice uses vim for go.")
	if a != b || a.Subject != "alice" || a.Predicate != "use" || a.Object == "" {
		t.Fatalf("claims differ or are empty: %+v %+v", a, b)
	}
	if c := ParseClaim("Alice no longer uses Vim for Go"); !c.Negated || c.Predicate != "use" {
		t.Fatalf("negation lost: %+v", c)
	}
}

func TestContradicts(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"Alice likes Java", "Alice hates Java", true},
		{"Alice uses Vim", "Alice uses Emacs", true},
		{"Alice prefers PostgreSQL for backend work", "Alice prefers MySQL for backend work", true},
		{"Alice uses Vim", "Alice uses Vim", false},
		{"Alice uses Vim", "Bob uses Emacs", false},
		{"the sky is blue", "Alice uses Emacs", false},
	} {
		if got := Contradicts(c.a, c.b); got != c.want {
			t.Errorf("Contradicts(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
