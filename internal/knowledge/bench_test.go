package knowledge_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
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
	"github.com/memgate/memgate/internal/vector"
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
	mode := retrieve.VectorMode(os.Getenv("MEMGATE_BENCH_VECTORS"))
	if mode == "" {
		mode = retrieve.VectorAuto
	}
	f := denseFixtureFor(b, db, mode)
	ctx, ix, enc, kn, op, corpus := b.Context(), f.ix, f.enc, f.kn, f.op, f.corpus
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
	b.ReportMetric(float64(f.records), "records")
	b.ReportMetric(float64(s.Vectors), "vectors")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
	b.ReportMetric(float64(embLat[len(embLat)/2].Microseconds())/1000, "embed-p50-ms")
	b.Logf("vector index %s, %d vectors, model %s; vectors indexed in %.1f s (%.1f s CPU)",
		s.VectorIndex, s.Vectors, s.Model, f.build.Seconds(), f.buildCPU.Seconds())
}

// denseFixture is BenchmarkSearchChunksDense's prepared engine; it is
// kept for the process, so -count runs (and the harness's first b.N=1
// call) reuse one vector index instead of building it each time.
type denseFixture struct {
	st              *sqlite.Store
	ix              *retrieve.Engine
	enc             embed.Embedder
	kn              *knowledge.Service
	op              memory.Principal
	corpus          knowledge.CodeCorpus
	records         int
	build, buildCPU time.Duration
}

var denseFixtures = map[string]*denseFixture{}

func denseFixtureFor(b *testing.B, db string, mode retrieve.VectorMode) *denseFixture {
	if f := denseFixtures[db+"|"+string(mode)]; f != nil {
		return f
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	enc, err := embed.BuiltinUSELite()
	if err != nil {
		b.Fatal(err)
	}
	ix := retrieve.New(retrieve.Options{Embedder: enc, Vectors: mode})
	stats, err := ix.Load(ctx, st)
	if err != nil {
		b.Fatal(err)
	}
	dim, terms := enc.Dim(), map[string][]float32{}
	type item struct {
		ws, id, sha string
		v           []float32
	}
	var items []item
	err = st.ScanRecords(ctx, func(ws string, r memory.Record) error {
		if r.Type == memory.Resource && r.InvalidatedAt == nil {
			items = append(items, item{ws, r.ID, r.ContentSHA256, standIn(r.Content, dim, terms)})
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	cpu0 := processCPU()
	start := time.Now()
	for _, it := range items {
		ix.SetVector(it.ws, it.id, it.sha, it.v)
	}
	f := &denseFixture{st: st, ix: ix, enc: enc, records: stats.Records,
		build: time.Since(start), buildCPU: processCPU() - cpu0}
	f.kn = knowledge.New(core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix}), knowledge.Options{})
	f.op = core.LocalOperator(memory.DefaultWorkspace)
	root := runtime.GOROOT()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		root = strings.TrimSpace(string(out))
	}
	f.corpus, err = knowledge.BuildCodeCorpus(filepath.Join(root, "src"))
	if err != nil || len(f.corpus.Queries) == 0 {
		b.Skip("no Go source tree")
	}
	denseFixtures[db+"|"+string(mode)] = f
	return f
}

// processCPU is the process's CPU time so far (user + system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// BenchmarkVectorRecall measures what auto mode's HNSW (the engine's
// default configuration) gives up against the exact index on real
// vectors: every vector of the built-in encoder stored in the database
// MEMGATE_BENCH_DB names (e.g. a `memgate bench code --data-dir D`
// corpus, its chunks embedded), and 300 questions (the standard library's
// doc-comment sentences) embedded by the encoder. It reports recall@10 of
// HNSW against the exact top 10 at search beam widths 64, 128 and 256,
// the HNSW build's wall and CPU seconds, and the vector search's p95 with
// each index and width. b.N is ignored (run it
// with -benchtime 1x).
func BenchmarkVectorRecall(b *testing.B) {
	db := os.Getenv("MEMGATE_BENCH_DB")
	if db == "" {
		b.Skip("MEMGATE_BENCH_DB is not set")
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	enc, err := embed.BuiltinUSELite()
	if err != nil {
		b.Fatal(err)
	}
	var vecs [][]float32
	err = st.ScanVectors(ctx, enc.Model(), func(_, _ string, v []float32) error {
		vecs = append(vecs, slices.Clone(v))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(vecs) < 1000 {
		b.Skipf("%d vectors of %s in the database", len(vecs), enc.Model())
	}
	root := runtime.GOROOT()
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		root = strings.TrimSpace(string(out))
	}
	corpus, err := knowledge.BuildCodeCorpus(filepath.Join(root, "src"))
	if err != nil || len(corpus.Queries) < 300 {
		b.Skip("no Go source tree")
	}
	var qs []string
	for i := range 300 {
		qs = append(qs, corpus.Queries[(i*7919)%len(corpus.Queries)].Query)
	}
	qv, err := enc.Embed(ctx, qs)
	if err != nil {
		b.Fatal(err)
	}
	exact := vector.NewExact(enc.Dim())
	for i, v := range vecs {
		exact.Add(uint32(i), v)
	}
	cpu0, start := processCPU(), time.Now()
	hnsw := vector.NewHNSW(enc.Dim(), vector.HNSWConfig{})
	for i, v := range vecs {
		hnsw.Add(uint32(i), v)
	}
	build, buildCPU := time.Since(start), processCPU()-cpu0
	b.ResetTimer()
	truth := make([][]vector.Hit, len(qv))
	var exLat []time.Duration
	for i, q := range qv {
		t0 := time.Now()
		truth[i] = exact.Search(q, 10, nil)
		exLat = append(exLat, time.Since(t0))
	}
	slices.Sort(exLat)
	b.ReportMetric(float64(len(vecs)), "vectors")
	b.ReportMetric(build.Seconds(), "build-s")
	b.ReportMetric(buildCPU.Seconds(), "build-cpu-s")
	b.ReportMetric(float64(exLat[len(exLat)*95/100].Microseconds())/1000, "exact-p95-ms")
	for _, ef := range []int{64, 128, 256} {
		hnsw.SetEfSearch(ef)
		var hit int
		var lat []time.Duration
		for i, q := range qv {
			t0 := time.Now()
			got := hnsw.Search(q, 10, nil)
			lat = append(lat, time.Since(t0))
			for _, h := range got {
				if slices.ContainsFunc(truth[i], func(w vector.Hit) bool { return w.Key == h.Key }) {
					hit++
				}
			}
		}
		slices.Sort(lat)
		b.ReportMetric(float64(hit)/float64(10*len(qv)), fmt.Sprintf("ef%d-recall@10", ef))
		b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, fmt.Sprintf("ef%d-p95-ms", ef))
	}
}
