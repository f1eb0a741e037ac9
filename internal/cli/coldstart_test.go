package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkColdStart opens an existing data directory the way every
// command that searches does (the index restored from its snapshot, or
// rebuilt from the database and then saved as a snapshot for the next
// iteration) and reports the time to open, and the resident set and live
// heap once open. It needs MEMGATE_BENCH_DATADIR, e.g. a directory kept by
// `memgate bench latency --data-dir DIR --keep-snapshot`; the embedder and
// vector index come from the usual environment variables:
//
//	MEMGATE_BENCH_DATADIR=/tmp/lat-1m MEMGATE_EMBEDDER=local MEMGATE_EMBEDDER_PATH=... \
//	  MEMGATE_VECTOR_INDEX=hnsw go test -run '^$' -bench ColdStart -benchtime 3x ./internal/cli/
//
// With MEMGATE_BENCH_RESAVE=1 the first iteration also saves the snapshot
// anew, in this build's format, for the iterations after it.
func BenchmarkColdStart(b *testing.B) {
	dir := os.Getenv("MEMGATE_BENCH_DATADIR")
	if dir == "" {
		b.Skip("set MEMGATE_BENCH_DATADIR to a data directory")
	}
	env := Env{Stdin: strings.NewReader(""), Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Ctx: context.Background()}
	fs, cfg := flags(env, "bench", false)
	if err := parse(env, fs, cfg, []string{"--data-dir", dir}); err != nil {
		b.Fatal(err)
	}
	var took, rss, heap []float64
	restored := 0
	for b.Loop() {
		b.StopTimer()
		debug.SetGCPercent(100) // as in a fresh process: openWith lowers it
		runtime.GC()
		debug.FreeOSMemory()
		b.StartTimer()
		lh := &loadTook{}
		start := time.Now()
		a, err := openWith(env.Ctx, env, cfg, slog.New(lh), nil, true)
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		b.StopTimer()
		took = append(took, d.Seconds())
		rss = append(rss, statusMiB("VmRSS"))
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heap = append(heap, float64(ms.HeapAlloc)/(1<<20))
		if lh.restored {
			restored++
		}
		if !lh.restored || (len(took) == 1 && os.Getenv("MEMGATE_BENCH_RESAVE") == "1") {
			if err := a.index.SaveSnapshot(indexSnapshot(cfg)); err != nil {
				b.Fatal(err)
			}
		}
		st := a.index.Stats()
		b.Logf("open %.2fs (index %.2fs, restored %v): %d docs, %d vectors (%s); rss %.0f MiB, heap %.0f MiB",
			d.Seconds(), lh.took.Seconds(), lh.restored, st.Docs, st.Vectors, st.VectorIndex, rss[len(rss)-1], heap[len(heap)-1])
		if err := a.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(med(took), "open-s")
	b.ReportMetric(med(rss), "rss-MiB")
	b.ReportMetric(med(heap), "heap-MiB")
	b.ReportMetric(float64(restored), "restores")
}

// statusMiB reads a kB field of /proc/self/status in MiB.
func statusMiB(field string) float64 {
	p, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(p), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			var kb float64
			fmt.Sscan(v, &kb)
			return kb / 1024
		}
	}
	return 0
}
