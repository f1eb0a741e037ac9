package knowledge_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/memgate/memgate/internal/knowledge"
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
