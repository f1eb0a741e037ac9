package embed

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// realGloVe is the shared GloVe file, relative to the package directory.
var realGloVe = filepath.Join("..", "..", "..", "shared", "models", "glove.6B.100d.top50k.vec.gz")

func loadRealGloVe(tb testing.TB) (*SIF, time.Duration) {
	tb.Helper()
	if _, err := os.Stat(realGloVe); err != nil {
		tb.Skipf("needs the GloVe file %s (50,000 words × 100 dims, word2vec text, gzip): %v", realGloVe, err)
	}
	start := time.Now()
	s, err := LoadWordVectors(realGloVe)
	if err != nil {
		tb.Fatal(err)
	}
	return s, time.Since(start)
}

func TestGloVeRealFile(t *testing.T) {
	// Parsing the 50,000-word file takes ~30 s under -race: a long test,
	// run by CI (.ci/run sets MEMGATE_TEST_LONG), skipped in the default
	// loop; the parser's cases are in sif_test.go.
	if os.Getenv("MEMGATE_TEST_LONG") == "" {
		t.Skip("long test: set MEMGATE_TEST_LONG=1 (CI does)")
	}
	s, took := loadRealGloVe(t)
	t.Logf("loaded %d words × %d dims in %v (race detector on: %v)", s.Len(), s.Dim(), took, raceEnabled)
	if s.Len() != 50000 || s.Dim() != 100 {
		t.Fatalf("Len, Dim = %d, %d; want 50000, 100", s.Len(), s.Dim())
	}
	if got, want := s.Model(), "glove-sif:glove.6B.100d.top50k.vec"; got != want {
		t.Errorf("Model() = %q, want %q", got, want)
	}
	const (
		anchor  = "the cat sat on the mat"
		similar = "a kitten was sitting on a rug"
		other   = "quarterly revenue grew in europe"
	)
	vecs, err := s.Embed(context.Background(), []string{anchor, similar, other})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vecs {
		if n := norm(v); n < 0.999 || n > 1.001 {
			t.Errorf("vector %d has norm %v", i, n)
		}
	}
	simCos, otherCos := dot(vecs[0], vecs[1]), dot(vecs[0], vecs[2])
	t.Logf("cosine(%q, %q) = %.4f", anchor, similar, simCos)
	t.Logf("cosine(%q, %q) = %.4f", anchor, other, otherCos)
	if !(simCos > otherCos) {
		t.Errorf("paraphrase cosine %.4f not above unrelated cosine %.4f", simCos, otherCos)
	}
	u := s.CommonComponent()
	for i, v := range vecs {
		if d := dot(u, v); d > 1e-5 || d < -1e-5 {
			t.Errorf("vector %d: dot with common component = %g", i, d)
		}
	}
}

// BenchmarkLoadGloVe measures loading the real file (skipped without it).
func BenchmarkLoadGloVe(b *testing.B) {
	for b.Loop() {
		loadRealGloVe(b)
	}
}
