package kgcompat

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestKGFinderMatchesContains: the anchored search answers exactly as
// strings.Contains, on texts and queries drawn from a small alphabet (so
// near misses, overlaps and matches at both ends are common).
func TestKGFinderMatchesContains(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 5))
	const alphabet = "ab 4?\x00é"
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	for i := range 200_000 {
		s, q := word(r.IntN(40)), word(r.IntN(6))
		if i%7 == 0 && len(s) > 0 { // a query taken from the text
			a := r.IntN(len(s))
			q = s[a : a+r.IntN(len(s)-a+1)]
		}
		if got, want := newKGFinder(q).contains(s), strings.Contains(s, q); got != want {
			t.Fatalf("contains(%q, %q) = %v, want %v", s, q, got, want)
		}
	}
	for _, c := range []struct{ s, q string }{
		{"person 4242\x00person\x00works on search", "person 4242"},
		{"ticket 4242", "ticket 4242"},
		{"ticket 424", "ticket 4242"},
		{"xticket 4242", "ticket 4242"},
		{"", ""},
		{"abc", ""},
	} {
		if got, want := newKGFinder(c.q).contains(c.s), strings.Contains(c.s, c.q); got != want {
			t.Errorf("contains(%q, %q) = %v, want %v", c.s, c.q, got, want)
		}
	}
}

// BenchmarkKGFinder: the anchored search against strings.Contains over
// entity texts like the drop-in bench's, for a name, a ticket and a word.
func BenchmarkKGFinder(b *testing.B) {
	var blobs []string
	for _, e := range kgBenchEntities(0, 10_000) {
		blobs = append(blobs, strings.ToLower(e.Name+"\x00"+e.EntityType+"\x00"+strings.Join(e.Observations, "\x00")))
	}
	for _, q := range []string{"person 4242", "ticket 4242", "osaka"} {
		b.Run(q+"/strings.Contains", func(b *testing.B) {
			for b.Loop() {
				for _, s := range blobs {
					_ = strings.Contains(s, q)
				}
			}
		})
		f := newKGFinder(q)
		b.Run(q+"/anchored", func(b *testing.B) {
			for b.Loop() {
				for _, s := range blobs {
					_ = f.contains(s)
				}
			}
		})
	}
}
