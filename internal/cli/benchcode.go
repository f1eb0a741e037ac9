package cli

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/memgate/memgate/internal/bench"
	"github.com/memgate/memgate/internal/knowledge"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
)

// codeBenchSummary is the JSON summary of `memgate bench code`.
type codeBenchSummary struct {
	Bench           string                `json:"bench"`
	Machine         bench.Machine         `json:"machine"`
	Command         string                `json:"command"`
	GoRoot          string                `json:"goroot"`
	Files           int                   `json:"files"`
	Chunks          int                   `json:"chunks"`
	IngestSeconds   float64               `json:"ingest_seconds"`
	IngestCPU       float64               `json:"ingest_cpu_seconds"`
	FilesPerSecond  float64               `json:"files_per_second"`
	UnchangedSecs   float64               `json:"unchanged_reingest_seconds"`
	Embedder        string                `json:"embedder"`
	EmbedSeconds    float64               `json:"embed_seconds"`
	EmbedCPU        float64               `json:"embed_cpu_seconds"`
	ChunksPerSecond float64               `json:"embedded_chunks_per_second"`
	Scores          []knowledge.CodeScore `json:"scores"`
}

// codeBench is one run of `memgate bench code` over an opened app.
type codeBench struct {
	a            *app
	kn           *knowledge.Service
	op           memory.Principal
	corpus       knowledge.CodeCorpus
	denseWeights []float64 // hybrid rows to compare; none: knowledge search's own
	hybrid       bool      // an embedder is configured: hybrid rows too
	say          func(format string, a ...any)
	sum          codeBenchSummary
}

// runBenchCode is `memgate bench code`: the knowledge benchmark over Go's
// standard library (internal/knowledge/benchcode.go, docs/knowledge.md).
func runBenchCode(env Env, args []string) error {
	fs, cfg := flags(env, "bench code", false)
	var goroot string
	var perGroup int
	var jsonOnly bool
	fs.StringVar(&goroot, "goroot", "", "Go installation whose src/ is the corpus (default: go env GOROOT)")
	fs.IntVar(&perGroup, "queries", 500, "questions per package group (a-m, n-z), a fixed sample; 0: all")
	fs.BoolVar(&jsonOnly, "json-only", false, "print only the JSON summary")
	var denseList, onlyGroup string
	fs.StringVar(&onlyGroup, "group", "", "run only this package group: a-m (tuning) or n-z (held out); default both")
	fs.StringVar(&denseList, "dense-weights", "", "comma-separated dense fusion weights to compare (tuning on the a-m group; rows hybrid@W); default: knowledge search's own")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	denseWeights, err := parseDenseWeights(denseList)
	if err != nil {
		return err
	}
	if onlyGroup != "" && onlyGroup != "a-m" && onlyGroup != "n-z" {
		return usagef("bench code: --group must be a-m or n-z")
	}
	goroot, src, err := goSourceTree(goroot)
	if err != nil {
		return err
	}
	dirGiven := false
	fs.Visit(func(f *flag.Flag) { dirGiven = dirGiven || f.Name == "data-dir" })
	cfg.DatabaseURL = ""
	openEnv := env
	if !dirGiven {
		cleanup, err := benchTempDir(cfg, "code")
		if err != nil {
			return err
		}
		defer cleanup()
		openEnv.Stderr = io.Discard
	}
	say := func(format string, a ...any) {
		if !jsonOnly {
			fmt.Fprintf(env.Stderr, "memgate: bench code: "+format+"\n", a...)
		}
	}
	corpus, err := knowledge.BuildCodeCorpus(src)
	if err != nil {
		return fmt.Errorf("bench code: reading %s: %w", src, err)
	}
	ctx, stop := env.runContext()
	defer stop()
	a, err := openWith(ctx, openEnv, cfg, nil, nil, true)
	if err != nil {
		return err
	}
	defer a.Close()
	b := &codeBench{a: a, kn: knowledge.New(a.svc, knowledge.Options{}), op: a.operator(), corpus: corpus,
		denseWeights: denseWeights, hybrid: a.index.Embedder() != nil, say: say,
		sum: codeBenchSummary{Bench: "code", Machine: bench.ThisMachine(), Command: strings.TrimSpace("memgate bench code " + strings.Join(args, " ")), GoRoot: goroot, Files: len(corpus.Docs), Embedder: "none"}}
	if err := b.ingest(ctx); err != nil {
		return err
	}
	if b.hybrid {
		if err := b.embed(ctx); err != nil {
			return err
		}
	}
	// A fixed sample per group: the questions ordered by a hash of their text.
	groups := map[string][]knowledge.CodeQuery{}
	for _, q := range corpus.Queries {
		groups[q.Group] = append(groups[q.Group], q)
	}
	bm := knowledge.NewBM25(corpus.Docs)
	for _, g := range []string{"a-m", "n-z"} {
		if onlyGroup != "" && g != onlyGroup {
			continue
		}
		if err := b.score(ctx, bm, g, codeBenchSample(groups[g], perGroup)); err != nil {
			return err
		}
	}
	if !jsonOnly {
		bench.PrintHeader(env.Stdout, b.sum.Command)
		fmt.Fprintf(env.Stdout, "%-12s %-6s %8s %9s %10s %7s\n", "method", "group", "queries", "recall@1", "recall@10", "MRR")
		for _, s := range b.sum.Scores {
			fmt.Fprintf(env.Stdout, "%-12s %-6s %8d %9.3f %10.3f %7.3f\n", s.Method, s.Group, s.Queries, s.RecallAt1, s.RecallAt10, s.MRR)
		}
	}
	return json.NewEncoder(env.Stdout).Encode(b.sum)
}

