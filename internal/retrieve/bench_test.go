package retrieve

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/vector"
)

// Search benchmarks over an engine built directly (no store, no write
// path): n synthetic records laid out like `memgate bench latency`
// (one workspace, 100 projects of one app, blocks of 100 records
// alternating episodes and beliefs) with Zipf-distributed pseudo-words,
// 100-d vectors from a word-vector embedder (texts sharing words are
// close), and queries like the latency bench's: the first eight words of
// a record, nine in ten scoped to that record's project. The 1,000,000
// record run is gated behind MEMGATE_BENCH_LARGE=1 (building takes
// minutes):
//
//	go test -run '^$' -bench 'Search/n=100k' -benchtime 2000x ./internal/retrieve/
//	MEMGATE_BENCH_LARGE=1 go test -run '^$' -bench 'Search/n=1M' -benchtime 2000x -timeout 2h ./internal/retrieve/
//
// Each run reports p50 and p95 latency per query (ms) and, for HNSW, the
// recall@10 of the dense list against exact search under the same filter.
const (
	benchDim      = 100
	benchVocab    = 20000
	benchScopes   = 100
	benchQueries  = 400
	benchQueryLen = 8
)

// wordEmbedder embeds a text like the local GloVe SIF embedder: the
// normalised sum of fixed pseudo-random word vectors (cached per term),
// each weighted a/(a + p(word)) by its corpus frequency, so common words
// do not pull every vector the same way.
type wordEmbedder struct {
	dim   int
	mu    sync.Mutex
	cache map[string][]float32
	prob  map[string]float64
}

func (w *wordEmbedder) Model() string { return "bench:words" }
func (w *wordEmbedder) Dim() int      { return w.dim }

func (w *wordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = w.vec(t)
	}
	return out, nil
}

func (w *wordEmbedder) vec(text string) []float32 {
	v := make([]float32, w.dim)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, term := range lexical.Analyze(text, true) {
		tv, ok := w.cache[term]
		if !ok {
			var seed uint64
			for _, c := range []byte(term) {
				seed = seed*131 + uint64(c)
			}
			r := rand.New(rand.NewPCG(seed, 7))
			tv = make([]float32, w.dim)
			weight := 1e-3 / (1e-3 + w.prob[term])
			for i := range tv {
				tv[i] = float32(weight * r.NormFloat64())
			}
			w.cache[term] = tv
		}
		for i := range v {
			v[i] += tv[i]
		}
	}
	embed.Normalize(v)
	return v
}

