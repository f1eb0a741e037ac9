package bench

// The latency benchmark (`memgate bench latency`): it fills a data
// directory with N records made from real conversation turns through the
// service's write path, embeds them, times searches through the service's
// search path with the exact and the approximate vector index, and times a
// cold start. Unlike the retrieval benchmarks it scores speed, not recall.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
)

// Latency is the name of the latency benchmark.
const Latency = "latency"

// Opened is a data directory opened the way the CLI opens it: store,
// search index loaded, service bootstrapped.
type Opened struct {
	Service *core.Service
	Index   *retrieve.Engine
	Close   func() error
	// IndexLoad, when known, is how long loading or restoring the search
	// index took (part of opening); Restored says it came from a snapshot.
	IndexLoad time.Duration
	Restored  bool
}

// Opener opens the benchmark's data directory. mode selects the vector
// index; "" means the configured one.
type Opener func(ctx context.Context, mode retrieve.VectorMode) (*Opened, error)

// LatencyOptions configure RunLatency.
type LatencyOptions struct {
	// Records is how many records to write (N).
	Records int
	// Queries is how many timed queries each search mode runs (default
	// 300); Warmup untimed ones run first (0: 20, negative: none).
	Queries int
	Warmup  int
	// Rounds repeats the timed queries (default 3); each mode reports
	// the median over rounds of its percentiles, for a noisy machine.
	Rounds int
	// K is the number of results asked per search (default 10).
	K int
	// Writers write concurrently (default 3, 1 to 16).
	Writers int
	// Principal writes and searches; the CLI uses the local operator.
	Principal memory.Principal
	// Open opens the data directory; it is called once for the write and
	// search phases and once per vector index for the cold start.
	Open Opener
	// DataDir is measured for the size on disk.
	DataDir string
	// Snapshot, when set, saves ix's snapshot where Open restores it from
	// and returns its path; the cold start is then measured both ways.
	Snapshot func(ix *retrieve.Engine) (string, error)
	// KeepSnapshot leaves the last cold start's snapshot (the HNSW one) in
	// place instead of removing it, for later cold starts of the kept
	// data directory.
	KeepSnapshot bool
	// Reuse skips the write phase: the data directory already holds the
	// records of an earlier run with the same Records and dataset (kept
	// with a named data directory), so the search phase and the cold
	// start can be measured again without writing them anew.
	Reuse bool
	// Progress, when set, receives progress bars: redrawn in place with
	// \r at most 5 times a second, or, with ProgressLines, as a plain line
	// every 10 seconds (for logs).
	Progress      io.Writer
	ProgressLines bool
	// ProfileDir, when set, receives CPU profiles of the phases:
	// write.pprof, embed.pprof, search.pprof (samples labelled mode=...)
	// and load.pprof (the cold starts).
	ProfileDir string
	// MemProfileDir, when set, receives heap profiles (live objects, for
	// `go tool pprof -sample_index=inuse_space`): heap-search.pprof once
	// the records are written and embedded, and heap-<index>-<rebuild or
	// restore>.pprof after each cold start.
	MemProfileDir string
	// Seed varies the queries (default 1).
	Seed uint64
}

// Percentiles summarise latencies (nearest rank).
type Percentiles struct {
	N                   int
	P50, P95, P99, Mean time.Duration
}

func summarise(lat []time.Duration) Percentiles {
	s := slices.Clone(lat)
	slices.Sort(s)
	p := Percentiles{N: len(s), P50: percentile(s, 0.50), P95: percentile(s, 0.95), P99: percentile(s, 0.99)}
	var total time.Duration
	for _, d := range s {
		total += d
	}
	if len(s) > 0 {
		p.Mean = total / time.Duration(len(s))
	}
	return p
}

