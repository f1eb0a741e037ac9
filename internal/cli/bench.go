package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/config"

	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/retrieve"
)

// benchSubcommands are the benchmarks `memgate bench NAME` runs with
// flags of their own; the retrieval benchmarks (locomo, longmemeval) are
// runBench's.
var benchSubcommands = map[string]func(Env, []string) error{
	bench.Latency: runBenchLatency,
	"gateway":     runBenchGateway,
	"backup":      runBenchBackup,
	"writes":      runBenchWrites,
	"visibility":  runBenchVisibility,
	"search":      runBenchSearch,
	"code":        runBenchCode,
}

// retrievalBenchFlags are the flags of `memgate bench locomo|longmemeval`.
// A negative weight or boost means "the search default".
type retrievalBenchFlags struct {
	data, signals, report, features, cpuProfile string
	kmax, limit, workers, ingestWorkers         int
	jsonOnly, reuse                             bool
	weightDense, weightLexical, weightKeys      float64
	contextSpread, feedback, speaker, session   float64
	ranker                                      string
	opening                                     float64
	timeBoost                                   float64
	weightPhrases                               float64
}

func (bf *retrievalBenchFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&bf.data, "data", "", "benchmark file (LoCoMo or LongMemEval JSON), required")
	fs.BoolVar(&bf.reuse, "reuse", false, "with --data-dir: skip ingestion and ask the questions of the store an earlier run with the same --data ingested there")
	fs.StringVar(&bf.signals, "signals", "", "comma-separated signals to use: lexical,dense,graph,keys (default all available)")
	fs.IntVar(&bf.kmax, "k-max", 50, "results asked per question (1-100)")
	fs.IntVar(&bf.limit, "limit", 0, "only the first N conversations or instances (0: all)")
	fs.IntVar(&bf.workers, "workers", 0, "concurrent questions (default GOMAXPROCS)")
	fs.IntVar(&bf.ingestWorkers, "ingest-workers", 1, "conversations ingested concurrently")
	fs.BoolVar(&bf.jsonOnly, "json-only", false, "print only the JSON summary line")
	fs.Float64Var(&bf.weightDense, "weight-dense", -1, "fusion weight of the dense signal (default: the search default)")
	fs.Float64Var(&bf.weightLexical, "weight-lexical", -1, "fusion weight of the lexical signal")
	fs.Float64Var(&bf.weightKeys, "weight-keys", -1, "fusion weight of the derived category keys of turns (0 disables)")
	fs.Float64Var(&bf.weightPhrases, "weight-phrases", -1, "fusion weight of the keyphrase keys of turns the question shares (0 disables)")
	fs.Float64Var(&bf.contextSpread, "context", -1, "score fraction spread to neighbouring turns (default: the search default)")
	fs.Float64Var(&bf.feedback, "feedback", -1, "fusion weight of pseudo-relevance feedback (default: the search default)")
	fs.Float64Var(&bf.speaker, "speaker", -1, "boost of the turns of the speaker a question points at (default: the search default)")
	fs.Float64Var(&bf.session, "session", -1, "boost of the turns of sessions matching the question as a whole (default: the search default)")
	fs.Float64Var(&bf.opening, "opening", -1, "boost of the user's opening turn of each session for how-many / all-the questions (default: the search default)")
	fs.StringVar(&bf.ranker, "ranker", "", "on or off: re-rank with the learned ranker (default: the search default)")
	fs.Float64Var(&bf.timeBoost, "time", -1, "boost of the turns whose date falls in a time span the question names (default: the search default)")
	fs.StringVar(&bf.report, "report", "", "write per-question results as JSON lines to this file")
	fs.StringVar(&bf.features, "features", "", "write every hit's signals and evidence per question as JSON lines to this file (to train the ranker: internal/retrieve/rankgen)")
	fs.StringVar(&bf.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (ingestion and questions) to this file")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: memgate bench locomo|longmemeval --data FILE [flags]\n"+
			"       memgate bench latency --records N [flags]   (see memgate bench latency -h)\n"+
			"       memgate bench gateway|writes|visibility|search [flags]   (see memgate bench writes -h)\n\nflags:\n")
		fs.PrintDefaults()
	}
}

