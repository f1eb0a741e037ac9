package retrieve

import (
	"testing"

	"github.com/memgate/memgate/internal/lexical"
)

// TestRelevanceBoundedAndMonotone: relevance stays in [0, 1] for any
// evidence, and rises with the cosine and with the coverage, so within
// one query a hit that is a better match on both signals is never less
// relevant.
func TestRelevanceBoundedAndMonotone(t *testing.T) {
	m := DefaultRelevance
	if m.Dense <= 0 || m.Coverage <= 0 || m.LexCoverage <= 0 {
		t.Fatalf("a coefficient is not positive: %+v", m)
	}
	prev := -1.0
	for _, cos := range []float64{-1, -0.2, 0, 0.2, 0.4, 0.6, 0.8, 1} {
		prevCov := -1.0
		for _, cov := range []float64{0, 0.25, 0.5, 0.75, 1} {
			r := m.Relevance(Evidence{Dense: &cos, Coverage: cov})
			if !(r >= 0 && r <= 1) {
				t.Fatalf("relevance(%v, %v) = %v", cos, cov, r)
			}
			if r <= prevCov {
				t.Fatalf("relevance falls with coverage at cos %v cov %v", cos, cov)
			}
			prevCov = r
		}
		r := m.Relevance(Evidence{Dense: &cos})
		if r <= prev {
			t.Fatalf("relevance falls with the cosine at %v", cos)
		}
		prev = r
	}
	if r0, r1 := m.Relevance(Evidence{}), m.Relevance(Evidence{Coverage: 1}); !(0 <= r0 && r0 < r1 && r1 <= 1) {
		t.Fatalf("lexical-only relevance %v .. %v", r0, r1)
	}
}

// TestCoverageWeighsRareTerms: coverage is the idf-weighted share of the
// query terms a document holds; a query word no document holds counts
// against every document.
func TestCoverageWeighsRareTerms(t *testing.T) {
	ix := lexical.New(lexical.DefaultOptions())
	ix.Add(1, "the nurse works nights")
	ix.Add(2, "the dentist works days")
	ix.Add(3, "the dentist is my cousin")
	terms := lexical.Analyze("dentist works", true)
	if c := Coverage(ix, terms, 2); c < 0.999 || c > 1 {
		t.Fatalf("all terms held: coverage %v", c)
	}
	c1, c3 := Coverage(ix, terms, 1), Coverage(ix, terms, 3)
	if !(c1 > 0 && c3 > 0 && c1 < 1 && c3 < 1) {
		t.Fatalf("partial coverage %v %v", c1, c3)
	}
	if c := Coverage(ix, lexical.Analyze("dentist zeppelin", true), 3); !(c > 0 && c < 0.5) {
		t.Fatalf("an unknown word should weigh more than a known one: %v", c)
	}
}
