package lexical

import (
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---- synthetic English-like corpus -----------------------------------------
//
// A vocabulary of 20,000 pseudo-words (consonant-vowel syllables, each a
// single fixed point of Analyze, so the index sees exactly 20,000 terms) is
// drawn with a Zipf(s = 1) rank distribution: the top word is in ~85% of
// documents, which is harsher than real text after stop-word removal and so
// exercises the "very common term" path. Documents are 12–28 words in
// sentence case with punctuation. Everything is derived from fixed seeds.

const (
	benchVocab = 20000
	benchSeed  = 20240501
)

type corpusGen struct {
	words []string
	cdf   []float64
	r     *rand.Rand
}

var (
	vocabOnce  sync.Once
	vocabWords []string
	vocabCDF   []float64
)

func benchVocabulary() ([]string, []float64) {
	vocabOnce.Do(func() {
		r := rand.New(rand.NewPCG(benchSeed, 1))
		const cons, vows = "bcdfghjklmnprstvwz", "aeiou"
		seen := map[string]bool{}
		for len(vocabWords) < benchVocab {
			var sb strings.Builder
			for range 1 + r.IntN(3) + r.IntN(2) {
				sb.WriteByte(cons[r.IntN(len(cons))])
				sb.WriteByte(vows[r.IntN(len(vows))])
			}
			if r.IntN(3) == 0 {
				sb.WriteByte(cons[r.IntN(len(cons))])
			}
			w := sb.String()
			if seen[w] {
				continue
			}
			if a := Analyze(w, true); len(a) != 1 || a[0] != w {
				continue // a stop word, too short, or changed by stemming
			}
			seen[w] = true
			vocabWords = append(vocabWords, w)
		}
		vocabCDF = make([]float64, benchVocab)
		sum := 0.0
		for i := range vocabCDF {
			sum += 1 / float64(i+1)
			vocabCDF[i] = sum
		}
		for i := range vocabCDF {
			vocabCDF[i] /= sum
		}
	})
	return vocabWords, vocabCDF
}

func newCorpusGen(stream uint64) *corpusGen {
	w, c := benchVocabulary()
	return &corpusGen{words: w, cdf: c, r: rand.New(rand.NewPCG(benchSeed, stream))}
}

func (g *corpusGen) rank() int {
	return min(sort.SearchFloat64s(g.cdf, g.r.Float64()), len(g.cdf)-1)
}

func (g *corpusGen) doc() string {
	n := 12 + g.r.IntN(17)
	var sb strings.Builder
	sb.Grow(n * 7)
	for i := range n {
		w := g.words[g.rank()]
		if i == 0 {
			sb.WriteString(strings.ToUpper(w[:1]))
			sb.WriteString(w[1:])
			continue
		}
		switch g.r.IntN(12) {
		case 0:
			sb.WriteString(", ")
		case 1:
			sb.WriteString(". ")
			w = strings.ToUpper(w[:1]) + w[1:]
		default:
			sb.WriteByte(' ')
		}
		sb.WriteString(w)
	}
	sb.WriteByte('.')
	return sb.String()
}

// query returns 5 distinct words: "zipf" draws them like document words (a
// typical query, often containing a common word), "common" from the 10 most
// frequent words (worst case: ~2–3 postings per document), "rare" from ranks
// beyond 1,000.
func (g *corpusGen) query(kind string) string {
	var ws []string
	for len(ws) < 5 {
		var r int
		switch kind {
		case "common":
			r = g.r.IntN(10)
		case "rare":
			r = 1000 + g.r.IntN(len(g.words)-1000)
		default:
			r = g.rank()
		}
		if w := g.words[r]; !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	return strings.Join(ws, " ")
}

// ---- shared built indexes ----------------------------------------------------

type builtIndex struct {
	ix      *Index
	buildNs time.Duration
	heapMB  float64
}

var (
	builtMu sync.Mutex
	built   = map[int]*builtIndex{}
)

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// benchIndex builds (once per size) an index of n synthetic documents with
// keys 0..n-1. Texts are generated on the fly and not retained, so the heap
// growth is the index itself.
func benchIndex(b *testing.B, n int) *builtIndex {
	builtMu.Lock()
	defer builtMu.Unlock()
	if bi := built[n]; bi != nil {
		return bi
	}
	b.StopTimer()
	defer b.StartTimer()
	benchVocabulary()
	before := heapAlloc()
	g := newCorpusGen(2)
	ix := New(DefaultOptions())
	t0 := time.Now()
	for k := range n {
		ix.Add(uint32(k), g.doc())
	}
	bi := &builtIndex{ix: ix, buildNs: time.Since(t0)}
	bi.heapMB = float64(heapAlloc()-before) / (1 << 20)
	built[n] = bi
	return bi
}

func percentile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := min(int(p*float64(len(s))), len(s)-1)
	return float64(s[i]) / float64(time.Millisecond)
}

func benchSearch(b *testing.B, n int) {
	bi := benchIndex(b, n)
	docs, avg := bi.ix.Stats()
	b.Logf("%d docs, avg %.1f terms, %d terms, index heap %.0f MB, built in %v",
		docs, avg, bi.ix.nterms, bi.heapMB, bi.buildNs.Round(time.Millisecond))
	for _, kind := range []string{"zipf", "common", "rare", "zipf-allow50"} {
		b.Run(kind, func(b *testing.B) {
			g := newCorpusGen(3)
			qkind, _, filtered := strings.Cut(kind, "-")
			queries := make([]string, 256)
			for i := range queries {
				queries[i] = g.query(qkind)
			}
			var allow Allow
			if filtered {
				allow = func(k uint32) bool { return k&1 == 0 }
			}
			lat := make([]time.Duration, 0, b.N)
			hits := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				hits += len(bi.ix.Search(queries[i%len(queries)], 10, allow))
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			if hits == 0 {
				b.Fatal("no hits")
			}
			b.ReportMetric(percentile(lat, 0.50), "p50-ms")
			b.ReportMetric(percentile(lat, 0.95), "p95-ms")
			b.ReportMetric(bi.heapMB, "index-MB")
		})
	}
}

func benchBuild(b *testing.B, n int) {
	g := newCorpusGen(2)
	texts := make([]string, n)
	for i := range texts {
		texts[i] = g.doc()
	}
	var lat []time.Duration
	var heapMB float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		lat = lat[:0]
		before := heapAlloc()
		b.StartTimer()
		ix := New(DefaultOptions())
		for k, text := range texts {
			t0 := time.Now()
			ix.Add(uint32(k), text)
			lat = append(lat, time.Since(t0))
		}
		b.StopTimer()
		heapMB = float64(heapAlloc()-before) / (1 << 20)
		runtime.KeepAlive(ix)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
	b.ReportMetric(percentile(lat, 0.95)*1000, "p95-add-µs")
	b.ReportMetric(heapMB, "index-MB")
}

func skipUnlessLarge(b *testing.B) {
	if os.Getenv("MEMGATE_BENCH_LARGE") != "1" {
		b.Skip("set MEMGATE_BENCH_LARGE=1 to run the 1,000,000-document benchmarks")
	}
}

func BenchmarkSearch100k(b *testing.B) { benchSearch(b, 100_000) }
func BenchmarkBuild100k(b *testing.B)  { benchBuild(b, 100_000) }

func BenchmarkSearch1M(b *testing.B) { skipUnlessLarge(b); benchSearch(b, 1_000_000) }
func BenchmarkBuild1M(b *testing.B)  { skipUnlessLarge(b); benchBuild(b, 1_000_000) }

// BenchmarkRemoveAdd100k measures replacing a document (Remove+Add of the
// same key) in a 100k index, the write-lock hold time searches wait behind.
func BenchmarkRemoveAdd100k(b *testing.B) {
	bi := benchIndex(b, 100_000)
	g := newCorpusGen(4)
	texts := make([]string, 1024)
	for i := range texts {
		texts[i] = g.doc()
	}
	r := rand.New(rand.NewPCG(5, 5))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := uint32(r.IntN(100_000))
		t0 := time.Now()
		bi.ix.Add(k, texts[i%len(texts)])
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(percentile(lat, 0.95)*1000, "p95-µs")
}

// TestBenchCorpusShape keeps the generator honest (cheap: 2,000 documents).
func TestBenchCorpusShape(t *testing.T) {
	g := newCorpusGen(2)
	ix := New(DefaultOptions())
	for k := range 2000 {
		ix.Add(uint32(k), g.doc())
	}
	w, _ := benchVocabulary()
	if len(w) != benchVocab {
		t.Fatalf("vocabulary %d", len(w))
	}
	n, avg := ix.Stats()
	if n != 2000 || avg < 18 || avg > 22 {
		t.Fatalf("docs %d avg len %v", n, avg)
	}
	if df := ix.DocFreq(w[0]); df < 1500 {
		t.Fatalf("top word in %d of 2000 docs", df)
	}
	if q := Analyze(g.query("zipf"), true); len(q) != 5 {
		t.Fatalf("query analyses to %q", q)
	}
}
