package files_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/files"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// BenchmarkFiles10k measures file write (create) and read p95 on SQLite
// with 10,000 files in the workspace, as the operator with rate limits
// off:
//
//	go test ./internal/files -run '^$' -bench Files10k -benchtime 1x -count 3
func BenchmarkFiles10k(b *testing.B) {
	const seed, ops = 10000, 500
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	pol := gate.Default()
	pol.RateLimit.Operator = gate.Bucket{}
	e := newEnvPolicy(b, st, pol)
	op := e.who["op"]
	content := func(i int) string {
		return fmt.Sprintf("# Notes %d\n\n- the build for service %d runs on runner pool %d\n- owner team %d\n", i, i, i%17, i%29)
	}
	for i := range seed {
		if _, err := e.files.Create(ctx, op, files.CreateRequest{Path: fmt.Sprintf("/memories/seed/%03d/%d.md", i%100, i), Content: content(i)}); err != nil {
			b.Fatal(err)
		}
	}
	p95 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)*95/100].Microseconds()) / 1000
	}
	b.ResetTimer()
	for n := range b.N {
		writes := make([]time.Duration, 0, ops)
		reads := make([]time.Duration, 0, ops)
		for i := range ops {
			t0 := time.Now()
			if _, err := e.files.Create(ctx, op, files.CreateRequest{Path: fmt.Sprintf("/memories/bench/%d/%d.md", n, i), Content: content(seed + i)}); err != nil {
				b.Fatal(err)
			}
			writes = append(writes, time.Since(t0))
			t0 = time.Now()
			if _, err := e.files.Read(ctx, op, memory.Scope{}, fmt.Sprintf("/memories/seed/%03d/%d.md", (i*37)%100, (i*7919)%seed/100*100+(i*37)%100)); err != nil {
				b.Fatal(err)
			}
			reads = append(reads, time.Since(t0))
		}
		b.ReportMetric(p95(writes), "write-p95-ms")
		b.ReportMetric(p95(reads), "read-p95-ms")
	}
}