// benchWords is a vocabulary of pseudo-words, each its own analysed term,
// and a Zipf(1) cumulative distribution over them.
var benchWords = sync.OnceValues(func() ([]string, []float64) {
	r := rand.New(rand.NewPCG(20260301, 1))
	const cons, vows = "bcdfghjklmnprstvwz", "aeiou"
	seen := map[string]bool{}
	var words []string
	for len(words) < benchVocab {
		var sb strings.Builder
		for range 2 + r.IntN(3) {
			sb.WriteByte(cons[r.IntN(len(cons))])
			sb.WriteByte(vows[r.IntN(len(vows))])
		}
		w := sb.String()
		if a := lexical.Analyze(w, true); seen[w] || len(a) != 1 || a[0] != w {
			continue
		}
		seen[w] = true
		words = append(words, w)
	}
	cdf := make([]float64, benchVocab)
	sum := 0.0
	for i := range cdf {
		sum += 1 / float64(i+10) // Zipf with an offset: no word is in most records
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return words, cdf
})

type benchQuery struct {
	text    string
	project string // "" = unscoped
}

type benchSet struct {
	n       int
	vecs    []float32 // for building HNSW on first use
	e       *Engine
	exact   vectorIndex // the same vectors in both indexes
	hnsw    vectorIndex
	queries []benchQuery
	// heapMB and rssMB are the process's live heap and resident set once
	// the engine is built (with the exact vectors, and the flat copy the
	// HNSW index is built from).
	heapMB, rssMB float64
}

var (
	benchSetsMu sync.Mutex
	benchSets   = map[int]*benchSet{}
)

func benchEngine(b *testing.B, n int) *benchSet {
	benchSetsMu.Lock()
	defer benchSetsMu.Unlock()
	if s := benchSets[n]; s != nil {
		return s
	}
	words, cdf := benchWords()
	r := rand.New(rand.NewPCG(uint64(n), 2))
	emb := &wordEmbedder{dim: benchDim, cache: map[string][]float32{}, prob: map[string]float64{}}
	for i, w := range words {
		p := cdf[i]
		if i > 0 {
			p -= cdf[i-1]
		}
		emb.prob[w] = p
	}
	e := New(Options{Embedder: emb, Vectors: VectorExact})
	start := time.Now()
	texts := make([]string, 0, 10_000)
	var sb strings.Builder
	vecs := make([]float32, 0, n*benchDim)
	for i := range n {
		sb.Reset()
		for j := range 20 + r.IntN(60) {
			if j > 0 {
				sb.WriteByte(' ')
			}
			w, _ := slices.BinarySearch(cdf, r.Float64())
			sb.WriteString(words[min(w, len(words)-1)])
		}
		text := sb.String()
		typ := memory.Episode
		if (i/benchScopes)%2 == 1 {
			typ = memory.Belief
		}
		at := t0.Add(time.Duration(i) * time.Second)
		rc := memory.Record{
			ID: fmt.Sprintf("00000000-0000-7000-8000-%012d", i), Type: typ, Content: text,
			ContentSHA256: fmt.Sprintf("%064x", i), Status: memory.Active, Access: memory.Public, Version: 1,
			Source: memory.Source{Agent: "bench", Kind: memory.Observed, Confidence: 0.9}, IngestedAt: at,
			CreatedAt: at, UpdatedAt: at, Scope: memory.Scope{AppID: "bench", ProjectID: fmt.Sprintf("p%d", i%benchScopes)},
		}
		e.Upsert("w", rc)
		vecs = append(vecs, emb.vec(text)...)
		if len(texts) < cap(texts) {
			texts = append(texts, text)
		}
	}
	build := time.Since(start)
	x := vector.NewExact(benchDim)
	for i := range n {
		x.Add(uint32(i), vecs[i*benchDim:(i+1)*benchDim])
	}
	b.Logf("n=%d: engine built in %v", n, build.Round(time.Millisecond))
	s := &benchSet{n: n, e: e, exact: x, vecs: vecs}
	e.vecs = x
	m := readMem()
	s.heapMB, s.rssMB = m.heapMB, m.rssMB
	writeHeapProfile(b, fmt.Sprintf("build-%d", n))
	for len(s.queries) < benchQueries {
		i := r.IntN(len(texts))
		f := strings.Fields(texts[i])
		q := benchQuery{text: strings.Join(f[:min(len(f), benchQueryLen)], " ")}
		if r.IntN(10) != 0 {
			q.project = fmt.Sprintf("p%d", i%benchScopes)
		}
		s.queries = append(s.queries, q)
	}
	benchSets[n] = s
	return s
}

func (s *benchSet) query(q benchQuery, signals []string) Query {
	f := Filter{Workspace: "w", Access: everyone}
	if q.project != "" {
		f.Scope = memory.Scope{AppID: "bench", ProjectID: q.project}
	}
	return Query{Text: q.text, K: 10, Filter: f, Signals: signals, Context: 0.5,
		Weights: map[string]float64{SignalLexical: 1, SignalDense: 0.25}, Now: t0}
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		name := fmt.Sprintf("n=%dk", n/1000)
		if n >= 1_000_000 {
			name = fmt.Sprintf("n=%dM", n/1_000_000)
		}
		b.Run(name, func(b *testing.B) {
			if n >= 1_000_000 && os.Getenv("MEMGATE_BENCH_LARGE") != "1" {
				b.Skip("set MEMGATE_BENCH_LARGE=1 (and a long -timeout) to build 1,000,000 records")
			}
			for _, m := range []struct {
				name    string
				hnsw    bool
				signals []string
				turns   bool // turns only, the searches the ranker re-ranks
				ranker  bool
			}{
				{"lexical", false, []string{SignalLexical}, false, false},
				// The learned ranker's cost, side by side (ranker.go).
				{"lexical_turns", false, []string{SignalLexical}, true, false},
				{"lexical_turns_ranker", false, []string{SignalLexical}, true, true},
				{"dense_exact", false, []string{SignalDense}, false, false},
				{"dense_hnsw", true, []string{SignalDense}, false, false},
				{"hybrid_exact", false, nil, false, false},
				{"hybrid_exact_turns", false, nil, true, false},
				{"hybrid_exact_turns_ranker", false, nil, true, true},
				{"hybrid_hnsw", true, nil, false, false},
			} {
				b.Run(m.name, func(b *testing.B) {
					s := benchEngine(b, n)
					s.e.vecs, s.e.approx = s.exact, false
					if m.hnsw {
						s.e.vecs, s.e.approx = s.hnswIndex(b), true
					}
					defer func() { s.e.vecs, s.e.approx = s.exact, false }()
					ctx := context.Background()
					var lat, unscoped []time.Duration
					i := 0
					for b.Loop() {
						q := s.queries[i%len(s.queries)]
						i++
						sq := s.query(q, m.signals)
						if m.turns {
							sq.Filter.Types = []memory.Type{memory.Episode}
						}
						if m.ranker {
							sq.Ranker = &DefaultRanker
						}
						t := time.Now()
						if _, err := s.e.Search(ctx, sq); err != nil {
							b.Fatal(err)
						}
						d := time.Since(t)
						lat = append(lat, d)
						if q.project == "" {
							unscoped = append(unscoped, d)
						}
					}
					b.ReportMetric(percentileMS(lat, 0.5), "p50-ms")
					b.ReportMetric(percentileMS(lat, 0.95), "p95-ms")
					b.ReportMetric(percentileMS(unscoped, 0.5), "unscoped-p50-ms")
					b.ReportMetric(s.heapMB, "heap-MB")
					b.ReportMetric(s.rssMB, "rss-MB")
					if m.hnsw && slices.Equal(m.signals, []string{SignalDense}) {
						all, unscoped := s.recall(b)
						b.ReportMetric(all, "recall@10")
						b.ReportMetric(unscoped, "unscoped-recall@10")
					}
				})
			}
		})
	}
}

