//go:build unix

package contextpack_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/contextpack"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// BenchmarkAssemble times context assembly (default request: 2000
// tokens, default bounds) over a data directory of real conversation
// turns, such as the 100,000 records of
//
//	memgate bench latency --records 100000 --data-dir DIR
//
// with the built-in encoder, named by MEMGATE_BENCH_CONTEXT_DIR. Nine
// queries in ten are scoped to one project, as agents ask. It reports
// p50 and p95 of one assembly.
func BenchmarkAssemble(b *testing.B) {
	dir := os.Getenv("MEMGATE_BENCH_CONTEXT_DIR")
	if dir == "" {
		b.Skip("set MEMGATE_BENCH_CONTEXT_DIR to a data directory built by memgate bench latency --data-dir")
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "memgate.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	enc, err := embed.BuiltinUSELite()
	if err != nil {
		b.Fatal(err)
	}
	ix := retrieve.New(retrieve.Options{Embedder: enc})
	if _, err := ix.Load(ctx, st); err != nil {
		b.Fatal(err)
	}
	svc := core.New(core.Options{Store: st, Policy: gate.Default(), Index: ix})
	// The operator of the directory's workspace: it may read every record
	// but system ones, through the same access check as anyone.
	op := memory.Principal{ID: "bench-operator", Name: "bench", Kind: memory.KindOperator, Workspace: memory.DefaultWorkspace}

	page, err := svc.List(ctx, op, core.ListRequest{Limit: 300})
	if err != nil || len(page.Records) == 0 {
		b.Fatalf("no records to draw queries from: %v", err)
	}
	var reqs []contextpack.Request
	for i, r := range page.Records {
		f := strings.Fields(r.Content)
		req := contextpack.Request{Query: strings.Join(f[:min(len(f), 8)], " ")}
		if req.Query == "" {
			continue
		}
		if i%10 != 0 {
			req.Scope = memory.Scope{AppID: bench.AppID, ProjectID: r.Scope.ProjectID}
		}
		reqs = append(reqs, req)
	}
	asm := contextpack.New(svc, nil)
	for _, req := range reqs[:20] { // warm up
		if _, err := asm.Assemble(ctx, op, req); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		req := reqs[i%len(reqs)]
		i++
		t := time.Now()
		env, err := asm.Assemble(ctx, op, req)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
		if env.Tokens > env.BudgetTokens {
			b.Fatalf("over budget: %d", env.Tokens)
		}
	}
	cpu := cpuTime() - cpu0
	slices.Sort(lat)
	pct := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	// CPU time per assembly (the process's, GC included) says what the
	// work costs on a machine shared with other jobs, where wall-clock
	// percentiles mostly measure waiting for a core.
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