// goSourceTree is the src/ directory of the Go installation at goroot
// (empty: go env GOROOT), the corpus.
func goSourceTree(goroot string) (root, src string, err error) {
	if goroot == "" {
		if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
			goroot = strings.TrimSpace(string(out))
		} else {
			goroot = runtime.GOROOT()
		}
	}
	src = filepath.Join(goroot, "src")
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return "", "", usagef("bench code: no Go source tree at %s (use --goroot)", src)
	}
	return goroot, src, nil
}

// parseDenseWeights parses --dense-weights, a comma-separated list.
func parseDenseWeights(list string) ([]float64, error) {
	var ws []float64
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		w, err := strconv.ParseFloat(f, 64)
		if err != nil || w < 0 || w > 10 {
			return nil, usagef("bench code: --dense-weights: each weight must be a number between 0 and 10")
		}
		ws = append(ws, w)
	}
	return ws, nil
}

// ingest ingests the corpus, timed, then again unchanged (every file must
// come back Unchanged).
func (b *codeBench) ingest(ctx context.Context) error {
	docs, sum := b.corpus.Docs, &b.sum
	start, cpu := time.Now(), processCPU()
	var err error
	sum.Chunks, err = b.kn.IngestDocs(ctx, b.op, docs, 0, func(done int) {
		if done%500 == 0 {
			b.say("ingested %d/%d files", done, len(docs))
		}
	})
	if err != nil {
		return fmt.Errorf("bench code: ingest: %w", err)
	}
	sum.IngestSeconds, sum.IngestCPU = time.Since(start).Seconds(), (processCPU() - cpu).Seconds()
	sum.FilesPerSecond = float64(len(docs)) / sum.IngestSeconds
	b.say("ingested %d files (%d chunks) in %.1fs (%.1fs CPU): %.0f files/s", sum.Files, sum.Chunks, sum.IngestSeconds, sum.IngestCPU, sum.FilesPerSecond)
	start = time.Now()
	for _, d := range docs {
		if res, err := b.kn.Ingest(ctx, b.op, d); err != nil || res.Outcome != knowledge.Unchanged {
			return fmt.Errorf("bench code: unchanged re-ingest of %s: %v %s", d.URI, err, res.Outcome)
		}
	}
	sum.UnchangedSecs = time.Since(start).Seconds()
	b.say("unchanged re-ingest in %.2fs", sum.UnchangedSecs)
	return nil
}

// embed embeds every chunk, timed.
func (b *codeBench) embed(ctx context.Context) error {
	sum := &b.sum
	sum.Embedder = b.a.index.Embedder().Model()
	start, cpu := time.Now(), processCPU()
	n, err := b.a.svc.EmbedPending(ctx, 1<<30)
	if err != nil {
		return fmt.Errorf("bench code: embedding: %w", err)
	}
	sum.EmbedSeconds, sum.EmbedCPU = time.Since(start).Seconds(), (processCPU() - cpu).Seconds()
	sum.ChunksPerSecond = float64(n) / max(sum.EmbedSeconds, 1e-9)
	b.say("embedded %d chunks in %.1fs (%.1fs CPU): %.0f chunks/s (%s)", n, sum.EmbedSeconds, sum.EmbedCPU, sum.ChunksPerSecond, sum.Embedder)
	return nil
}

// codeBenchSample is a fixed sample of a group's questions: the first
// perGroup (0: all) in the order of a hash of their text. It sorts qs.
func codeBenchSample(qs []knowledge.CodeQuery, perGroup int) []knowledge.CodeQuery {
	sort.Slice(qs, func(i, j int) bool {
		hi, hj := sha256.Sum256([]byte(qs[i].URI+qs[i].Heading)), sha256.Sum256([]byte(qs[j].URI+qs[j].Heading))
		return string(hi[:]) < string(hj[:])
	})
	if perGroup > 0 && len(qs) > perGroup {
		qs = qs[:perGroup]
	}
	return qs
}

// score asks group g's questions qs of BM25, lexical search and (with an
// embedder) hybrid search at each dense weight, and adds the rows.
func (b *codeBench) score(ctx context.Context, bm *knowledge.BM25, g string, qs []knowledge.CodeQuery) error {
	var sBM, sLex knowledge.Scorer
	sHyb := make([]knowledge.Scorer, max(len(b.denseWeights), 1))
	for i, q := range qs {
		sBM.Add(bm.Rank(q, 100))
		r, err := b.kn.SearchRank(ctx, b.op, q, []string{retrieve.SignalLexical}, nil, 100)
		if err != nil {
			return err
		}
		sLex.Add(r)
		for j := range sHyb {
			if !b.hybrid {
				break
			}
			var w map[string]float64
			if len(b.denseWeights) > 0 {
				w = map[string]float64{retrieve.SignalDense: b.denseWeights[j]}
			}
			if r, err = b.kn.SearchRank(ctx, b.op, q, nil, w, 100); err != nil {
				return err
			}
			sHyb[j].Add(r)
		}
		if i%200 == 199 {
			b.say("group %s: %d/%d questions", g, i+1, len(qs))
		}
	}
	b.sum.Scores = append(b.sum.Scores, sBM.Score("bm25", g), sLex.Score("lexical", g))
	for j := range sHyb {
		if !b.hybrid {
			break
		}
		name := "hybrid"
		if len(b.denseWeights) > 0 {
			name = "hybrid@" + strconv.FormatFloat(b.denseWeights[j], 'f', -1, 64)
		}
		b.sum.Scores = append(b.sum.Scores, sHyb[j].Score(name, g))
	}
	return nil
}