// check validates the flags of benchmark name and returns the signals
// asked for (nil: all available).
func (bf *retrievalBenchFlags) check(name string, cfg *config.Config) ([]string, error) {
	if name == bench.Latency {
		return nil, usagef("bench: name latency first: memgate bench latency --records N [flags]")
	}
	if name != bench.LoCoMo && name != bench.LongMemEval {
		return nil, usagef("bench: name a benchmark: memgate bench locomo|longmemeval --data FILE, or memgate bench latency --records N")
	}
	if bf.data == "" {
		return nil, usagef("bench: --data FILE is required")
	}
	if bf.kmax < 1 || bf.kmax > core.MaxK {
		return nil, usagef("bench: --k-max must be between 1 and %d", core.MaxK)
	}
	if bf.limit < 0 {
		return nil, usagef("bench: --limit must not be negative")
	}
	if bf.ranker != "" && bf.ranker != "on" && bf.ranker != "off" {
		return nil, usagef("bench: --ranker must be on or off")
	}
	var sigs []string
	for s := range strings.SplitSeq(bf.signals, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if s != retrieve.SignalLexical && s != retrieve.SignalDense && s != retrieve.SignalGraph && s != retrieve.SignalKeys {
			return nil, usagef("bench: --signals must be among lexical, dense, graph, keys")
		}
		sigs = append(sigs, s)
	}
	if len(sigs) == 1 && sigs[0] == retrieve.SignalDense && cfg.Embedder == "none" {
		return nil, usagef("bench: --signals dense needs an embedder (--embedder local --embedder-path FILE)")
	}
	return sigs, nil
}

// tuning is the search tuning the flags set: the weights and boosts given
// (not negative) go into o, the rest stay the search defaults.
func (bf *retrievalBenchFlags) tuning(o *bench.Options) {
	for sig, w := range map[string]float64{"dense": bf.weightDense, "lexical": bf.weightLexical, "keys": bf.weightKeys, "phrases": bf.weightPhrases} {
		if w >= 0 {
			if o.Weights == nil {
				o.Weights = map[string]float64{}
			}
			o.Weights[sig] = w
		}
	}
	given := func(v *float64) *float64 {
		if *v >= 0 {
			return v
		}
		return nil
	}
	o.Feedback, o.Speaker, o.Session = given(&bf.feedback), given(&bf.speaker), given(&bf.session)
	o.Time, o.Context, o.Opening = given(&bf.timeBoost), given(&bf.contextSpread), given(&bf.opening)
	switch bf.ranker {
	case "on":
		o.Ranker = new(true)
	case "off":
		o.Ranker = new(false)
	}
}