// recall is the dense HNSW list's recall@10 against exact search with the
// same filter, over the query set.
func (s *benchSet) recall(b *testing.B) (all, unscoped float64) {
	ctx := context.Background()
	hit, total, uhit, utotal := 0, 0, 0, 0
	for _, q := range s.queries {
		run := func(ix vectorIndex, approx bool) []string {
			s.e.vecs, s.e.approx = ix, approx
			qq := s.query(q, []string{SignalDense})
			qq.Context = 0
			res, err := s.e.Search(ctx, qq)
			if err != nil {
				b.Fatal(err)
			}
			return ids(res)
		}
		want, got := run(s.exact, false), run(s.hnswIndex(b), true)
		for _, id := range want {
			total++
			in := slices.Contains(got, id)
			if in {
				hit++
			}
			if q.project == "" {
				utotal++
				if in {
					uhit++
				}
			}
		}
	}
	s.e.vecs, s.e.approx = s.hnsw, true
	return float64(hit) / float64(max(total, 1)), float64(uhit) / float64(max(utotal, 1))
}

// hnswIndex builds the HNSW index over the set's vectors on first use. With
// MEMGATE_BENCH_CACHE=dir it is saved to (and later read from) that
// directory: building a million-node graph takes many minutes, and the
// data are the same on every run.
func (s *benchSet) hnswIndex(b *testing.B) vectorIndex {
	if s.hnsw != nil {
		return s.hnsw
	}
	var path string
	if dir := os.Getenv("MEMGATE_BENCH_CACHE"); dir != "" {
		path = filepath.Join(dir, fmt.Sprintf("retrieve-bench-hnsw-v2-%d-efc%d.snap", s.n, benchHNSWConfig(s.n).EfConstruction))
		if f, err := os.Open(path); err == nil {
			h, err := vector.ReadHNSW(bufio.NewReaderSize(f, 1<<20))
			f.Close()
			if err == nil && h.Len() == s.n {
				s.hnsw = h
				return h
			}
			b.Logf("ignoring %s: %v", path, err)
		}
	}
	start := time.Now()
	h := vector.NewHNSW(benchDim, benchHNSWConfig(s.n))
	for i := range s.n {
		h.Add(uint32(i), s.vecs[i*benchDim:(i+1)*benchDim])
	}
	b.Logf("n=%d: HNSW built in %v", s.n, time.Since(start).Round(time.Millisecond))
	s.hnsw = h
	if path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		if _, err := h.WriteTo(w); err != nil {
			b.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return h
}

func percentileMS(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	d = slices.Clone(d)
	slices.Sort(d)
	return float64(d[min(len(d)-1, max(0, int(math.Ceil(p*float64(len(d))))-1))]) / 1e6
}

// BenchmarkSnapshotLoad is the in-memory part of a cold start: the bench
// engine (with its HNSW index, as auto mode has at 1M) saved as an index
// snapshot and loaded into a fresh engine. It reports the load time.
//
//	MEMGATE_BENCH_LARGE=1 MEMGATE_BENCH_CACHE=/tmp/x go test -run '^$' -bench 'SnapshotLoad/n=1M' -benchtime 3x -timeout 2h ./internal/retrieve/
func BenchmarkSnapshotLoad(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		name := fmt.Sprintf("n=%dk", n/1000)
		if n >= 1_000_000 {
			name = fmt.Sprintf("n=%dM", n/1_000_000)
		}
		b.Run(name, func(b *testing.B) {
			if n >= 1_000_000 && os.Getenv("MEMGATE_BENCH_LARGE") != "1" {
				b.Skip("set MEMGATE_BENCH_LARGE=1 (and a long -timeout) to build 1,000,000 records")
			}
			for _, vectors := range []bool{false, true} {
				b.Run(map[bool]string{false: "lexical", true: "hnsw"}[vectors], func(b *testing.B) { benchSnapshotLoad(b, n, vectors) })
			}
		})
	}
}