// medianPercentiles is the element-wise median of per-round figures.
func medianPercentiles(per []Percentiles) Percentiles {
	if len(per) == 0 {
		return Percentiles{}
	}
	med := func(f func(Percentiles) time.Duration) time.Duration {
		v := make([]time.Duration, len(per))
		for i, p := range per {
			v[i] = f(p)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Percentiles{N: per[0].N,
		P50:  med(func(p Percentiles) time.Duration { return p.P50 }),
		P95:  med(func(p Percentiles) time.Duration { return p.P95 }),
		P99:  med(func(p Percentiles) time.Duration { return p.P99 }),
		Mean: med(func(p Percentiles) time.Duration { return p.Mean })}
}

// ModeResult is one search mode's figures.
type ModeResult struct {
	Name    string
	Signals []string // requested; nil means all available
	// Lat holds the medians over rounds of each round's percentiles;
	// Scoped and Unscoped pool every round's queries of that kind.
	Lat              Percentiles
	Scoped, Unscoped Percentiles
	Errors           int
	// Hits is the mean number of results per query.
	Hits float64
}

// ColdOpen is one opening of the closed data directory.
type ColdOpen struct {
	Took        time.Duration
	IndexLoad   time.Duration // of Took, when the opener says; 0 otherwise
	Restored    bool          // the index came from a snapshot
	Docs        int
	Vectors     int
	VectorIndex string
	// RSSMiB is read after a GC; RSSSettledMiB after the runtime has also
	// returned free memory to the system, as it does by itself in time.
	RSSMiB        float64
	RSSSettledMiB float64
	HeapMiB       float64
}

// ColdStart is the cold start with one vector index: a rebuild of the
// index from the database and, when the opener can save a snapshot, a
// restore from it.
type ColdStart struct {
	Mode          retrieve.VectorMode
	Rebuild       ColdOpen
	Restore       *ColdOpen
	SnapshotSave  time.Duration
	SnapshotBytes int64
}

// Start is the cold start a restarted server sees: from the snapshot when
// there is one, else the rebuild.
func (c ColdStart) Start() ColdOpen {
	if c.Restore != nil {
		return *c.Restore
	}
	return c.Rebuild
}

// LatencyResult is what RunLatency measured.
type LatencyResult struct {
	Records   int
	Turns     int // distinct turns the corpus is made of
	Questions int // benchmark questions available as queries
	Embedder  string
	Writers   int

	// Write phase (skipped when Reused). Decisions counts write decisions
	// by kind (rejections included); they add up to Records.
	Reused      bool
	Decisions   map[string]int
	Reasons     map[string]int
	Quarantined int
	Types       map[string]int // records written by type
	WriteWall   time.Duration
	WritePerS   float64 // median of per-chunk rates
	WriteChunks int
	// WriteChunkRates are the per-chunk rates in write order.
	WriteChunkRates []float64
	WriteOverall    float64 // Records / WriteWall
	WriteLat        Percentiles
	Docs            int // index heads after the write phase

	// Embedding.
	Embedded  int
	EmbedWall time.Duration
	Vectors   int

	// Search phase.
	VectorIndex string // the service's vector index as configured
	AltIndex    string // the second engine's
	AltLoad     time.Duration
	Queries     int
	Scoped      int
	FromTurns   int
	K           int
	Warmup      int
	Rounds      int
	Modes       []ModeResult
	// Recall10 is the mean fraction of the exact dense top 10 that the
	// approximate dense search also returns; Overlap10 the same for hybrid.
	Recall10, Overlap10 float64
	RecallN             int

	// Cold start.
	BaseRSSMiB float64 // after closing everything, before reopening
	Cold       []ColdStart
	DBFiles    map[string]int64
	DBBytes    int64

	Wall time.Duration
}

// Mode returns the named mode's result, or nil.
func (r *LatencyResult) Mode(name string) *ModeResult {
	for i := range r.Modes {
		if r.Modes[i].Name == name {
			return &r.Modes[i]
		}
	}
	return nil
}

// ---------------------------------------------------------------------
// Corpus.

const (
	latScopes    = 100
	latMaxBase   = 1900 // bytes kept of a turn; the variation adds < 150
	latMaxRecord = 2048
	latChunk     = 10_000
	latQueryLen  = 8 // words of a turn-derived query
)

// latCorpus turns the distinct turns of a benchmark file into any number
// of distinct, realistic record contents.
type latCorpus struct {
	turns     []string // distinct turn contents, file order, ≤ latMaxBase bytes
	questions []string
	seen      map[uint64]struct{}
}

func newLatCorpus(ds *Dataset) (*latCorpus, error) {
	c := &latCorpus{seen: map[uint64]struct{}{}}
	have := map[string]bool{}
	qs := map[string]bool{}
	for _, conv := range ds.Convs {
		for _, t := range conv.Turns {
			s := cutWords(strings.TrimSpace(t.Content), latMaxBase)
			if s == "" || have[s] {
				continue
			}
			have[s] = true
			c.turns = append(c.turns, s)
		}
		for _, q := range conv.Questions {
			if q.Text != "" && !qs[q.Text] {
				qs[q.Text] = true
				c.questions = append(c.questions, q.Text)
			}
		}
	}
	if len(c.turns) == 0 {
		return nil, errors.New("bench: the benchmark file has no turns")
	}
	return c, nil
}

// cutWords shortens s to at most n bytes, at a space when there is one.
func cutWords(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = truncate(s, n)
	if i := strings.LastIndexByte(s, ' '); i > n/2 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// mix is SplitMix64's finaliser: a fixed, well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// plainWords returns the words of a turn made of letters only (no digits,
// so no PII-looking runs), without its role prefix.
func plainWords(turn string) []string {
	var out []string
	for i, f := range strings.Fields(turn) {
		if i == 0 && strings.HasSuffix(f, ":") {
			continue // "user:", "assistant:"
		}
		w := strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) })
		if len(w) < 2 || len(w) > 20 || strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			continue
		}
		out = append(out, w)
	}
	return out
}

// text returns record i's content. The first pass over the corpus writes
// the turns as they are; later passes append three to six words of
// another turn chosen by a fixed hash of i. Contents are distinct: a
// rare collision takes the next choice. Calls must come in order of i.
func (c *latCorpus) text(i int) string {
	L := len(c.turns)
	base := c.turns[i%L]
	s := base
	for salt := uint64(0); ; salt++ {
		if i >= L || salt > 0 {
			h := mix(uint64(i)<<8 | salt)
			var words []string
			for try := range uint64(8) {
				words = plainWords(c.turns[(h+try*7919)%uint64(L)])
				if len(words) >= 3 {
					break
				}
			}
			if len(words) > 0 {
				n := min(len(words), 3+int(h>>40)%4)
				at := int(h>>48) % (len(words) - n + 1)
				s = base + " " + strings.Join(words[at:at+n], " ")
			}
		}
		h := fnv.New64a()
		io.WriteString(h, s)
		sum := h.Sum64()
		if _, dup := c.seen[sum]; !dup || salt >= 16 {
			c.seen[sum] = struct{}{}
			return truncate(s, latMaxRecord)
		}
	}
}

// latType is record i's type: blocks of 100 (one per scope) alternate
// between episodes and beliefs, so every scope holds both.
func latType(i int) memory.Type {
	if (i/latScopes)%2 == 1 {
		return memory.Belief
	}
	return memory.Episode
}

func latProject(i int) string { return "p" + strconv.Itoa(i%latScopes) }

type latQuery struct {
	text    string
	project string // "" = unscoped
	turn    bool
}

