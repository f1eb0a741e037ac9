package knowledge_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/knowledge"
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