func benchSnapshotLoad(b *testing.B, n int, vectors bool) {
	s := benchEngine(b, n)
	opts := Options{}
	s.e.vecs, s.e.approx = nil, false
	emb := s.e.opts.Embedder
	s.e.opts.Embedder = nil
	if vectors {
		s.e.vecs, s.e.approx = s.hnswIndex(b), true
		s.e.opts.Embedder = emb
		opts = Options{Embedder: emb, Vectors: VectorApprox}
	}
	defer func() { s.e.vecs, s.e.approx, s.e.opts.Embedder = s.exact, false, emb }()
	path := filepath.Join(b.TempDir(), "index.snapshot")
	if err := s.e.SaveSnapshot(path); err != nil {
		b.Fatal(err)
	}
	var took []time.Duration
	var heap, alloc []float64
	for b.Loop() {
		runtime.GC()
		before := readMem()
		start := time.Now()
		e := New(opts)
		if err := e.LoadSnapshot(path); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		after := readMem()
		heap = append(heap, after.heapMB-before.heapMB)
		alloc = append(alloc, after.allocMB-before.allocMB)
		if st := e.Stats(); st.Docs != n || (vectors && (st.Vectors != n || st.VectorIndex != "hnsw")) {
			b.Fatalf("loaded %+v", st)
		}
		writeHeapProfile(b, fmt.Sprintf("snapload-%d-%v", n, vectors))
		runtime.KeepAlive(e)
		b.StartTimer()
	}
	b.ReportMetric(percentileMS(took, 0.5)/1000, "load-s")
	slices.Sort(heap)
	slices.Sort(alloc)
	b.ReportMetric(heap[len(heap)/2], "engine-heap-MB")
	b.ReportMetric(alloc[len(alloc)/2], "alloc-MB")
}

// memFigures are the process's memory figures: the live heap after a GC,
// the bytes allocated so far and the resident set.
type memFigures struct{ heapMB, allocMB, rssMB float64 }

func readMem() memFigures {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memFigures{heapMB: float64(ms.HeapAlloc) / (1 << 20), allocMB: float64(ms.TotalAlloc) / (1 << 20), rssMB: rssMB()}
}

// rssMB is the process's resident set (VmRSS) in MiB, 0 where unknown.
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			fmt.Sscan(v, &kb)
			return kb / 1024
		}
	}
	return 0
}

// writeHeapProfile writes a heap profile (live objects) to
// $MEMGATE_BENCH_MEMPROFILE-name.pprof when that variable is set, for
// `go tool pprof -sample_index=inuse_space`.
func writeHeapProfile(b *testing.B, name string) {
	prefix := os.Getenv("MEMGATE_BENCH_MEMPROFILE")
	if prefix == "" {
		return
	}
	runtime.GC()
	f, err := os.Create(prefix + "-" + name + ".pprof")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// benchHNSWConfig is the default configuration, except that the 1M graph
// is built with a narrower beam (64 instead of 200) so that it builds in
// minutes on a shared machine; searches use the default beam.
func benchHNSWConfig(n int) vector.HNSWConfig {
	if n >= 1_000_000 {
		return vector.HNSWConfig{EfConstruction: 64}
	}
	return vector.HNSWConfig{}
}