// queries draws q queries: the benchmark's questions (up to half) and
// the first words of random written turns; nine in ten are scoped to one
// project (a turn-derived query to a project that holds its turn).
func (c *latCorpus) queries(q, written int, seed uint64) []latQuery {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var out []latQuery
	qs := slices.Clone(c.questions)
	rng.Shuffle(len(qs), func(i, j int) { qs[i], qs[j] = qs[j], qs[i] })
	for _, t := range qs[:min(len(qs), q/2)] {
		if retrieve.Route(t) == retrieve.RouteSkip {
			continue
		}
		lq := latQuery{text: truncate(t, 4096)}
		if rng.IntN(10) != 0 {
			lq.project = "p" + strconv.Itoa(rng.IntN(latScopes))
		}
		out = append(out, lq)
	}
	for tries := 0; len(out) < q && tries < 100*q; tries++ {
		i := rng.IntN(written)
		f := strings.Fields(c.turns[i%len(c.turns)])
		if len(f) > 0 && strings.HasSuffix(f[0], ":") {
			f = f[1:]
		}
		f = f[:min(len(f), latQueryLen)]
		t := strings.Join(f, " ")
		if len(f) < 4 || retrieve.Route(t) == retrieve.RouteSkip {
			continue
		}
		lq := latQuery{text: t, turn: true}
		if rng.IntN(10) != 0 {
			lq.project = latProject(i)
		}
		out = append(out, lq)
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// ---------------------------------------------------------------------
// Progress.

type progress struct {
	w     io.Writer
	lines bool
	what  string
	total int
	start time.Time
	done  atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
}

func startProgress(w io.Writer, lines bool, what string, total int) *progress {
	p := &progress{w: w, lines: lines, what: what, total: total, start: time.Now(), stop: make(chan struct{})}
	if w == nil {
		return p
	}
	every := 200 * time.Millisecond // at most 5 redraws a second
	if lines {
		every = 10 * time.Second
	}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.draw(false)
			}
		}
	})
	return p
}

func (p *progress) add(n int) { p.done.Add(int64(n)) }

func (p *progress) draw(final bool) {
	done := int(p.done.Load())
	el := time.Since(p.start)
	rate := 0.0
	if s := el.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	pct := 100.0
	if p.total > 0 {
		pct = min(100, 100*float64(done)/float64(p.total))
	}
	eta := "-"
	if final {
		eta = "done in " + el.Round(100*time.Millisecond).String()
	} else if rate > 0 && done < p.total {
		eta = "ETA " + time.Duration(float64(p.total-done)/rate*float64(time.Second)).Round(time.Second).String()
	}
	line := fmt.Sprintf("%-6s %d/%d %5.1f%% %7.0f/s %s", p.what, done, p.total, pct, rate, eta)
	if p.lines {
		fmt.Fprintf(p.w, "bench: %s\n", line)
		return
	}
	const width = 30
	fill := int(pct / 100 * width)
	bar := strings.Repeat("#", fill) + strings.Repeat(".", width-fill)
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r[%s] %s\x1b[K%s", bar, line, end)
}

func (p *progress) finish() {
	if p.w == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.draw(true)
}

// ---------------------------------------------------------------------
// Measurements.

// procStatusMiB reads a kB field (VmRSS, VmHWM) of /proc/self/status in
// MiB; 0 where there is none.
func procStatusMiB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

func heapInUseMiB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / (1 << 20)
}

// dirFiles returns the sizes of the regular files in dir.
func dirFiles(dir string) (map[string]int64, int64) {
	out := map[string]int64{}
	var total int64
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out, 0
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			out[e.Name()] = fi.Size()
			total += fi.Size()
		}
	}
	return out, total
}

