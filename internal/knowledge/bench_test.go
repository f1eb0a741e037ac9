package knowledge_test

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/knowledge"
	"github.com/memgate/memgate/internal/lexical"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// BenchmarkIngestStdlibFiles ingests Go standard library files (before
// embedding: no embedder) through the gate into SQLite: b.N files.
func BenchmarkIngestStdlibFiles(b *testing.B) {
	root := runtime.GOROOT()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		root = strings.TrimSpace(string(out))
	}
	corpus, err := knowledge.BuildCodeCorpus(filepath.Join(root, "src"))
	if err != nil || len(corpus.Docs) == 0 {
		b.Skip("no Go source tree")
	}
	e := sqliteEnvB(b)
	p := e.who["op"]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := corpus.Docs[i%len(corpus.Docs)]
		d.URI += "#" + string(rune('a'+i/len(corpus.Docs)))
		if _, err := e.kn.Ingest(b.Context(), p, d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "files/s")
}

// BenchmarkSearchDataDir measures knowledge search latency over an
// existing database: MEMGATE_BENCH_DB names its memgate.db (e.g. a data
// directory after `memgate ingest $(go env GOROOT)/src`); the questions
// are the standard library's doc-comment sentences. It reports p50 and
// p95 (lexical: the database's vectors are not loaded).
func BenchmarkSearchDataDir(b *testing.B) {
	db := os.Getenv("MEMGATE_BENCH_DB")
	if db == "" {
		b.Skip("MEMGATE_BENCH_DB is not set")
	}
	ctx := b.Context()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ix := retrieve.New(retrieve.Options{})
	stats, err := ix.Load(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix})
	kn := knowledge.New(svc, knowledge.Options{})
	op := core.LocalOperator(memory.DefaultWorkspace)
	root := runtime.GOROOT()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		root = strings.TrimSpace(string(out))
	}
	corpus, err := knowledge.BuildCodeCorpus(filepath.Join(root, "src"))
	if err != nil || len(corpus.Queries) == 0 {
		b.Skip("no Go source tree")
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := corpus.Queries[(i*7919)%len(corpus.Queries)]
		start := time.Now()
		if _, err := kn.Search(ctx, op, knowledge.SearchRequest{Query: q.Query, K: 10}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(stats.Records), "records")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkSearchChunksDense measures knowledge search latency, hybrid,
// including the query's embedding by the built-in encoder, over the
// chunks of an existing database: MEMGATE_BENCH_DB names its memgate.db
// (after `MEMGATE_EMBEDDER=none memgate ingest $(go env GOROOT)/src`:
// 101,459 chunks). Chunks without a vector in the database get a
// stand-in: the normalised sum of fixed pseudo-random vectors of their
// terms (texts sharing terms are close), of the encoder's dimension, so
// the dense index holds every chunk without an hour of encoding; the
// query is embedded by the real encoder on every search. Questions: the
// standard library's doc-comment sentences, each asked once (b.N at most
// their number). MEMGATE_BENCH_VECTORS picks the vector index (auto,
// exact, hnsw). It reports p50, p95 and the query embedding's own p50.
func BenchmarkSearchChunksDense(b *testing.B) {
	db := os.Getenv("MEMGATE_BENCH_DB")
	if db == "" {
		b.Skip("MEMGATE_BENCH_DB is not set")
	}
	ctx := b.Context()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	enc, err := embed.BuiltinUSELite()
	if err != nil {
		b.Fatal(err)
	}
	mode := retrieve.VectorMode(os.Getenv("MEMGATE_BENCH_VECTORS"))
	if mode == "" {
		mode = retrieve.VectorAuto
	}
	ix := retrieve.New(retrieve.Options{Embedder: enc, Vectors: mode})
	stats, err := ix.Load(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	dim, terms := enc.Dim(), map[string][]float32{}
	err = st.ScanRecords(ctx, func(ws string, r memory.Record) error {
		if r.Type == memory.Resource && r.InvalidatedAt == nil {
			ix.SetVector(ws, r.ID, r.ContentSHA256, standIn(r.Content, dim, terms))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix})
	kn := knowledge.New(svc, knowledge.Options{})
	op := core.LocalOperator(memory.DefaultWorkspace)
	root := runtime.GOROOT()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		root = strings.TrimSpace(string(out))
	}
	corpus, err := knowledge.BuildCodeCorpus(filepath.Join(root, "src"))
	if err != nil || len(corpus.Queries) == 0 {
		b.Skip("no Go source tree")
	}
	if b.N > len(corpus.Queries) {
		b.Fatalf("at most %d questions (-benchtime %dx)", len(corpus.Queries), len(corpus.Queries))
	}
	var lat, embLat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := corpus.Queries[(i*7919)%len(corpus.Queries)]
		start := time.Now()
		res, err := kn.Search(ctx, op, knowledge.SearchRequest{Query: q.Query, K: 10})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		if !slices.Contains(res.Signals, retrieve.SignalDense) {
			b.Fatalf("signals %v: no dense search", res.Signals)
		}
	}
	b.StopTimer()
	for i := 0; i < min(b.N, 200); i++ {
		start := time.Now()
		if _, err := enc.Embed(ctx, []string{corpus.Queries[(i*7919+1)%len(corpus.Queries)].Query}); err != nil {
			b.Fatal(err)
		}
		embLat = append(embLat, time.Since(start))
	}
	slices.Sort(lat)
	slices.Sort(embLat)
	s := ix.Stats()
	b.ReportMetric(float64(stats.Records), "records")
	b.ReportMetric(float64(s.Vectors), "vectors")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(embLat[len(embLat)/2].Microseconds())/1000, "embed-p50-ms")
	b.Logf("vector index %s, %d vectors, model %s", s.VectorIndex, s.Vectors, s.Model)
}

// standIn is a chunk's stand-in vector: the normalised sum of fixed
// pseudo-random vectors of its terms.
func standIn(text string, dim int, terms map[string][]float32) []float32 {
	v := make([]float32, dim)
	for _, t := range lexical.Analyze(text, true) {
		tv, ok := terms[t]
		if !ok {
			var seed uint64 = 1469598103934665603
			for _, c := range []byte(t) {
				seed = (seed ^ uint64(c)) * 1099511628211
			}
			rng := rand.New(rand.NewPCG(seed, seed>>7))
			tv = make([]float32, dim)
			for i := range tv {
				tv[i] = float32(rng.NormFloat64())
			}
			terms[t] = tv
		}
		for i := range v {
			v[i] += tv[i]
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		s := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= s
		}
	}
	return v
}