// runBench runs a retrieval benchmark: `memgate bench locomo|longmemeval
// --data FILE`, or the latency benchmark: `memgate bench latency`. Unless
// --data-dir is given it works in a fresh temporary data directory,
// removed afterwards, so it never touches the user's data.
func runBench(env Env, args []string) error {
	if len(args) > 0 {
		if sub, ok := benchSubcommands[args[0]]; ok {
			return sub(env, args[1:])
		}
	}
	start := time.Now()
	fs, cfg := flags(env, "bench", false)
	var bf retrievalBenchFlags
	bf.define(fs)
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
	sigs, err := bf.check(name, cfg)
	if err != nil {
		return err
	}

	// The data directory: the user's only when named on the command line.
	dirGiven := false
	fs.Visit(func(f *flag.Flag) { dirGiven = dirGiven || f.Name == "data-dir" })
	cfg.DatabaseURL = "" // benchmarks run on the embedded database, never on a configured one
	stateFile, cleanup, err := retrievalDataDir(cfg, name, bf.reuse, dirGiven)
	if err != nil {
		return err
	}
	openEnv := env
	if cleanup != nil {
		defer cleanup()
		openEnv.Stderr = io.Discard // the throwaway operator token
	}
	if err := unlimitedUserPolicy(cfg); err != nil {
		return err
	}
	ds, err := loadRetrievalDataset(name, bf.data)
	if err != nil {
		return err
	}

	// Interrupting a long run still removes the temporary data directory.
	ctx, stop := env.runContext()
	defer stop()
	a, err := openWith(ctx, openEnv, cfg, nil, nil, true)
	if err != nil {
		return err
	}
	defer a.Close()
	embedder := "none"
	if emb := a.index.Embedder(); emb != nil {
		embedder = emb.Model()
	}
	stopProfile, err := bench.StartCPUProfile(bf.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	gw, stopGW, err := bench.StartGateway(ctx, a.svc, cfg.Workspace, true)
	if err != nil {
		return err
	}
	defer stopGW()
	o := bench.Options{Gateway: gw, Principal: a.operator(), KMax: bf.kmax, Signals: sigs, Limit: bf.limit, Workers: bf.workers,
		IngestWorkers: bf.ingestWorkers, Embed: embedder != "none",
		StateFile: stateFile, Reuse: bf.reuse, Evidence: bf.features != "",
	}
	if !bf.jsonOnly {
		o.Progress = env.Stderr
	}
	bf.tuning(&o)
	res, err := bench.Run(ctx, a.svc, ds, o)
	if err != nil {
		return err
	}
	if err := writeBenchFile(bf.features, "features", res, bench.WriteFeatures); err != nil {
		return err
	}
	if err := writeBenchFile(bf.report, "report", res, bench.WriteReport); err != nil {
		return err
	}
	sum := bench.Summarize(ds, res)
	return bench.Render(env.Stdout, sum, res, bench.RenderOptions{Data: bf.data, Embedder: embedder,
		Wall: time.Since(start), JSONOnly: bf.jsonOnly, Command: "memgate bench " + strings.Join(args, " ")})
}

// retrievalDataDir is the data directory of a retrieval benchmark: the
// one named, where the ingested turns are kept in stateFile for --reuse,
// else a temporary one, which cleanup removes.
func retrievalDataDir(cfg *config.Config, name string, reuse, dirGiven bool) (stateFile string, cleanup func(), err error) {
	if dirGiven {
		return filepath.Join(cfg.DataDir, "bench-"+name+"-turns.json"), nil, nil
	}
	if reuse {
		return "", nil, usagef("bench: --reuse needs --data-dir, the directory of an earlier run")
	}
	cleanup, err = benchTempDir(cfg, "")
	return "", cleanup, err
}

// loadRetrievalDataset reads the LoCoMo or LongMemEval file at path.
func loadRetrievalDataset(name, path string) (*bench.Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("bench: %v", err)
	}
	defer f.Close()
	var ds *bench.Dataset
	if name == bench.LoCoMo {
		ds, err = bench.LoadLoCoMo(f)
	} else {
		ds, err = bench.LoadLongMemEval(f)
	}
	if err != nil {
		return nil, usagef("%v", err)
	}
	return ds, nil
}

// writeBenchFile writes res to the file at path with write, when a path
// is given; what names the flag in errors.
func writeBenchFile[R any](path, what string, res R, write func(io.Writer, R) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %s: %w", what, err)
	}
	if err := write(f, res); err != nil {
		f.Close()
		return fmt.Errorf("bench: %s: %w", what, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: %s: %w", what, err)
	}
	return nil
}

// defaultLatencyData is the corpus of `memgate bench latency` when --data
// is not given: the development copy of LongMemEval beside the project.
const defaultLatencyData = "../shared/bench/longmemeval_s-dev60.json"

// latencyBenchFlags are the flags of `memgate bench latency`.
type latencyBenchFlags struct {
	data, profileDir, memProfileDir   string
	records, queries, writers, warmup int
	k, rounds                         int
	jsonOnly, keepSnapshot, reuse     bool
	pgURL                             string
}