// profile starts a CPU profile into dir/name; the returned func stops it.
func profile(dir, name string) (func() error, error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("bench: profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// heapProfile writes a heap profile to dir/name (nothing without dir).
func heapProfile(dir, name string) error {
	if dir == "" {
		return nil
	}
	runtime.GC()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: heap profile: %w", err)
	}
	return f.Close()
}

// ---------------------------------------------------------------------
// The run.

// RunLatency runs the latency benchmark over the turns and questions of
// ds (a LongMemEval or LoCoMo dataset) in the data directory o.Open opens,
// which should be empty.
func RunLatency(ctx context.Context, ds *Dataset, o LatencyOptions) (*LatencyResult, error) {
	start := time.Now()
	if o.Records <= 0 {
		return nil, errors.New("bench: latency: records must be positive")
	}
	if o.Open == nil {
		return nil, errors.New("bench: latency: no opener")
	}
	if o.Queries <= 0 {
		o.Queries = 300
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	} else if o.Warmup == 0 {
		o.Warmup = 20
	}
	if o.K <= 0 {
		o.K = 10
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	o.K = min(o.K, core.MaxK)
	if o.Writers <= 0 {
		o.Writers = 3
	}
	o.Writers = min(o.Writers, 16)
	if o.Seed == 0 {
		o.Seed = 1
	}
	corpus, err := newLatCorpus(ds)
	if err != nil {
		return nil, err
	}
	res := &LatencyResult{Records: o.Records, Turns: len(corpus.turns), Questions: len(corpus.questions), Writers: o.Writers,
		Decisions: map[string]int{}, Reasons: map[string]int{}, Types: map[string]int{}, K: o.K, Warmup: o.Warmup, Embedder: "none"}

	prim, err := o.Open(ctx, "")
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			prim.Close()
		}
	}()
	emb := prim.Index.Embedder()
	if emb != nil {
		res.Embedder = emb.Model()
	}

	// 1-2. Write phase.
	stop, err := profile(o.ProfileDir, "write.pprof")
	if err != nil {
		return nil, err
	}
	if o.Reuse {
		res.Reused = true
	} else if err := latWrite(ctx, prim.Service, corpus, o, res); err != nil {
		stop()
		return nil, err
	}
	if err := stop(); err != nil {
		return nil, err
	}
	res.Docs = prim.Index.Stats().Docs

	// 3. Embedding.
	if emb != nil {
		if stop, err = profile(o.ProfileDir, "embed.pprof"); err != nil {
			return nil, err
		}
		t0 := time.Now()
		bar := startProgress(o.Progress, o.ProgressLines, "embed", res.Docs)
		for {
			n, err := prim.Service.EmbedPending(ctx, 4096)
			if err != nil {
				bar.finish()
				stop()
				return nil, fmt.Errorf("bench: embedding: %w", err)
			}
			if n == 0 {
				break
			}
			res.Embedded += n
			bar.add(n)
		}
		bar.finish()
		res.EmbedWall = time.Since(t0)
		if err := stop(); err != nil {
			return nil, err
		}
	}
	st := prim.Index.Stats()
	res.Vectors, res.VectorIndex = st.Vectors, st.VectorIndex
	if err := heapProfile(o.MemProfileDir, "heap-search.pprof"); err != nil {
		return nil, err
	}

	// 4. Search phase: the service as opened, and a second engine with
	// the other vector index over the same store behind a second service.
	services := map[string]*core.Service{}
	services[res.VectorIndex] = prim.Service
	if emb != nil {
		alt := retrieve.VectorApprox
		if res.VectorIndex == "hnsw" {
			alt = retrieve.VectorExact
		}
		t0 := time.Now()
		ix := retrieve.New(retrieve.Options{Embedder: emb, Vectors: alt})
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "bench: loading a second search index (%s) over the store...\n", alt)
		}
		if _, err := ix.Load(ctx, prim.Service.Store()); err != nil {
			return nil, fmt.Errorf("bench: loading the %s index: %w", alt, err)
		}
		res.AltLoad = time.Since(t0)
		res.AltIndex = ix.Stats().VectorIndex
		services[res.AltIndex] = core.New(core.Options{Store: prim.Service.Store(), Policy: prim.Service.Policy(), Index: ix})
	}
	if stop, err = profile(o.ProfileDir, "search.pprof"); err != nil {
		return nil, err
	}
	if err := latSearch(ctx, services, emb != nil, corpus, o, res); err != nil {
		stop()
		return nil, err
	}
	if err := stop(); err != nil {
		return nil, err
	}

	// 5. Cold start.
	services = nil
	closed = true
	if err := prim.Close(); err != nil {
		return nil, fmt.Errorf("bench: closing: %w", err)
	}
	prim = nil
	corpus = nil
	runtime.GC()
	debug.FreeOSMemory()
	res.BaseRSSMiB = procStatusMiB("VmRSS")
	if stop, err = profile(o.ProfileDir, "load.pprof"); err != nil {
		return nil, err
	}
	for _, mode := range []retrieve.VectorMode{retrieve.VectorExact, retrieve.VectorApprox} {
		cs, err := latColdStart(ctx, o, mode, res)
		if err != nil {
			stop()
			return nil, err
		}
		res.Cold = append(res.Cold, cs)
	}
	if err := stop(); err != nil {
		return nil, err
	}
	res.Wall = time.Since(start)
	return res, nil
}

// coldOpen opens the data directory with the vector index mode and
// measures it; it is closed again before returning.
func coldOpen(ctx context.Context, o LatencyOptions, mode retrieve.VectorMode, after func(h *Opened) error) (ColdOpen, error) {
	how := "rebuild"
	runtime.GC()
	debug.FreeOSMemory()
	t0 := time.Now()
	h, err := o.Open(ctx, mode)
	if err != nil {
		return ColdOpen{}, err
	}
	c := ColdOpen{Took: time.Since(t0), IndexLoad: h.IndexLoad, Restored: h.Restored}
	st := h.Index.Stats()
	c.Docs, c.Vectors, c.VectorIndex = st.Docs, st.Vectors, st.VectorIndex
	c.HeapMiB = heapInUseMiB()
	c.RSSMiB = procStatusMiB("VmRSS")
	debug.FreeOSMemory()
	c.RSSSettledMiB = procStatusMiB("VmRSS")
	if c.Restored {
		how = "restore"
	}
	if err := heapProfile(o.MemProfileDir, fmt.Sprintf("heap-%s-%s.pprof", mode, how)); err != nil {
		h.Close()
		return c, err
	}
	if after != nil {
		err = after(h)
	}
	if cerr := h.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("bench: closing: %w", cerr)
	}
	return c, err
}

// latColdStart reopens the closed data directory with the vector index
// mode: first without an index snapshot (the index is rebuilt from the
// database), then, when o.Snapshot can save one, from the snapshot as a
// restarted server does.
func latColdStart(ctx context.Context, o LatencyOptions, mode retrieve.VectorMode, res *LatencyResult) (ColdStart, error) {
	cs := ColdStart{Mode: mode}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "bench: cold start with the %s vector index, rebuilding the index from the database...\n", mode)
	}
	var snap string
	var err error
	cs.Rebuild, err = coldOpen(ctx, o, mode, func(h *Opened) error {
		if mode == retrieve.VectorApprox {
			res.DBFiles, res.DBBytes = dbFiles(o.DataDir) // open: db + wal + shm
		}
		if o.Snapshot == nil {
			return nil
		}
		t0 := time.Now()
		snap, err = o.Snapshot(h.Index)
		cs.SnapshotSave = time.Since(t0)
		if err != nil {
			return fmt.Errorf("bench: saving the index snapshot: %w", err)
		}
		if fi, err := os.Stat(snap); err == nil {
			cs.SnapshotBytes = fi.Size()
		}
		return nil
	})
	if err != nil || snap == "" {
		return cs, err
	}
	if !o.KeepSnapshot || mode != retrieve.VectorApprox {
		defer os.Remove(snap) // the next mode starts without one
	}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "bench: cold start with the %s vector index, from the index snapshot...\n", mode)
	}
	r, err := coldOpen(ctx, o, mode, nil)
	cs.Restore = &r
	return cs, err
}

