package embed

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fixture is a tiny word2vec text file: 12 words × 4 dims, most frequent
// first, with a shared direction (large first component for the frequent
// words) as real word vectors have. "," is never a token; "Über" is stored
// capitalised.
const fixture = `12 4
the 0.9 0.1 0.0 0.1
, 0.8 -0.1 0.1 0.0
a 0.85 0.0 0.1 -0.1
on 0.7 0.2 -0.1 0.0
cat 0.3 0.9 0.1 0.0
kitten 0.25 0.85 0.2 0.05
sat 0.4 0.3 0.6 0.1
mat 0.3 0.5 0.1 0.6
rug 0.3 0.45 0.15 0.65
revenue 0.2 -0.6 0.3 0.5
grew 0.35 -0.2 0.7 0.2
Über 0.1 -0.5 0.2 -0.7
`

var fixtureWords = []string{"the", ",", "a", "on", "cat", "kitten", "sat", "mat", "rug", "revenue", "grew", "über"}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeFile writes content (gzipped when gz) to name in a temporary
// directory and returns its path.
func writeFile(t testing.TB, name, content string, gz bool) string {
	t.Helper()
	b := []byte(content)
	if gz {
		b = gzipBytes(t, b)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func loadFixture(t testing.TB, name string, gz bool) *SIF {
	t.Helper()
	s, err := LoadWordVectors(writeFile(t, name, fixture, gz))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func embedAll(t testing.TB, e Embedder, texts ...string) [][]float32 {
	t.Helper()
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) != e.Dim() {
			t.Fatalf("vector %d has %d components, Dim() = %d", i, len(v), e.Dim())
		}
	}
	return vecs
}

var sentences = []string{
	"The cat sat on the mat",
	"a kitten sat on a rug",
	"revenue grew",
	"Über revenue, über alles",
	"cat",
}

func TestLoadFixture(t *testing.T) {
	for _, c := range []struct {
		file  string
		gz    bool
		model string
	}{
		{"tiny.vec", false, "glove-sif:tiny.vec"},
		{"tiny.vec.gz", true, "glove-sif:tiny.vec"},
		{"tiny.txt", true, "glove-sif:tiny.txt"},       // gzip without the extension
		{"plain.vec.gz", false, "glove-sif:plain.vec"}, // the extension without gzip
		{"glove.6B.50d.txt", false, "glove-sif:glove.6B.50d.txt"},
	} {
		s := loadFixture(t, c.file, c.gz)
		if s.Dim() != 4 || s.Len() != 12 {
			t.Errorf("%s: Dim, Len = %d, %d; want 4, 12", c.file, s.Dim(), s.Len())
		}
		if s.Model() != c.model {
			t.Errorf("%s: Model() = %q, want %q", c.file, s.Model(), c.model)
		}
		for row, w := range fixtureWords {
			if got, ok := s.index[w]; !ok || int(got) != row {
				t.Errorf("%s: word %q at row %d, %v; want %d", c.file, w, got, ok, row)
			}
		}
		if got := s.vecs[4*4+1]; got != 0.9 { // cat's second value
			t.Errorf("%s: cat[1] = %v", c.file, got)
		}
	}
}

func TestPlainAndGzipAgree(t *testing.T) {
	plain := embedAll(t, loadFixture(t, "a.vec", false), sentences...)
	gz := embedAll(t, loadFixture(t, "b.bin", true), sentences...)
	if !equalVecs(plain, gz) {
		t.Fatal("plain and gzipped files embed differently")
	}
}

func equalVecs(a, b [][]float32) bool {
	return slices.EqualFunc(a, b, func(x, y []float32) bool { return slices.Equal(x, y) })
}

func TestDeterministicAcrossLoads(t *testing.T) {
	s1, s2 := loadFixture(t, "a.vec", false), loadFixture(t, "a.vec", false)
	if !slices.Equal(s1.u, s2.u) {
		t.Fatalf("common component differs between loads: %v vs %v", s1.u, s2.u)
	}
	if !equalVecs(embedAll(t, s1, sentences...), embedAll(t, s2, sentences...)) {
		t.Fatal("embeddings differ between loads")
	}
}

// Files written with CRLF line ends, tabs, trailing blanks, blank lines and
// lines longer than the read buffer load the same.
func TestLoadFormattingVariants(t *testing.T) {
	want := embedAll(t, loadFixture(t, "a.vec", false), sentences...)
	variants := map[string]string{
		"crlf":     strings.ReplaceAll(fixture, "\n", "\r\n"),
		"tabs":     strings.ReplaceAll(fixture, " 0.", "\t0."),
		"trailing": strings.ReplaceAll(fixture, "\n", " \n"),
		"blank":    strings.Replace(fixture, "\nsat", "\n\n   \nsat", 1) + "\n\n",
		"no final": strings.TrimSuffix(fixture, "\n"),
	}
	for name, content := range variants {
		s, err := LoadWordVectors(writeFile(t, "v.vec", content, false))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !equalVecs(want, embedAll(t, s, sentences...)) {
			t.Errorf("%s: embeddings differ", name)
		}
	}

	old := lineBufferSize
	lineBufferSize = 16 // bufio's minimum: every line is longer
	defer func() { lineBufferSize = old }()
	s := loadFixture(t, "long.vec", true)
	if !equalVecs(want, embedAll(t, s, sentences...)) {
		t.Error("lines longer than the read buffer load differently")
	}
}

func TestMalformedFiles(t *testing.T) {
	cases := []struct {
		name, content string
		want          []string
	}{
		{"empty", "", []string{"line 1", "empty file"}},
		{"one number", "12\nthe 1 2\n", []string{"line 1", "bad header"}},
		{"words", "count dim\n", []string{"line 1", "bad header"}},
		{"three numbers", "1 2 3\na 1 2\n", []string{"line 1", "bad header"}},
		{"zero dim", "1 0\na\n", []string{"line 1", "bad header"}},
		{"negative count", "-1 2\n", []string{"line 1", "bad header"}},
		{"no header", "the 0.1 0.2\n", []string{"line 1", "bad header"}},
		{"too few values", "3 3\na 1 2 3\nb 1 2 3\nc 1 2\n", []string{"line 4", `"c" has 2 values, want 3`}},
		{"too many values", "2 3\na 1 2 3\nb 1 2 3 4\n", []string{"line 3", "more than 3 values"}},
		{"word only", "1 3\na\n", []string{"line 2", "0 values, want 3"}},
		{"not a number", "3 2\na 1 2\nb 1 2\nc 1 x2\n", []string{"line 4", "value 2", `"x2"`}},
		{"two dots", "1 2\na 1.2.3 2\n", []string{"line 2", "value 1"}},
		{"nan", "1 2\na NaN 1\n", []string{"line 2", "not a finite number"}},
		{"inf", "1 2\na 1 +Inf\n", []string{"line 2", "value 2"}},
		{"overflow", "1 2\na 1e39 1\n", []string{"line 2", "value 1"}},
		{"fewer vectors", "3 2\na 1 2\nb 1 2\n", []string{"line 3", "ends after 2 vectors", "announces 3"}},
		{"more vectors", "1 2\na 1 2\nb 1 2\n", []string{"line 3", "more vectors than the 1"}},
	}
	for _, c := range cases {
		for _, gz := range []bool{false, true} {
			path := writeFile(t, "bad.vec", c.content, gz)
			_, err := LoadWordVectors(path)
			if err == nil {
				t.Errorf("%s (gzip %v): no error", c.name, gz)
				continue
			}
			for _, w := range append(c.want, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s (gzip %v): error %q does not contain %q", c.name, gz, err, w)
				}
			}
		}
	}

	// A truncated gzip stream and a missing file.
	gz := gzipBytes(t, []byte(fixture))
	path := filepath.Join(t.TempDir(), "cut.vec.gz")
	if err := os.WriteFile(path, gz[:len(gz)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadWordVectors(path); err == nil {
		t.Error("truncated gzip: no error")
	}
	if _, err := LoadWordVectors(filepath.Join(t.TempDir(), "missing.vec")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error %v", err)
	}
}

func TestTokenizer(t *testing.T) {
	cases := map[string][]string{
		"":                               nil,
		"  ,;  ":                         nil,
		"The cat sat.":                   {"the", "cat", "sat"},
		"Don't STOP—the Über-cat's 42nd": {"don", "t", "stop", "the", "über", "cat", "s", "42nd"},
		"naïve café ΣΊΣΥΦΟΣ":             {"naïve", "café", "σίσυφοσ"},
		"cafe\u0301 \u0301x":             {"cafe\u0301", "x"}, // a combining mark joins its letter only
		"snake_case e-mail x.y 3.14":     {"snake", "case", "e", "mail", "x", "y", "3", "14"},
		"日本語 テキスト":                       {"日本語", "テキスト"},
		"tab\tnew\nline\u00a0nbsp":       {"tab", "new", "line", "nbsp"},
		"emoji🙂between":                  {"emoji", "between"},
		"\xffbad\xfeutf8":                {"bad", "utf8"},
		"ＡＢＣ":                            {"ａｂｃ"},
	}
	for in, want := range cases {
		var got []string
		buf := make([]byte, 0, 4)
		for i := 0; ; {
			var tok []byte
			tok, i = nextToken(in, i, buf)
			if tok == nil {
				break
			}
			buf = tok
			got = append(got, string(tok))
		}
		if !slices.Equal(got, want) {
			t.Errorf("tokens(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnknownWordsSkipped(t *testing.T) {
	s := loadFixture(t, "a.vec", false)
	v := embedAll(t, s, "cat", "CAT zebra qwerty", "cat, the unknown-ish xyzzy!", "Cat's")
	if !slices.Equal(v[0], v[1]) {
		t.Error("unknown words changed the embedding")
	}
	// "the" is known and changes the average; "," never matches a token.
	if slices.Equal(v[0], v[2]) {
		t.Error(`"the" was ignored`)
	}
	if !slices.Equal(v[0], v[3]) {
		t.Error(`"Cat's" should embed as "cat" ("s" is unknown)`)
	}
}

func TestNothingToEmbedGivesZeroVector(t *testing.T) {
	s := loadFixture(t, "a.vec", false)
	for i, v := range embedAll(t, s, "", "   ", "zebra qwerty", ",,, !!!", "’") {
		for _, x := range v {
			if x != 0 {
				t.Errorf("text %d: %v, want the zero vector", i, v)
				break
			}
		}
	}
}

func TestEmbeddingsAreUnitNormAndCentred(t *testing.T) {
	s := loadFixture(t, "a.vec", false)
	u := s.CommonComponent()
	if n := norm(u); math.Abs(n-1) > 1e-6 {
		t.Fatalf("common component has norm %v", n)
	}
	for i, v := range embedAll(t, s, sentences...) {
		if n := norm(v); math.Abs(n-1) > 1e-6 {
			t.Errorf("sentence %d: norm %v", i, n)
		}
		if d := dot(u, v); math.Abs(d) > 1e-6 {
			t.Errorf("sentence %d: dot with the common component = %g, want 0", i, d)
		}
	}
}

// sifReference computes, independently of the loader, the Zipf
// probabilities and the matrix C = Σ p(w) x(w) x(w)ᵀ of the fixture.
// Only the first limit words enter C.
func sifReference(a float64, limit int) (p, weight []float64, c [4][4]float64, vecs [][]float64) {
	lines := strings.Split(strings.TrimSpace(fixture), "\n")[1:]
	n := len(lines)
	var z float64
	for r := 1; r <= n; r++ {
		z += 1 / (float64(r) + 2.7)
	}
	for r, line := range lines {
		f := strings.Fields(line)
		v := make([]float64, 4)
		for j := range v {
			v[j], _ = strconv.ParseFloat(f[j+1], 32)
			v[j] = float64(float32(v[j]))
		}
		pr := 1 / (float64(r+1) + 2.7) / z
		w := a / (a + pr)
		p, weight, vecs = append(p, pr), append(weight, w), append(vecs, v)
		if r >= limit {
			continue
		}
		for i := range 4 {
			for j := range 4 {
				c[i][j] += pr * w * v[i] * w * v[j]
			}
		}
	}
	return
}

func TestCommonComponentIsTopEigenvector(t *testing.T) {
	t.Run("all words", func(t *testing.T) { testTopEigenvector(t, 12) })
	t.Run("most frequent words", func(t *testing.T) {
		old := componentWords
		componentWords = 5
		defer func() { componentWords = old }()
		testTopEigenvector(t, 5)
	})
}

func testTopEigenvector(t *testing.T, limit int) {
	s := loadFixture(t, "a.vec", false)
	p, _, c, _ := sifReference(DefaultSIFA, limit)
	var sum float64
	for _, x := range p {
		sum += x
	}
	if math.Abs(sum-1) > 1e-12 || p[0] <= p[1] {
		t.Fatalf("Zipf probabilities %v", p)
	}
	quad := func(v []float64) float64 {
		var q float64
		for i := range 4 {
			for j := range 4 {
				q += v[i] * c[i][j] * v[j]
			}
		}
		return q
	}
	u := s.u
	lambda := quad(u)
	// Cu = λu.
	for i := range 4 {
		var cu float64
		for j := range 4 {
			cu += c[i][j] * u[j]
		}
		if math.Abs(cu-lambda*u[i]) > 1e-9*lambda {
			t.Fatalf("u = %v is not an eigenvector: (Cu)_%d = %g, λu_%d = %g", u, i, cu, i, lambda*u[i])
		}
	}
	// No unit vector has a larger Rayleigh quotient.
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		v := []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
		normalize64(v)
		if q := quad(v); q > lambda*(1+1e-9) {
			t.Fatalf("v = %v has vᵀCv = %g > λ = %g", v, q, lambda)
		}
	}
}

func TestSIFFormula(t *testing.T) {
	for _, a := range []float64{DefaultSIFA, 0.05} {
		s, err := LoadWordVectorsWith(writeFile(t, "a.vec", fixture, false), SIFOptions{A: a})
		if err != nil {
			t.Fatal(err)
		}
		_, weight, _, vecs := sifReference(a, 12)
		// "The cat sat on the mat": rows 0, 4, 6, 3, 0, 7; "dog" is unknown.
		rows := []int{0, 4, 6, 3, 0, 7}
		want := make([]float64, 4)
		for _, r := range rows {
			for j := range want {
				want[j] += weight[r] * vecs[r][j] / float64(len(rows))
			}
		}
		var proj float64
		for j := range want {
			proj += s.u[j] * want[j]
		}
		for j := range want {
			want[j] -= proj * s.u[j]
		}
		normalize64(want)
		got := embedAll(t, s, "The cat sat on the mat, dog")[0]
		for j := range want {
			if math.Abs(float64(got[j])-want[j]) > 1e-6 {
				t.Fatalf("a=%g: got %v, want %v", a, got, want)
			}
		}
		if !(s.weight[0] < s.weight[4] && s.weight[4] < s.weight[11]) {
			t.Errorf("a=%g: weights %v do not grow with rank", a, s.weight)
		}
	}
}

func TestSIFOptions(t *testing.T) {
	path := writeFile(t, "a.vec", fixture, false)
	for _, a := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := LoadWordVectorsWith(path, SIFOptions{A: a}); err == nil || !strings.Contains(err.Error(), "A") {
			t.Errorf("A = %v: error %v", a, err)
		}
	}
	def, _ := LoadWordVectorsWith(path, SIFOptions{})
	explicit, _ := LoadWordVectorsWith(path, SIFOptions{A: 1e-3})
	other, _ := LoadWordVectorsWith(path, SIFOptions{A: 0.5})
	v1, v2, v3 := embedAll(t, def, sentences[0]), embedAll(t, explicit, sentences[0]), embedAll(t, other, sentences[0])
	if !equalVecs(v1, v2) || equalVecs(v1, v3) {
		t.Error("option A not applied as documented")
	}
}

func TestSIFSimilarity(t *testing.T) {
	s := loadFixture(t, "a.vec", false)
	v := embedAll(t, s, "the cat sat on the mat", "a kitten sat on a rug", "revenue grew")
	if !(dot(v[0], v[1]) > dot(v[0], v[2])) {
		t.Errorf("cos(similar) = %.3f not above cos(unrelated) = %.3f", dot(v[0], v[1]), dot(v[0], v[2]))
	}
}

func TestSIFConcurrentEmbed(t *testing.T) {
	s := loadFixture(t, "a.vec", false)
	want := embedAll(t, s, sentences...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures int
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := s.Embed(context.Background(), sentences)
				if err != nil || !equalVecs(got, want) {
					mu.Lock()
					failures++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if failures > 0 {
		t.Fatalf("%d concurrent Embed calls disagreed", failures)
	}
}

func TestSIFEmbedCancelled(t *testing.T) {
	s := loadFixture(t, "a.vec", false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Embed(ctx, sentences); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	// Vectors do not share storage: appending to one leaves the next alone.
	v := embedAll(t, s, "cat", "rug")
	rug := slices.Clone(v[1])
	_ = append(v[0], 42)
	if !slices.Equal(v[1], rug) {
		t.Error("appending to one vector overwrote the next")
	}
}

func TestCaseCollisionFirstWins(t *testing.T) {
	s, err := LoadWordVectors(writeFile(t, "c.vec", "3 2\nApple 1 0\napple 0 1\npear 1 1\n", false))
	if err != nil {
		t.Fatal(err)
	}
	if row := s.index["apple"]; row != 0 {
		t.Errorf("apple at row %d, want 0 (the more frequent spelling)", row)
	}
	if s.Len() != 3 {
		t.Errorf("Len() = %d", s.Len())
	}
}

func TestParseFloat32MatchesStrconv(t *testing.T) {
	cases := []string{
		"0", "-0", "+0", "1", "-1", "0.0382", "-0.2449", "12.5", ".5", "5.", "-.5",
		"0.000001", "1234567", "12345678", "0.1234567", "0.12345678", "9999999",
		"1e5", "1E-5", "-2.5e+3", "0x1p-2", "1_000", "3.4028235e38", "1e-45",
		"0.0000000001", "0.00000000001", "00000000000000000000001.5",
		"1.5000000000000000000000", "16777217", "0.16777217",
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var sb strings.Builder
		if r.IntN(2) == 0 {
			sb.WriteByte('-')
		}
		sb.WriteString(strconv.Itoa(r.IntN(1000)))
		if r.IntN(4) > 0 {
			sb.WriteByte('.')
			for range r.IntN(12) {
				sb.WriteByte(byte('0' + r.IntN(10)))
			}
		}
		cases = append(cases, sb.String())
	}
	for _, c := range cases {
		want, err := strconv.ParseFloat(c, 32)
		for _, suffix := range []string{"", " 1.5", "\t-2"} {
			got, n, ok := parseFloat32([]byte(c + suffix))
			if ok != (err == nil) || n != len(c) || (ok && got != float32(want)) {
				t.Fatalf("parseFloat32(%q) = %v, %d, %v; strconv: %v, %v", c+suffix, got, n, ok, float32(want), err)
			}
		}
	}
	for _, bad := range []string{"", "-", "+", ".", "abc", "1.2.3", "--1", "NaN", "Inf", "-inf", "1e400"} {
		if f, _, ok := parseFloat32([]byte(bad)); ok {
			t.Errorf("parseFloat32(%q) = %v, ok", bad, f)
		}
	}
}

func TestParseFloat32DoesNotAllocate(t *testing.T) {
	line := []byte("-0.0382 0.2449 0.7281 -0.3996 0.0832 1.5e-3")
	allocs := testing.AllocsPerRun(100, func() {
		rest := line
		for len(rest) > 0 {
			_, n, _ := parseFloat32(rest)
			rest = rest[n:]
			for len(rest) > 0 && rest[0] == ' ' {
				rest = rest[1:]
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per line", allocs)
	}
}

func TestNormalize(t *testing.T) {
	v := []float32{3, 4}
	Normalize(v)
	if v[0] != 0.6 || v[1] != 0.8 {
		t.Errorf("Normalize(3, 4) = %v", v)
	}
	z := []float32{0, 0, 0}
	Normalize(z)
	if !slices.Equal(z, []float32{0, 0, 0}) {
		t.Errorf("zero vector became %v", z)
	}
	inf := []float32{float32(math.Inf(1)), 1}
	Normalize(inf)
	if !math.IsInf(float64(inf[0]), 1) || inf[1] != 1 {
		t.Errorf("non-finite vector became %v", inf)
	}
	Normalize(nil)
}

// BenchmarkSIFEmbed embeds one ~20-word sentence per op, with the real
// GloVe file when present and a synthetic 50,000 × 100 vocabulary
// otherwise.
func BenchmarkSIFEmbed(b *testing.B) {
	var s *SIF
	if _, err := os.Stat(realGloVe); err == nil {
		if s, err = LoadWordVectors(realGloVe); err != nil {
			b.Fatal(err)
		}
	} else {
		s = syntheticSIF(b, 50000, 100)
	}
	texts := []string{
		"The deployment pipeline failed again because the staging database ran out of disk space during the nightly migration job.",
		"Alice prefers short answers with code examples, and she asked us to always mention the version of every library we use.",
		"We decided to keep the retry budget at five attempts with exponential backoff after the outage in the payments service last week.",
		"Remember that the customer in Berlin wants the quarterly report in German, delivered as a PDF before the end of the month.",
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Embed(ctx, texts[i%len(texts):i%len(texts)+1]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// syntheticSIF builds a file of n words w0, w1, ... and common English
// words, with random vectors.
func syntheticSIF(b *testing.B, n, dim int) *SIF {
	r := rand.New(rand.NewPCG(5, 6))
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d %d\n", n, dim)
	common := strings.Fields("the a to of and in we that is for with at after before because during week last month end keep")
	for i := range n {
		if i < len(common) {
			sb.WriteString(common[i])
		} else {
			fmt.Fprintf(&sb, "w%d", i)
		}
		for range dim {
			fmt.Fprintf(&sb, " %.4f", r.NormFloat64()*0.4)
		}
		sb.WriteByte('\n')
	}
	s, err := LoadWordVectors(writeFile(b, "synthetic.vec", sb.String(), true))
	if err != nil {
		b.Fatal(err)
	}
	return s
}