func (lf *latencyBenchFlags) define(fs *flag.FlagSet) {
	fs.IntVar(&lf.records, "records", 10_000, "records to write (1 to 10,000,000)")
	fs.StringVar(&lf.data, "data", "", "LongMemEval JSON file whose turns make the records (default "+defaultLatencyData+")")
	fs.IntVar(&lf.queries, "queries", 300, "timed queries per search mode")
	fs.IntVar(&lf.warmup, "warmup", 20, "untimed warm-up queries per search mode")
	fs.IntVar(&lf.rounds, "rounds", 3, "times the timed queries are repeated; figures are medians over rounds")
	fs.IntVar(&lf.k, "k", 10, "results asked per search (1-100)")
	fs.IntVar(&lf.writers, "writers", 3, "concurrent writers (1-16)")
	fs.StringVar(&lf.profileDir, "profile-dir", "", "write CPU profiles of the phases (write, embed, search, load .pprof) to this directory")
	fs.StringVar(&lf.memProfileDir, "memprofile", "", "write heap profiles (after writing and embedding, and after each cold start) to this directory")
	fs.BoolVar(&lf.keepSnapshot, "keep-snapshot", false, "with --data-dir: leave the HNSW index snapshot of the last cold start in the data directory")
	fs.BoolVar(&lf.reuse, "reuse", false, "with --data-dir: skip writing, the directory holds the records of an earlier run with the same --records and --data")
	fs.BoolVar(&lf.jsonOnly, "json-only", false, "print only the JSON summary line (and no progress)")
	fs.StringVar(&lf.pgURL, "postgres", "", "run on this PostgreSQL database (empty, or with --reuse the one an earlier run filled) instead of the embedded one; the data directory then holds only the index snapshot")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: memgate bench latency --records N [--data FILE] [--queries Q] [--embedder local --embedder-path FILE] [flags]\n\n"+
			"Writes N records made from real conversation turns through the write path, embeds them, times\n"+
			"searches (lexical, dense, hybrid; exact and HNSW vector index) and a cold start. Works in a fresh\n"+
			"temporary data directory unless --data-dir names a new or empty one.\n\nflags:\n")
		fs.PrintDefaults()
	}
}

func (lf *latencyBenchFlags) check() error {
	switch {
	case lf.records < 1 || lf.records > 10_000_000:
		return usagef("bench latency: --records must be between 1 and 10000000")
	case lf.queries < 1 || lf.queries > 100_000:
		return usagef("bench latency: --queries must be between 1 and 100000")
	case lf.warmup < 0:
		return usagef("bench latency: --warmup must not be negative")
	case lf.rounds < 1 || lf.rounds > 100:
		return usagef("bench latency: --rounds must be between 1 and 100")
	case lf.k < 1 || lf.k > core.MaxK:
		return usagef("bench latency: --k must be between 1 and %d", core.MaxK)
	case lf.writers < 1 || lf.writers > 16:
		return usagef("bench latency: --writers must be between 1 and 16")
	}
	return nil
}

// latencyDataDir checks or sets up the data directory of a latency run:
// a named one must be new or empty (or, with --reuse, hold an earlier
// run's database); else a temporary one, which cleanup removes.
func latencyDataDir(cfg *config.Config, lf *latencyBenchFlags, dirGiven bool) (cleanup func(), err error) {
	if lf.reuse && !dirGiven && lf.pgURL == "" {
		return nil, usagef("bench latency: --reuse needs --data-dir, the directory of an earlier run")
	}
	if !dirGiven {
		return benchTempDir(cfg, "latency")
	}
	if lf.pgURL == "" {
		_, err := os.Stat(cfg.DBPath())
		if err == nil && !lf.reuse {
			return nil, usagef("bench latency: %s already holds a database; name a new or empty --data-dir", cfg.DataDir)
		}
		if err != nil && lf.reuse {
			return nil, usagef("bench latency: --reuse: %s holds no database", cfg.DataDir)
		}
	}
	return nil, nil
}

// latencyOpener opens the app on cfg the way a latency run's cold start
// does, in vector mode mode (empty: cfg's), noting how long loading the
// index took.
func latencyOpener(openEnv Env, cfg *config.Config) func(context.Context, retrieve.VectorMode) (*bench.Opened, error) {
	return func(ctx context.Context, mode retrieve.VectorMode) (*bench.Opened, error) {
		c := *cfg
		if mode != "" {
			c.VectorIndex = string(mode)
		}
		lh := &loadTook{}
		a, err := openWith(ctx, openEnv, &c, slog.New(lh), nil, true)
		if err != nil {
			return nil, err
		}
		return &bench.Opened{Service: a.svc, Index: a.index, Close: a.Close, IndexLoad: lh.took, Restored: lh.restored}, nil
	}
}