// dbFiles returns the sizes of the database files in dir (db, wal, shm).
func dbFiles(dir string) (map[string]int64, int64) {
	all, _ := dirFiles(dir)
	out := map[string]int64{}
	var total int64
	for name, n := range all {
		if strings.HasPrefix(name, "memgate.db") {
			out[name] = n
			total += n
		}
	}
	return out, total
}

type writeJob struct {
	i    int
	text string
}

// latWrite writes the records through svc with o.Writers writers.
func latWrite(ctx context.Context, svc *core.Service, c *latCorpus, o LatencyOptions, res *LatencyResult) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan writeJob, 256)
	go func() {
		defer close(jobs)
		for i := range o.Records {
			select {
			case jobs <- writeJob{i, c.text(i)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	var (
		mu       sync.Mutex
		firstErr error
		lats     = make([]time.Duration, 0, o.Records)
		marks    []time.Time // completion time of every latChunk-th write
		done     int
	)
	bar := startProgress(o.Progress, o.ProgressLines, "write", o.Records)
	start := time.Now()
	var wg sync.WaitGroup
	for range o.Writers {
		wg.Go(func() {
			local := make([]time.Duration, 0, 1024)
			flush := func() {
				mu.Lock()
				lats = append(lats, local...)
				mu.Unlock()
				local = local[:0]
			}
			defer flush()
			for j := range jobs {
				typ := latType(j.i)
				req := core.WriteRequest{Type: typ, Content: j.text,
					Scope: memory.Scope{AppID: AppID, ProjectID: latProject(j.i)}}
				t0 := time.Now()
				wr, err := svc.Write(ctx, o.Principal, req)
				d := time.Since(t0)
				now := time.Now()
				local = append(local, d)
				if len(local) == cap(local) {
					flush()
				}
				mu.Lock()
				if err != nil {
					fe := fault.As(err)
					if fe.Code == fault.Internal || fe.Code == fault.Unavailable {
						if firstErr == nil {
							firstErr = fmt.Errorf("bench: writing record %d: %w", j.i, err)
							cancel()
						}
						mu.Unlock()
						return
					}
					reason, _ := fe.Details["reason"].(string)
					if reason == "" {
						reason = string(fe.Code)
					}
					res.Decisions[memory.DecisionRejected]++
					res.Reasons[memory.DecisionRejected+"/"+reason]++
				} else {
					res.Decisions[wr.Decision]++
					if wr.Decision != memory.DecisionAccepted {
						res.Reasons[wr.Decision+"/"+wr.Reason]++
					}
					if wr.Record.Status == memory.Quarantined {
						res.Quarantined++
					}
				}
				res.Types[string(typ)]++
				done++
				if done%latChunk == 0 {
					marks = append(marks, now)
				}
				mu.Unlock()
				bar.add(1)
			}
		})
	}
	wg.Wait()
	bar.finish()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	res.WriteWall = time.Since(start)
	res.WriteLat = summarise(lats)
	res.WriteOverall = float64(o.Records) / res.WriteWall.Seconds()
	var rates []float64
	prev := start
	for _, m := range marks {
		if d := m.Sub(prev).Seconds(); d > 0 {
			rates = append(rates, latChunk/d)
		}
		prev = m
	}
	res.WriteChunks = len(rates)
	res.WriteChunkRates = slices.Clone(rates)
	if len(rates) == 0 {
		res.WritePerS = res.WriteOverall
	} else {
		slices.Sort(rates)
		res.WritePerS = rates[len(rates)/2]
		if len(rates)%2 == 0 {
			res.WritePerS = (rates[len(rates)/2-1] + rates[len(rates)/2]) / 2
		}
	}
	return nil
}

type latMode struct {
	name    string
	index   string // vector index of the service it runs on
	signals []string
}

// latSearch times every mode over the same queries, single-threaded. The
// modes take turns query by query, so a noisy neighbour slows them alike.
func latSearch(ctx context.Context, services map[string]*core.Service, dense bool, c *latCorpus, o LatencyOptions, res *LatencyResult) error {
	qs := c.queries(o.Queries, o.Records, o.Seed)
	res.Queries = len(qs)
	for _, q := range qs {
		if q.project != "" {
			res.Scoped++
		}
		if q.turn {
			res.FromTurns++
		}
	}
	modes := []latMode{{"lexical", res.VectorIndex, []string{retrieve.SignalLexical}}}
	if dense {
		for _, ix := range []string{"exact", "hnsw"} {
			modes = append(modes, latMode{"dense_" + ix, ix, []string{retrieve.SignalDense}})
		}
		for _, ix := range []string{"exact", "hnsw"} {
			modes = append(modes, latMode{"hybrid_" + ix, ix, nil})
		}
	} else {
		modes = append(modes, latMode{"hybrid", res.VectorIndex, nil}) // lexical only: no embedder
	}
	search := func(m latMode, q latQuery) (core.SearchResponse, time.Duration, error) {
		req := core.SearchRequest{Query: q.text, K: o.K, Signals: m.signals}
		if q.project != "" {
			req.Scope = memory.Scope{AppID: AppID, ProjectID: q.project}
		}
		var sr core.SearchResponse
		var err error
		t0 := time.Now()
		pprof.Do(ctx, pprof.Labels("mode", m.name), func(ctx context.Context) {
			sr, err = services[m.index].Search(ctx, o.Principal, req)
		})
		return sr, time.Since(t0), err
	}
	// Warm-up: each mode's first queries, untimed.
	for _, m := range modes {
		for i := range min(o.Warmup, len(qs)) {
			if _, _, err := search(m, qs[i]); err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	// Rounds: every query in every mode, R times; a mode's figures are
	// the medians of its per-round figures.
	lats := make([][][]time.Duration, len(modes)) // mode → round → query
	var scoped, unscoped [][]time.Duration        // mode → pooled over rounds
	scoped, unscoped = make([][]time.Duration, len(modes)), make([][]time.Duration, len(modes))
	ids := make([][][]string, len(modes)) // first round only
	hits := make([]int, len(modes))
	res.Modes = make([]ModeResult, len(modes))
	res.Rounds = o.Rounds
	bar := startProgress(o.Progress, o.ProgressLines, "search", o.Rounds*len(qs)*len(modes))
	for round := range o.Rounds {
		for mi := range modes {
			lats[mi] = append(lats[mi], make([]time.Duration, 0, len(qs)))
		}
		for qi, q := range qs {
			for r := range modes {
				mi := (qi + r + round) % len(modes)
				m := modes[mi]
				sr, d, err := search(m, q)
				if ctx.Err() != nil {
					bar.finish()
					return ctx.Err()
				}
				lats[mi][round] = append(lats[mi][round], d)
				if q.project != "" {
					scoped[mi] = append(scoped[mi], d)
				} else {
					unscoped[mi] = append(unscoped[mi], d)
				}
				bar.add(1)
				if round > 0 {
					continue
				}
				if err != nil {
					res.Modes[mi].Errors++
				}
				var got []string
				for _, h := range sr.Results {
					got = append(got, h.Record.ID)
				}
				ids[mi] = append(ids[mi], got)
				hits[mi] += len(got)
			}
		}
	}
	bar.finish()
	for i, m := range modes {
		mr := &res.Modes[i]
		mr.Name, mr.Signals = m.name, m.signals
		var per []Percentiles
		for _, l := range lats[i] {
			per = append(per, summarise(l))
		}
		mr.Lat = medianPercentiles(per)
		mr.Scoped, mr.Unscoped = summarise(scoped[i]), summarise(unscoped[i])
		if len(qs) > 0 {
			mr.Hits = float64(hits[i]) / float64(len(qs))
		}
	}
	overlap := func(exact, approx string) (float64, int) {
		ei := slices.IndexFunc(modes, func(m latMode) bool { return m.name == exact })
		ai := slices.IndexFunc(modes, func(m latMode) bool { return m.name == approx })
		if ei < 0 || ai < 0 {
			return 0, 0
		}
		sum, n := 0.0, 0
		for q := range ids[ei] {
			e := ids[ei][q][:min(10, len(ids[ei][q]))]
			if len(e) == 0 {
				continue
			}
			a := ids[ai][q][:min(10, len(ids[ai][q]))]
			found := 0
			for _, id := range e {
				if slices.Contains(a, id) {
					found++
				}
			}
			sum += float64(found) / float64(len(e))
			n++
		}
		if n == 0 {
			return 0, 0
		}
		return sum / float64(n), n
	}
	res.Recall10, res.RecallN = overlap("dense_exact", "dense_hnsw")
	res.Overlap10, _ = overlap("hybrid_exact", "hybrid_hnsw")
	return nil
}

// ---------------------------------------------------------------------
// Report.

// LatencyLatJSON is one latency distribution in the JSON line.
type LatencyLatJSON struct {
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
}

func latJSON(p Percentiles) *LatencyLatJSON {
	return &LatencyLatJSON{P50: round4(ms(p.P50)), P95: round4(ms(p.P95)), P99: round4(ms(p.P99))}
}

// LatencyJSON is the machine-readable summary printed last.
type LatencyJSON struct {
	Bench    string  `json:"bench"`
	Records  int     `json:"records"`
	Embedder string  `json:"embedder"`
	WallS    float64 `json:"wall_s"`
	Reused   bool    `json:"reused,omitempty"`
	Write    struct {
		PerS float64 `json:"per_s"`
		LatencyLatJSON
		OverallPerS float64 `json:"overall_per_s"`
		Writers     int     `json:"writers"`
		FirstPerS   float64 `json:"first_chunk_per_s,omitempty"`
		LastPerS    float64 `json:"last_chunk_per_s,omitempty"`
		S           float64 `json:"s"`
	} `json:"write"`
	Search struct {
		Lexical     *LatencyLatJSON `json:"lexical,omitempty"`
		DenseExact  *LatencyLatJSON `json:"dense_exact,omitempty"`
		DenseHNSW   *LatencyLatJSON `json:"dense_hnsw,omitempty"`
		HybridExact *LatencyLatJSON `json:"hybrid_exact,omitempty"`
		HybridHNSW  *LatencyLatJSON `json:"hybrid_hnsw,omitempty"`
		Hybrid      *LatencyLatJSON `json:"hybrid,omitempty"` // without an embedder
	} `json:"search"`
	Recall10   *float64           `json:"hnsw_recall@10"`
	ColdStartS map[string]float64 `json:"cold_start_s"`
	RSSMiB     float64            `json:"rss_mib"`
	HeapMiB    float64            `json:"heap_mib"`
	DBMiB      float64            `json:"db_mib"`

	// Details.
	Decisions      map[string]int                `json:"decisions"`
	Types          map[string]int                `json:"types"`
	Quarantined    int                           `json:"quarantined"`
	Docs           int                           `json:"docs"`
	Vectors        int                           `json:"vectors"`
	Embed          map[string]float64            `json:"embed,omitempty"`
	VectorIndex    string                        `json:"vector_index"`
	Queries        int                           `json:"queries"`
	Scoped         int                           `json:"scoped_queries"`
	K              int                           `json:"k"`
	Rounds         int                           `json:"search_rounds"`
	Overlap10      *float64                      `json:"hybrid_hnsw_overlap@10,omitempty"`
	SearchErr      int                           `json:"search_errors"`
	ColdRSS        map[string]float64            `json:"cold_rss_mib"`
	ColdHeap       map[string]float64            `json:"cold_heap_mib"`
	ColdRSSSettled map[string]float64            `json:"cold_rss_settled_mib"`
	ColdRebuildS   map[string]float64            `json:"cold_rebuild_s"`
	Snapshot       map[string]map[string]float64 `json:"snapshot,omitempty"`
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// BuildLatencyJSON assembles the summary line. rss_mib and heap_mib are
// the larger of the two cold starts.
func BuildLatencyJSON(r *LatencyResult) LatencyJSON {
	j := LatencyJSON{Bench: Latency, Records: r.Records, Embedder: r.Embedder, WallS: round4(r.Wall.Seconds()), Reused: r.Reused,
		ColdStartS: map[string]float64{}, ColdRebuildS: map[string]float64{}, DBMiB: round4(mib(r.DBBytes)), Decisions: r.Decisions, Types: r.Types,
		Quarantined: r.Quarantined, Docs: r.Docs, Vectors: r.Vectors, VectorIndex: r.VectorIndex, Queries: r.Queries,
		Scoped: r.Scoped, K: r.K, Rounds: r.Rounds, ColdRSS: map[string]float64{}, ColdHeap: map[string]float64{},
		ColdRSSSettled: map[string]float64{}}
	j.Write.PerS = round4(r.WritePerS)
	j.Write.LatencyLatJSON = *latJSON(r.WriteLat)
	j.Write.OverallPerS = round4(r.WriteOverall)
	j.Write.Writers = r.Writers
	if n := len(r.WriteChunkRates); n > 0 {
		j.Write.FirstPerS, j.Write.LastPerS = round4(r.WriteChunkRates[0]), round4(r.WriteChunkRates[n-1])
	}
	j.Write.S = round4(r.WriteWall.Seconds())
	for _, m := range r.Modes {
		l := latJSON(m.Lat)
		j.SearchErr += m.Errors
		switch m.Name {
		case "lexical":
			j.Search.Lexical = l
		case "dense_exact":
			j.Search.DenseExact = l
		case "dense_hnsw":
			j.Search.DenseHNSW = l
		case "hybrid_exact":
			j.Search.HybridExact = l
		case "hybrid_hnsw":
			j.Search.HybridHNSW = l
		case "hybrid":
			j.Search.Hybrid = l
		}
	}
	if r.RecallN > 0 {
		v := round4(r.Recall10)
		j.Recall10 = &v
		o := round4(r.Overlap10)
		j.Overlap10 = &o
	}
	if r.Embedder != "none" {
		j.Embed = map[string]float64{"vectors": float64(r.Embedded), "s": round4(r.EmbedWall.Seconds()),
			"per_s": round4(perSec(r.Embedded, r.EmbedWall))}
	}
	for _, c := range r.Cold {
		m := string(c.Mode)
		j.ColdStartS[m] = round4(c.Start().Took.Seconds())
		j.ColdRebuildS[m] = round4(c.Rebuild.Took.Seconds())
		if c.Restore != nil {
			if j.Snapshot == nil {
				j.Snapshot = map[string]map[string]float64{}
			}
			j.Snapshot[m] = map[string]float64{"restore_s": round4(c.Restore.Took.Seconds()), "save_s": round4(c.SnapshotSave.Seconds()),
				"mib": round4(mib(c.SnapshotBytes))}
		}
		for _, o := range []*ColdOpen{&c.Rebuild, c.Restore} {
			if o == nil {
				continue
			}
			key := m + "_rebuild"
			if o.Restored {
				key = m + "_restore"
			}
			j.ColdRSS[key] = round4(o.RSSMiB)
			j.ColdRSSSettled[key] = round4(o.RSSSettledMiB)
			j.ColdHeap[key] = round4(o.HeapMiB)
			j.RSSMiB = max(j.RSSMiB, round4(o.RSSMiB))
			j.HeapMiB = max(j.HeapMiB, round4(o.HeapMiB))
		}
	}
	return j
}

// LatencyRender describes the run for the printed report.
type LatencyRender struct {
	Data     string
	JSONOnly bool
}

// RenderLatency prints the human tables (unless JSONOnly) and then, last,
// the JSON summary line.
func RenderLatency(w io.Writer, r *LatencyResult, ro LatencyRender) error {
	bw := bufio.NewWriter(w)
	if !ro.JSONOnly {
		renderLatencyText(bw, r, ro)
	}
	line, err := json.Marshal(BuildLatencyJSON(r))
	if err != nil {
		return err
	}
	bw.Write(line)
	bw.WriteByte('\n')
	return bw.Flush()
}

func renderLatencyText(w io.Writer, r *LatencyResult, ro LatencyRender) {
	fmt.Fprintf(w, "memgate bench latency: %d records from %s\n", r.Records, ro.Data)
	fmt.Fprintf(w, "  %d distinct turns (varied past the first pass), %d scopes, episodes and beliefs; %d benchmark questions\n",
		r.Turns, latScopes, r.Questions)
	fmt.Fprintf(w, "  embedder %s; the service's vector index: %s\n", r.Embedder, r.VectorIndex)

	if r.Reused {
		fmt.Fprintf(w, "\nwrite: skipped (--reuse: the records of an earlier run); index heads: %d\n", r.Docs)
	} else {
		renderLatencyWrite(w, r)
	}
	renderLatencyRest(w, r, ro)
}

func renderLatencyWrite(w io.Writer, r *LatencyResult) {
	fmt.Fprintf(w, "\nwrite (core.Service.Write as the local operator, %d concurrent writers)\n", r.Writers)
	fmt.Fprintf(w, "  decisions:")
	for _, k := range slices.Sorted(maps.Keys(r.Decisions)) {
		fmt.Fprintf(w, " %s %d", k, r.Decisions[k])
	}
	fmt.Fprintf(w, "  (types:")
	for _, k := range slices.Sorted(maps.Keys(r.Types)) {
		fmt.Fprintf(w, " %s %d", k, r.Types[k])
	}
	fmt.Fprintf(w, ")\n")
	for _, k := range slices.Sorted(maps.Keys(r.Reasons)) {
		fmt.Fprintf(w, "    %-36s %d\n", k, r.Reasons[k])
	}
	fmt.Fprintf(w, "  quarantined (stored, not searchable): %d; index heads after writing: %d\n", r.Quarantined, r.Docs)
	chunks := fmt.Sprintf("median of %d chunks of %d", r.WriteChunks, latChunk)
	if r.WriteChunks == 0 {
		chunks = "fewer than one chunk: overall"
	}
	fmt.Fprintf(w, "  throughput %9.0f writes/s  (%s; overall %.0f/s over %.1fs)\n", r.WritePerS, chunks, r.WriteOverall, r.WriteWall.Seconds())
	if n := len(r.WriteChunkRates); n > 1 {
		fmt.Fprintf(w, "  per chunk  first %.0f/s, last %.0f/s, slowest %.0f/s\n", r.WriteChunkRates[0], r.WriteChunkRates[n-1], slices.Min(r.WriteChunkRates))
	}
	fmt.Fprintf(w, "  latency    p50 %.2fms  p95 %.2fms  p99 %.2fms  mean %.2fms\n",
		ms(r.WriteLat.P50), ms(r.WriteLat.P95), ms(r.WriteLat.P99), ms(r.WriteLat.Mean))
}

func renderLatencyRest(w io.Writer, r *LatencyResult, ro LatencyRender) {
	if r.Embedder != "none" {
		fmt.Fprintf(w, "\nembed (EmbedPending to completion)\n")
		fmt.Fprintf(w, "  %d vectors in %.1fs (%.0f vectors/s); %d vectors indexed\n", r.Embedded, r.EmbedWall.Seconds(),
			perSec(r.Embedded, r.EmbedWall), r.Vectors)
		if r.AltIndex != "" {
			fmt.Fprintf(w, "  second engine (%s) loaded over the same store in %.1fs\n", r.AltIndex, r.AltLoad.Seconds())
		}
	}

	fmt.Fprintf(w, "\nsearch (core.Service.Search, k %d; %d queries: %d benchmark questions, %d turn-derived; %d scoped to one project, %d unscoped;\n",
		r.K, r.Queries, r.Queries-r.FromTurns, r.FromTurns, r.Scoped, r.Queries-r.Scoped)
	fmt.Fprintf(w, "        single-threaded, modes interleaved, after %d warm-up queries per mode; medians of %d rounds)\n", r.Warmup, r.Rounds)
	fmt.Fprintf(w, "  %-14s %9s %9s %9s %9s %7s %6s %14s %14s\n", "mode", "p50 ms", "p95 ms", "p99 ms", "mean ms", "hits", "errors",
		"scoped p50/95", "unscoped p50/95")
	for _, m := range r.Modes {
		fmt.Fprintf(w, "  %-14s %9.2f %9.2f %9.2f %9.2f %7.1f %6d %6.2f/%-7.2f %6.2f/%-7.2f\n", m.Name, ms(m.Lat.P50), ms(m.Lat.P95), ms(m.Lat.P99),
			ms(m.Lat.Mean), m.Hits, m.Errors, ms(m.Scoped.P50), ms(m.Scoped.P95), ms(m.Unscoped.P50), ms(m.Unscoped.P95))
	}
	if r.RecallN > 0 {
		fmt.Fprintf(w, "  hnsw recall@10 vs exact (dense): %.4f over %d queries; hybrid top-10 overlap %.4f\n", r.Recall10, r.RecallN, r.Overlap10)
	}

	fmt.Fprintf(w, "\ncold start (everything closed; reopen the store, load the index as the CLI does, bootstrap check)\n")
	fmt.Fprintf(w, "  rss before reopening: %.1f MiB\n", r.BaseRSSMiB)
	fmt.Fprintf(w, "  %-8s %-9s %9s %9s %9s %9s %9s %9s %9s\n", "index", "from", "seconds", "index s", "docs", "vectors", "rss MiB", "settled", "heap MiB")
	for _, c := range r.Cold {
		for _, o := range []*ColdOpen{&c.Rebuild, c.Restore} {
			if o == nil {
				continue
			}
			from := "database"
			if o.Restored {
				from = "snapshot"
			}
			fmt.Fprintf(w, "  %-8s %-9s %9.2f %9.2f %9d %9d %9.1f %9.1f %9.1f\n", c.Mode, from, o.Took.Seconds(), o.IndexLoad.Seconds(),
				o.Docs, o.Vectors, o.RSSMiB, o.RSSSettledMiB, o.HeapMiB)
		}
		if c.Restore != nil {
			fmt.Fprintf(w, "  %-8s snapshot saved in %.2fs, %.1f MiB\n", c.Mode, c.SnapshotSave.Seconds(), mib(c.SnapshotBytes))
		}
	}
	fmt.Fprintf(w, "  (seconds: the whole open, embedder load included; index s: loading or restoring the search index;\n")
	fmt.Fprintf(w, "   rss after a GC, settled: after the runtime returned free memory too; rss_mib in the JSON line is the largest rss.\n")
	fmt.Fprintf(w, "   cold_start_s in the JSON line is the restart path: from the snapshot when there is one)\n")
	fmt.Fprintf(w, "  on disk: %.1f MiB", mib(r.DBBytes))
	for _, k := range slices.Sorted(maps.Keys(r.DBFiles)) {
		fmt.Fprintf(w, "  %s %.1f", k, mib(r.DBFiles[k]))
	}
	fmt.Fprintf(w, "\n\nwall %.1fs\n\n", r.Wall.Seconds())
}
