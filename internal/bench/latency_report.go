package bench

// The latency benchmark's report: the JSON summary line and the printed
// tables.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
)

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
		if first, last, ok := r.embedEnds(); ok {
			j.Embed["first_call_per_s"], j.Embed["last_full_call_per_s"] = round4(first), round4(last)
		}
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
		if first, last, ok := r.embedEnds(); ok {
			fmt.Fprintf(w, "  embedding job calls of 4,096: first %.0f vectors/s, last %.0f vectors/s\n", first, last)
		}
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

// embedEnds are the rates of the embedding job's first call and of its
// last call that embedded a full batch (the final call embeds the rest).
func (r *LatencyResult) embedEnds() (first, last float64, ok bool) {
	full := r.EmbedCalls
	for len(full) > 1 && full[len(full)-1].Vectors < full[0].Vectors {
		full = full[:len(full)-1]
	}
	if len(full) < 2 {
		return 0, 0, false
	}
	a, b := full[0], full[len(full)-1]
	return perSec(a.Vectors, a.Took), perSec(b.Vectors, b.Took), true
}
