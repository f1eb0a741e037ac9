package bench

// The latency benchmark's run: RunLatency, the cold start, the write
// phase and the timed searches.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/fault"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
)

// ---------------------------------------------------------------------
// The run.

// RunLatency runs the latency benchmark over the turns and questions of
// ds (a LongMemEval or LoCoMo dataset) in the data directory o.Open opens,
// which should be empty.
func RunLatency(ctx context.Context, ds *Dataset, o LatencyOptions) (*LatencyResult, error) {
	start := time.Now()
	if err := o.defaults(); err != nil {
		return nil, err
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

	if n := prim.Index.Stats().Docs; n > 0 && !o.Reuse {
		return nil, fmt.Errorf("bench: latency: the store already holds %d records; the benchmark writes into an empty one (or pass --reuse)", n)
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
		if err := latEmbed(ctx, prim.Service, o, res); err != nil {
			return nil, err
		}
	}
	st := prim.Index.Stats()
	res.Vectors, res.VectorIndex = st.Vectors, st.VectorIndex
	if err := heapProfile(o.MemProfileDir, "heap-search.pprof"); err != nil {
		return nil, err
	}

	// 4. Search phase.
	if err := latSearchPhase(ctx, prim.Service, emb, corpus, o, res); err != nil {
		return nil, err
	}

	// 5. Cold start, with the memory of the run so far handed back.
	closed = true
	if err := prim.Close(); err != nil {
		return nil, fmt.Errorf("bench: closing: %w", err)
	}
	prim = nil
	corpus = nil
	if err := latColdStarts(ctx, o, res); err != nil {
		return nil, err
	}
	res.Wall = time.Since(start)
	return res, nil
}

// latSearchPhase times the searches of the service as opened, and of a
// second engine with the other vector index over the same store behind a
// second service.
func latSearchPhase(ctx context.Context, prim *core.Service, emb embed.Embedder, corpus *latCorpus, o LatencyOptions, res *LatencyResult) error {
	services := map[string]*core.Service{}
	services[res.VectorIndex] = prim
	if emb != nil {
		alt, err := latAltService(ctx, prim, emb, o, res)
		if err != nil {
			return err
		}
		services[res.AltIndex] = alt
	}
	stop, err := profile(o.ProfileDir, "search.pprof")
	if err != nil {
		return err
	}
	if err := latSearch(ctx, services, emb != nil, corpus, o, res); err != nil {
		stop()
		return err
	}
	return stop()
}

// latColdStarts times a cold start in each vector mode, from a process
// holding nothing of the run but its results.
func latColdStarts(ctx context.Context, o LatencyOptions, res *LatencyResult) error {
	runtime.GC()
	debug.FreeOSMemory()
	res.BaseRSSMiB = procStatusMiB("VmRSS")
	stop, err := profile(o.ProfileDir, "load.pprof")
	if err != nil {
		return err
	}
	for _, mode := range []retrieve.VectorMode{retrieve.VectorExact, retrieve.VectorApprox} {
		cs, err := latColdStart(ctx, o, mode, res)
		if err != nil {
			stop()
			return err
		}
		res.Cold = append(res.Cold, cs)
	}
	return stop()
}

// defaults fills RunLatency's unset options and checks the required ones.
func (o *LatencyOptions) defaults() error {
	if o.Records <= 0 {
		return errors.New("bench: latency: records must be positive")
	}
	if o.Open == nil {
		return errors.New("bench: latency: no opener")
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
	return nil
}

// latEmbed computes every pending vector (phase 3), timing each call.
func latEmbed(ctx context.Context, svc *core.Service, o LatencyOptions, res *LatencyResult) error {
	stop, err := profile(o.ProfileDir, "embed.pprof")
	if err != nil {
		return err
	}
	t0 := time.Now()
	bar := startProgress(o.Progress, o.ProgressLines, "embed", res.Docs)
	for {
		tc := time.Now()
		n, err := svc.EmbedPending(ctx, 4096)
		if err != nil {
			bar.finish()
			stop()
			return fmt.Errorf("bench: embedding: %w", err)
		}
		if n == 0 {
			break
		}
		res.Embedded += n
		res.EmbedCalls = append(res.EmbedCalls, EmbedCall{Vectors: n, Took: time.Since(tc)})
		bar.add(n)
	}
	bar.finish()
	res.EmbedWall = time.Since(t0)
	return stop()
}

// latAltService loads a second engine with the other vector index over
// the same store, behind a second service (phase 4 searches both).
func latAltService(ctx context.Context, prim *core.Service, emb embed.Embedder, o LatencyOptions, res *LatencyResult) (*core.Service, error) {
	alt := retrieve.VectorApprox
	if res.VectorIndex == "hnsw" {
		alt = retrieve.VectorExact
	}
	t0 := time.Now()
	ix := retrieve.New(retrieve.Options{Embedder: emb, Vectors: alt})
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "bench: loading a second search index (%s) over the store...\n", alt)
	}
	if _, err := ix.Load(ctx, prim.Store()); err != nil {
		return nil, fmt.Errorf("bench: loading the %s index: %w", alt, err)
	}
	res.AltLoad = time.Since(t0)
	res.AltIndex = ix.Stats().VectorIndex
	return core.New(core.Options{Store: prim.Store(), Policy: prim.Policy(), Index: ix}), nil
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
	jobs := latWriteJobs(ctx, c, o.Records)
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
				if fatal := tallyWrite(res, wr, err); fatal {
					if firstErr == nil {
						firstErr = fmt.Errorf("bench: writing record %d: %w", j.i, err)
						cancel()
					}
					mu.Unlock()
					return
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
	latWriteRates(res, start, marks)
	return nil
}

// latWriteJobs feeds the texts of records 0..n-1 to the writers until ctx
// ends.
func latWriteJobs(ctx context.Context, c *latCorpus, n int) <-chan writeJob {
	jobs := make(chan writeJob, 256)
	go func() {
		defer close(jobs)
		for i := range n {
			select {
			case jobs <- writeJob{i, c.text(i)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return jobs
}

// tallyWrite counts the outcome of one write in res: the gate's decision
// and reason, or the rejection's. fatal is an error that ends the run (the
// store failing, not the gate refusing). The caller holds res's lock.
func tallyWrite(res *LatencyResult, wr core.WriteResult, err error) (fatal bool) {
	if err != nil {
		fe := fault.As(err)
		if fe.Code == fault.Internal || fe.Code == fault.Unavailable {
			return true
		}
		reason, _ := fe.Details["reason"].(string)
		if reason == "" {
			reason = string(fe.Code)
		}
		res.Decisions[memory.DecisionRejected]++
		res.Reasons[memory.DecisionRejected+"/"+reason]++
		return false
	}
	res.Decisions[wr.Decision]++
	if wr.Decision != memory.DecisionAccepted {
		res.Reasons[wr.Decision+"/"+wr.Reason]++
	}
	if wr.Record.Status == memory.Quarantined {
		res.Quarantined++
	}
	return false
}

// latWriteRates sets the write rate of res: the median of the rates of
// the latChunk-write chunks that ended at marks (the overall rate when
// the run was shorter than a chunk).
func latWriteRates(res *LatencyResult, start time.Time, marks []time.Time) {
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
}

type latMode struct {
	name    string
	index   string // vector index of the service it runs on
	signals []string
}

// latModes are the search modes timed: lexical, and dense and hybrid on
// each vector index when there is an embedder (else hybrid on vectorIndex,
// lexical only).
func latModes(dense bool, vectorIndex string) []latMode {
	modes := []latMode{{"lexical", vectorIndex, []string{retrieve.SignalLexical}}}
	if dense {
		for _, ix := range []string{"exact", "hnsw"} {
			modes = append(modes, latMode{"dense_" + ix, ix, []string{retrieve.SignalDense}})
		}
		for _, ix := range []string{"exact", "hnsw"} {
			modes = append(modes, latMode{"hybrid_" + ix, ix, nil})
		}
	} else {
		modes = append(modes, latMode{"hybrid", vectorIndex, nil}) // lexical only: no embedder
	}
	return modes
}

// latSearcher runs one search of a mode, timed.
type latSearcher struct {
	services map[string]*core.Service
	o        LatencyOptions
}

func (ls latSearcher) search(ctx context.Context, m latMode, q latQuery) (core.SearchResponse, time.Duration, error) {
	req := core.SearchRequest{Query: q.text, K: ls.o.K, Signals: m.signals}
	if q.project != "" {
		req.Scope = memory.Scope{AppID: AppID, ProjectID: q.project}
	}
	var sr core.SearchResponse
	var err error
	t0 := time.Now()
	pprof.Do(ctx, pprof.Labels("mode", m.name), func(ctx context.Context) {
		sr, err = ls.services[m.index].Search(ctx, ls.o.Principal, req)
	})
	return sr, time.Since(t0), err
}

// latTimings are the measurements of the timed rounds, per mode.
type latTimings struct {
	lats             [][][]time.Duration // mode → round → query
	scoped, unscoped [][]time.Duration   // mode → pooled over rounds
	ids              [][][]string        // mode → query → result ids; first round only
	hits             []int
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
	modes := latModes(dense, res.VectorIndex)
	ls := latSearcher{services, o}
	// Warm-up: each mode's first queries, untimed.
	for _, m := range modes {
		for i := range min(o.Warmup, len(qs)) {
			if _, _, err := ls.search(ctx, m, qs[i]); err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	res.Modes = make([]ModeResult, len(modes))
	res.Rounds = o.Rounds
	t, err := latRounds(ctx, ls, modes, qs, o, res)
	if err != nil {
		return err
	}
	for i, m := range modes {
		mr := &res.Modes[i]
		mr.Name, mr.Signals = m.name, m.signals
		var per []Percentiles
		for _, l := range t.lats[i] {
			per = append(per, summarise(l))
		}
		mr.Lat = medianPercentiles(per)
		mr.Scoped, mr.Unscoped = summarise(t.scoped[i]), summarise(t.unscoped[i])
		if len(qs) > 0 {
			mr.Hits = float64(t.hits[i]) / float64(len(qs))
		}
	}
	res.Recall10, res.RecallN = topOverlap(modes, t.ids, "dense_exact", "dense_hnsw")
	res.Overlap10, _ = topOverlap(modes, t.ids, "hybrid_exact", "hybrid_hnsw")
	return nil
}

// latRounds runs every query in every mode, o.Rounds times; a mode's
// figures are the medians of its per-round figures. The first round's
// errors go into res.Modes.
func latRounds(ctx context.Context, ls latSearcher, modes []latMode, qs []latQuery, o LatencyOptions, res *LatencyResult) (*latTimings, error) {
	t := &latTimings{lats: make([][][]time.Duration, len(modes)),
		scoped: make([][]time.Duration, len(modes)), unscoped: make([][]time.Duration, len(modes)),
		ids: make([][][]string, len(modes)), hits: make([]int, len(modes))}
	bar := startProgress(o.Progress, o.ProgressLines, "search", o.Rounds*len(qs)*len(modes))
	for round := range o.Rounds {
		for mi := range modes {
			t.lats[mi] = append(t.lats[mi], make([]time.Duration, 0, len(qs)))
		}
		for qi, q := range qs {
			for r := range modes {
				mi := (qi + r + round) % len(modes)
				m := modes[mi]
				sr, d, err := ls.search(ctx, m, q)
				if ctx.Err() != nil {
					bar.finish()
					return nil, ctx.Err()
				}
				t.lats[mi][round] = append(t.lats[mi][round], d)
				if q.project != "" {
					t.scoped[mi] = append(t.scoped[mi], d)
				} else {
					t.unscoped[mi] = append(t.unscoped[mi], d)
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
				t.ids[mi] = append(t.ids[mi], got)
				t.hits[mi] += len(got)
			}
		}
	}
	bar.finish()
	return t, nil
}

// topOverlap is the mean fraction of mode exact's top 10 that mode approx
// also found, over the queries exact found something for, and how many
// those were.
func topOverlap(modes []latMode, ids [][][]string, exact, approx string) (float64, int) {
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
