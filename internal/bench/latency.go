package bench

// The latency benchmark (`memgate bench latency`): it fills a data
// directory with N records made from real conversation turns through the
// service's write path, embeds them, times searches through the service's
// search path with the exact and the approximate vector index, and times a
// cold start. Unlike the retrieval benchmarks it scores speed, not recall.

import (
	"context"
	"io"
	"slices"
	"time"

	"github.com/memgate/memgate/internal/core"
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
	// EmbedCalls are the embedding job's calls (4,096 records each but
	// the last), first to last: a job whose cost grew with the records
	// embedded already shows it as falling rates.
	EmbedCalls []EmbedCall
	Vectors    int

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

// EmbedCall is one call of the embedding job in the latency bench.
type EmbedCall struct {
	Vectors int
	Took    time.Duration
}