// runBenchLatency runs `memgate bench latency`: N records made from the
// turns of a LongMemEval file written through the write path, embedded,
// searched through the search path with the exact and the approximate
// vector index, then a cold start.
func runBenchLatency(env Env, args []string) error {
	start := time.Now()
	fs, cfg := flags(env, "bench latency", false)
	var lf latencyBenchFlags
	lf.define(fs)
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("bench latency: unexpected argument %q", fs.Arg(0))
	}
	if err := lf.check(); err != nil {
		return err
	}
	if lf.data == "" {
		lf.data = defaultLatencyData
		if _, err := os.Stat(lf.data); err != nil {
			return usagef("bench latency: no --data given and the default %s is not there: pass --data FILE, a LongMemEval JSON file", lf.data)
		}
	}
	f, err := os.Open(lf.data)
	if err != nil {
		return usagef("bench latency: %v", err)
	}
	ds, err := bench.LoadLongMemEval(f)
	f.Close()
	if err != nil {
		return usagef("%v", err)
	}

	// The data directory: a new or empty one when named, else temporary.
	dirGiven := false
	fs.Visit(func(f *flag.Flag) { dirGiven = dirGiven || f.Name == "data-dir" })
	// Benchmarks never run on a configured database: PostgreSQL only when
	// named for the bench itself.
	cfg.DatabaseURL = lf.pgURL
	openEnv := env
	cleanup, err := latencyDataDir(cfg, &lf, dirGiven)
	if err != nil {
		return err
	}
	if cleanup != nil {
		defer cleanup()
		openEnv.Stderr = io.Discard // the throwaway operator token
	}
	for _, dir := range []string{lf.profileDir, lf.memProfileDir} {
		if dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("bench: profile directory: %w", err)
			}
		}
	}

	ctx, stop := env.runContext()
	defer stop()
	o := bench.LatencyOptions{Records: lf.records, Queries: lf.queries, Warmup: lf.warmup, Rounds: lf.rounds, K: lf.k, Writers: lf.writers,
		Principal: core.LocalOperator(cfg.Workspace), Open: latencyOpener(openEnv, cfg), DataDir: cfg.DataDir,
		ProfileDir: lf.profileDir, MemProfileDir: lf.memProfileDir, KeepSnapshot: lf.keepSnapshot && dirGiven, Reuse: lf.reuse,
		// The snapshot serve saves, where openWith restores it from.
		Snapshot: func(ix *retrieve.Engine) (string, error) {
			path := indexSnapshot(cfg)
			return path, ix.SaveSnapshot(path)
		}}
	if lf.warmup == 0 {
		o.Warmup = -1 // none
	}
	if !lf.jsonOnly {
		o.Progress, o.ProgressLines = env.Stderr, !isTerminal(env.Stderr)
	}
	res, err := bench.RunLatency(ctx, ds, o)
	if err != nil {
		return err
	}
	res.Wall = time.Since(start)
	return bench.RenderLatency(env.Stdout, res, bench.LatencyRender{Data: lf.data, JSONOnly: lf.jsonOnly,
		Command: "memgate bench latency " + strings.Join(args, " ")})
}

// isTerminal reports whether w is a character device (a terminal), where
// a progress bar can redraw itself in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// loadTook is a log handler that keeps only the "took" of openWith's
// "search index loaded" or "... restored from snapshot" line: how long
// loading the index took, and whether it came from the snapshot.
type loadTook struct {
	took     time.Duration
	restored bool
}

func (h *loadTook) Enabled(context.Context, slog.Level) bool { return true }
func (h *loadTook) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *loadTook) WithGroup(string) slog.Handler            { return h }
func (h *loadTook) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "search index loaded" || r.Message == "search index restored from snapshot" {
		h.restored = r.Message != "search index loaded"
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "took" {
				h.took, _ = time.ParseDuration(a.Value.String())
			}
			return true
		})
	}
	return nil
}

