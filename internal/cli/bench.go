package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/retrieve"
)

// runBench runs a retrieval benchmark: `memgate bench locomo|longmemeval
// --data FILE`. Unless --data-dir is given it works in a fresh temporary
// data directory, removed afterwards, so it never touches the user's data.
func runBench(env Env, args []string) error {
	start := time.Now()
	fs, cfg := flags(env, "bench", false)
	var (
		data, signals, report string
		kmax, limit, workers  int
		ingestWorkers         int
		jsonOnly              bool
	)
	fs.StringVar(&data, "data", "", "benchmark file (LoCoMo or LongMemEval JSON), required")
	fs.StringVar(&signals, "signals", "", "comma-separated signals to use: lexical,dense,graph (default all available)")
	fs.IntVar(&kmax, "k-max", 50, "results asked per question (1-100)")
	fs.IntVar(&limit, "limit", 0, "only the first N conversations or instances (0: all)")
	fs.IntVar(&workers, "workers", 0, "concurrent questions (default GOMAXPROCS)")
	fs.IntVar(&ingestWorkers, "ingest-workers", 1, "conversations ingested concurrently")
	fs.BoolVar(&jsonOnly, "json-only", false, "print only the JSON summary line")
	weightDense := fs.Float64("weight-dense", -1, "fusion weight of the dense signal (default: the search default)")
	weightLexical := fs.Float64("weight-lexical", -1, "fusion weight of the lexical signal")
	contextSpread := fs.Float64("context", -1, "score fraction spread to neighbouring turns (default: the search default)")
	feedback := fs.Float64("feedback", -1, "fusion weight of pseudo-relevance feedback (default: the search default)")
	fs.StringVar(&report, "report", "", "write per-question results as JSON lines to this file")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: memgate bench locomo|longmemeval --data FILE [flags]\n\nflags:\n")
		fs.PrintDefaults()
	}
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usagef("bench: unexpected argument %q", fs.Arg(0))
	}
	if name != bench.LoCoMo && name != bench.LongMemEval {
		return usagef("bench: name a benchmark: memgate bench locomo|longmemeval --data FILE")
	}
	if data == "" {
		return usagef("bench: --data FILE is required")
	}
	if kmax < 1 || kmax > core.MaxK {
		return usagef("bench: --k-max must be between 1 and %d", core.MaxK)
	}
	if limit < 0 {
		return usagef("bench: --limit must not be negative")
	}
	var sigs []string
	for s := range strings.SplitSeq(signals, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if s != retrieve.SignalLexical && s != retrieve.SignalDense && s != retrieve.SignalGraph {
			return usagef("bench: --signals must be among lexical, dense, graph")
		}
		sigs = append(sigs, s)
	}
	if len(sigs) == 1 && sigs[0] == retrieve.SignalDense && cfg.Embedder == "none" {
		return usagef("bench: --signals dense needs an embedder (--embedder local --embedder-path FILE)")
	}

	// The data directory: the user's only when named on the command line.
	dirGiven := false
	fs.Visit(func(f *flag.Flag) { dirGiven = dirGiven || f.Name == "data-dir" })
	openEnv := env
	if !dirGiven {
		tmp, err := os.MkdirTemp("", "memgate-bench-")
		if err != nil {
			return fmt.Errorf("bench: temporary data directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		cfg.DataDir = tmp
		openEnv.Stderr = io.Discard // the throwaway operator token
	}

	f, err := os.Open(data)
	if err != nil {
		return usagef("bench: %v", err)
	}
	var ds *bench.Dataset
	if name == bench.LoCoMo {
		ds, err = bench.LoadLoCoMo(f)
	} else {
		ds, err = bench.LoadLongMemEval(f)
	}
	f.Close()
	if err != nil {
		return usagef("%v", err)
	}

	// Interrupting a long run still removes the temporary data directory.
	ctx := env.Ctx
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
	}
	a, err := openWith(ctx, openEnv, cfg, nil, nil, true)
	if err != nil {
		return err
	}
	defer a.Close()
	embedder := "none"
	if emb := a.index.Embedder(); emb != nil {
		embedder = emb.Model()
	}
	var progress io.Writer
	if !jsonOnly {
		progress = env.Stderr
	}
	var weights map[string]float64
	for sig, w := range map[string]float64{"dense": *weightDense, "lexical": *weightLexical} {
		if w >= 0 {
			if weights == nil {
				weights = map[string]float64{}
			}
			weights[sig] = w
		}
	}
	var fb *float64
	if *feedback >= 0 {
		fb = feedback
	}
	var ctxSpread *float64
	if *contextSpread >= 0 {
		ctxSpread = contextSpread
	}
	res, err := bench.Run(ctx, a.svc, ds, bench.Options{
		Weights: weights, Context: ctxSpread, Feedback: fb,
		Principal: a.operator(), KMax: kmax, Signals: sigs, Limit: limit, Workers: workers,
		IngestWorkers: ingestWorkers, Embed: embedder != "none", Progress: progress,
	})
	if err != nil {
		return err
	}
	if report != "" {
		rf, err := os.Create(report)
		if err != nil {
			return fmt.Errorf("bench: report: %w", err)
		}
		if err := bench.WriteReport(rf, res); err != nil {
			rf.Close()
			return fmt.Errorf("bench: report: %w", err)
		}
		if err := rf.Close(); err != nil {
			return fmt.Errorf("bench: report: %w", err)
		}
	}
	sum := bench.Summarize(ds, res)
	return bench.Render(env.Stdout, sum, res, bench.RenderOptions{Data: data, Embedder: embedder,
		Wall: time.Since(start), JSONOnly: jsonOnly})
}