// runBenchGateway runs `memgate bench gateway`: finished turns sent through
// /memories/add and /memories/flush over loopback HTTP, then extraction of
// everything queued, in a fresh temporary data directory.
func runBenchGateway(env Env, args []string) error {
	start := time.Now()
	fs, cfg := flags(env, "bench gateway", false)
	var (
		data            string
		turns, perFlush int
		jsonOnly        bool
	)
	fs.StringVar(&data, "data", "", "LongMemEval JSON file whose turns are sent (default "+defaultLatencyData+")")
	fs.IntVar(&turns, "turns", 2000, "finished turns to send (adds of two messages)")
	fs.IntVar(&perFlush, "turns-per-flush", 10, "turns of a session between flushes")
	prefill := fs.Int("prefill", 0, "turns sent (and extracted) untimed first, so the timed turns meet a store of that size")
	gwProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed turns (not the prefill) to this file")
	memProfile := fs.String("memprofile", "", "write a heap profile after the timed turns to this file")
	fs.BoolVar(&jsonOnly, "json-only", false, "print only the JSON summary line (and no progress)")
	reuse := fs.Bool("reuse", false, "with --data-dir: run the timed turns on a copy of the store an earlier run prefilled there")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("bench gateway: unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if *reuse && !given["data-dir"] {
		return usagef("bench gateway: --reuse needs --data-dir, the directory of an earlier run")
	}
	if turns < 1 || turns > 1_000_000 || perFlush < 1 || perFlush > 1000 || *prefill < 0 || *prefill > 10_000_000 {
		return usagef("bench gateway: --turns must be 1-1000000, --turns-per-flush 1-1000 and --prefill 0-10000000")
	}
	if data == "" {
		data = defaultLatencyData
	}
	ds, err := loadGatewayData(data)
	if err != nil {
		return err
	}
	cfg.DatabaseURL = "" // benchmarks run on the embedded database, never on a configured one
	ctx, stop := env.runContext()
	defer stop()
	var progress io.Writer
	if !jsonOnly {
		progress = env.Stderr
	}
	// With --data-dir the prefilled store is kept there (built by the
	// first run, reused by later ones) and the timed turns run on a copy.
	prefillNow, keptDir := *prefill, ""
	if given["data-dir"] {
		kept, policy := cfg.DataDir, cfg.PolicyFile
		want := gatewayStore{Prefill: *prefill, TurnsPerFlush: perFlush, TextOffset: turns, Data: filepath.Base(data)}
		s, err := keptGatewayStore(ctx, env, cfg, ds, want, *reuse, given, progress)
		if err != nil {
			return err
		}
		*prefill, perFlush, prefillNow = s.Prefill, s.TurnsPerFlush, 0
		cfg.PolicyFile = policy // not the kept store's
		keptDir = kept
	}
	cleanup, err := benchTempDir(cfg, "gateway")
	if err != nil {
		return err
	}
	defer cleanup()
	if keptDir != "" {
		if err := bench.CopyDir(ctx, keptDir, cfg.DataDir, progress); err != nil {
			return err
		}
	}
	a, gw, closeGW, err := openGatewayBench(ctx, env, cfg)
	if err != nil {
		return err
	}
	defer closeGW()
	if err := prefillGateway(ctx, a, gw, ds, prefillNow, perFlush, turns, progress); err != nil {
		return err
	}
	stopProfile, err := bench.StartCPUProfile(*gwProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	res, err := bench.RunGatewayBench(ctx, ds, gw, bench.GatewayBenchOptions{Turns: turns, TurnsPerSession: perFlush,
		Start: a.svc.RunJobs, Progress: progress, Offset: *prefill})
	if err != nil {
		return err
	}
	if *memProfile != "" {
		if err := bench.WriteHeapProfile(*memProfile); err != nil {
			return err
		}
	}
	if !jsonOnly {
		bench.PrintHeader(env.Stdout, "memgate bench gateway "+strings.Join(args, " "))
		if *prefill > 0 {
			fmt.Fprintf(env.Stdout, "store prefilled with %d turns through the gateway (untimed)\n", *prefill)
		}
	}
	res.Prefill = *prefill
	return bench.RenderGatewayBench(env.Stdout, res, time.Since(start), jsonOnly)
}

// unlimitedUserPolicy points a benchmark without a policy file at one that
// lifts the per-user rate limit: the benchmark's gateway user sends as fast
// as it can, and the default limit would measure the limiter.
func unlimitedUserPolicy(cfg *config.Config) error {
	if cfg.PolicyFile != "" {
		return nil
	}
	pf := filepath.Join(cfg.DataDir, "bench-policy.yaml")
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(pf, []byte("rate_limit:\n  user: {per_second: 0, burst: 0}\n"), 0o600); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	cfg.PolicyFile = pf
	return nil
}

// benchTempDir points cfg at a new temporary data directory for a bench
// run ("memgate-bench-<name>-…"); cleanup removes it with everything the
// run wrote.
func benchTempDir(cfg *config.Config, name string) (cleanup func(), err error) {
	prefix := "memgate-bench-"
	if name != "" {
		prefix += name + "-"
	}
	tmp, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, fmt.Errorf("bench: temporary data directory: %w", err)
	}
	cfg.DataDir = tmp
	return func() { os.RemoveAll(tmp) }, nil
}
