package vector

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Benchmark data: 100-d clustered synthetic embeddings, 1,000 Gaussian
// clusters (noise 1.0 relative to the unit centroids, normalised), and 200
// held-out queries from the same mixture. The 1,000,000-vector runs are
// gated behind MEMGATE_BENCH_LARGE=1 because building takes minutes; run
// them with a long -timeout, e.g.
//
//	MEMGATE_BENCH_LARGE=1 go test -run '^$' -bench 'HNSW' -benchtime 1x -timeout 2h ./internal/vector/
const (
	benchDim      = 100
	benchClusters = 1000
	benchNoise    = 1.0
	benchQueries  = 200
	benchK        = 10
)

var benchSizes = []int{100_000, 1_000_000}

// gate skips the large sizes unless MEMGATE_BENCH_LARGE=1.
func gate(b *testing.B, n int) {
	if n >= 1_000_000 && os.Getenv("MEMGATE_BENCH_LARGE") != "1" {
		b.Skipf("%s skipped: building takes minutes; set MEMGATE_BENCH_LARGE=1 (and a long -timeout) to run it", sizeName(n))
	}
}

func sizeName(n int) string {
	if n%1_000_000 == 0 {
		return fmt.Sprintf("n=%dM", n/1_000_000)
	}
	return fmt.Sprintf("n=%dk", n/1000)
}

var benchMixture = sync.OnceValue(func() *mixture { return newMixture(benchDim, benchClusters, benchNoise, 1001) })

// benchSet is the data, queries and exact top-k for one size; the HNSW
// index built on it is cached too (by the build benchmark or on first use).
type benchSet struct {
	n       int
	data    []float32
	queries []float32
	truth   [][]Hit

	mu       sync.Mutex
	hnsw     *HNSW
	stats    buildStats
	filtered map[int][][]Hit // allow percentage → exact filtered top k
}

type buildStats struct {
	elapsed   time.Duration
	cpu       time.Duration // CPU time of the building thread
	heapMB    float64       // live heap growth caused by the index
	modelMB   float64       // the index's own accounting of its storage
	rssMB     float64       // process resident set after the build (data and truth included)
	heapTotal float64
}

var (
	benchSetsMu sync.Mutex
	benchSets   = map[int]*benchSet{}
)

func getBenchSet(b *testing.B, n int) *benchSet {
	benchSetsMu.Lock()
	defer benchSetsMu.Unlock()
	if s := benchSets[n]; s != nil {
		return s
	}
	m := benchMixture()
	s := &benchSet{n: n, data: m.sample(n, uint64(n)), queries: m.sample(benchQueries, 7)}
	x := NewExact(benchDim)
	for i := range n {
		x.Add(uint32(i), row(s.data, benchDim, i))
	}
	for i := range benchQueries {
		s.truth = append(s.truth, x.Search(row(s.queries, benchDim, i), benchK, nil))
	}
	benchSets[n] = s
	return s
}

// buildHNSW builds the default-config index over the set and measures it.
func (s *benchSet) buildHNSW() (*HNSW, buildStats) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, _ := threadCPU()
	start := time.Now()
	h := NewHNSW(benchDim, HNSWConfig{Seed: 1})
	for i := range s.n {
		h.Add(uint32(i), row(s.data, benchDim, i))
	}
	st := buildStats{elapsed: time.Since(start)}
	if c1, ok := threadCPU(); ok {
		st.cpu = c1 - c0
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	st.heapMB = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / 1e6
	st.heapTotal = float64(after.HeapAlloc) / 1e6
	st.modelMB = float64(h.footprint()) / 1e6
	st.rssMB = rssMB()
	return h, st
}

func (s *benchSet) index(b *testing.B) *HNSW {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hnsw == nil {
		s.hnsw, s.stats = s.buildHNSW()
		s.logBuild(b)
		s.saveSnapshot(b)
	}
	return s.hnsw
}

// filteredTruth returns (computing once) the exact top k of every query
// among the vectors allow accepts, by a full scan of the index's vectors.
func (s *benchSet) filteredTruth(pct int, allow Allow) [][]Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.filtered[pct]; ok {
		return t
	}
	if s.filtered == nil {
		s.filtered = map[int][][]Hit{}
	}
	var t [][]Hit
	for i := range benchQueries {
		t = append(t, s.hnsw.scan(row(s.queries, benchDim, i), benchK, allow))
	}
	s.filtered[pct] = t
	return t
}

// saveSnapshot writes the index to $MEMGATE_BENCH_SNAPSHOT_DIR/hnsw-<size>.snap
// when that variable is set, for TestSnapshotFootprint to load in a fresh
// process.
func (s *benchSet) saveSnapshot(b *testing.B) {
	dir := os.Getenv("MEMGATE_BENCH_SNAPSHOT_DIR")
	if dir == "" {
		return
	}
	path := filepath.Join(dir, "hnsw-"+strings.TrimPrefix(sizeName(s.n), "n=")+".snap")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	w := bufio.NewWriterSize(f, 1<<20)
	n, err := s.hnsw.WriteTo(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: snapshot %s, %.0f MB, written in %v", sizeName(s.n), path, float64(n)/1e6, time.Since(start).Round(time.Millisecond))
}

// TestSnapshotFootprint loads a snapshot saved by the benchmarks (see
// saveSnapshot) in a process holding nothing else, and reports load time,
// heap and resident set: the memory the index itself needs. Skipped unless
// MEMGATE_BENCH_SNAPSHOT=path is set.
func TestSnapshotFootprint(t *testing.T) {
	path := os.Getenv("MEMGATE_BENCH_SNAPSHOT")
	if path == "" {
		t.Skip("set MEMGATE_BENCH_SNAPSHOT to a snapshot written with MEMGATE_BENCH_SNAPSHOT_DIR")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	rss0 := rssMB()
	start := time.Now()
	h, err := ReadHNSW(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	load := time.Since(start)
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%s: %d vectors loaded in %v; heap %.0f MB (own accounting %.0f MB); RSS %.0f MB (%.0f MB before loading)",
		path, h.Len(), load.Round(time.Millisecond), float64(ms.HeapAlloc)/1e6, float64(h.footprint())/1e6, rssMB(), rss0)
	q := benchMixture().sample(1, 7)
	if got := h.Search(q, benchK, nil); len(got) != benchK {
		t.Fatalf("search after load: %v", got)
	}
}

func (s *benchSet) logBuild(b *testing.B) {
	st := s.stats
	b.Logf("%s: built in %v (%.0f inserts/s, %v CPU); index heap %.0f MB (own accounting %.0f MB); process heap %.0f MB, RSS %.0f MB",
		sizeName(s.n), st.elapsed.Round(time.Millisecond), float64(s.n)/st.elapsed.Seconds(), st.cpu.Round(time.Millisecond), st.heapMB, st.modelMB, st.heapTotal, st.rssMB)
}

// rssMB reads the resident set size from /proc (0 where unavailable).
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1e3
		}
	}
	return 0
}

// latencies runs b.N searches, cycling through the queries, and reports the
// median and 95th percentile wall-clock latency in milliseconds, and (on
// Linux) the 95th percentile of the search thread's CPU time, which is what
// the latency would be on an otherwise idle core.
func latencies(b *testing.B, queries []float32, search func(q []float32) []Hit) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	wall := make([]time.Duration, 0, b.N)
	cpu := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := row(queries, benchDim, i%benchQueries)
		c0, ok := threadCPU()
		t0 := time.Now()
		search(q)
		wall = append(wall, time.Since(t0))
		if c1, _ := threadCPU(); ok {
			cpu = append(cpu, c1-c0)
		}
	}
	b.StopTimer()
	b.ReportMetric(percentileMS(wall, 0.5), "p50-ms")
	b.ReportMetric(percentileMS(wall, 0.95), "p95-ms")
	if len(cpu) > 0 {
		b.ReportMetric(percentileMS(cpu, 0.95), "p95-cpu-ms")
	}
}

func percentileMS(d []time.Duration, p float64) float64 {
	slices.Sort(d)
	return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1e6
}

func BenchmarkExactSearch100k(b *testing.B) {
	s := getBenchSet(b, 100_000)
	x := NewExact(benchDim)
	for i := range s.n {
		x.Add(uint32(i), row(s.data, benchDim, i))
	}
	latencies(b, s.queries, func(q []float32) []Hit { return x.Search(q, benchK, nil) })
}

// BenchmarkHNSWBuild builds the default-config index (M 16, efConstruction
// 200) from scratch and reports inserts/s and the index's heap footprint.
// One build takes longer than the default -benchtime, so b.N is 1. The
// first index built is kept for BenchmarkHNSWSearch.
func BenchmarkHNSWBuild(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			gate(b, n)
			s := getBenchSet(b, n)
			b.ResetTimer()
			var st buildStats
			for range b.N {
				var h *HNSW
				h, st = s.buildHNSW()
				s.mu.Lock()
				if s.hnsw == nil {
					s.hnsw, s.stats = h, st
				}
				s.mu.Unlock()
			}
			b.StopTimer()
			b.ReportMetric(float64(n)/st.elapsed.Seconds(), "inserts/s")
			b.ReportMetric(st.elapsed.Seconds(), "build-s")
			b.ReportMetric(st.heapMB, "index-heap-MB")
			b.ReportMetric(st.rssMB, "rss-MB")
			if st.cpu > 0 {
				b.ReportMetric(st.cpu.Seconds(), "build-cpu-s")
			}
		})
	}
}

// BenchmarkHNSWSearch measures single-threaded top-10 search latency and
// recall@10 against the exact top 10 over 200 held-out queries, at a range
// of efSearch values (MEMGATE_BENCH_EF=16,32,... to choose them).
func BenchmarkHNSWSearch(b *testing.B) {
	efs := []int{16, 24, 32, 48, 64, 96, 128, 192, 256}
	if v := os.Getenv("MEMGATE_BENCH_EF"); v != "" {
		efs = efs[:0]
		for _, f := range strings.Split(v, ",") {
			ef, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("MEMGATE_BENCH_EF: %v", err)
			}
			efs = append(efs, ef)
		}
	}
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			gate(b, n)
			s := getBenchSet(b, n)
			h := s.index(b)
			for _, ef := range efs {
				b.Run(fmt.Sprintf("ef=%d", ef), func(b *testing.B) {
					h.SetEfSearch(ef)
					hit, total := 0, 0
					for i := range benchQueries {
						a, t := recallAt(h.Search(row(s.queries, benchDim, i), benchK, nil), s.truth[i])
						hit += a
						total += t
					}
					latencies(b, s.queries, func(q []float32) []Hit { return h.Search(q, benchK, nil) })
					b.ReportMetric(float64(hit)/float64(total), "recall@10")
				})
			}
		})
	}
}

// BenchmarkHNSWSearchFiltered measures top-10 search at the default
// efSearch when an allow predicate accepts 1%, 10% or 50% of the keys, with
// recall@10 against an exact scan of the allowed vectors.
func BenchmarkHNSWSearchFiltered(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			gate(b, n)
			s := getBenchSet(b, n)
			h := s.index(b)
			h.SetEfSearch(defaultEfSearch)
			for _, pct := range []int{1, 10, 50} {
				allow := func(k uint32) bool { return int(k*2654435761>>7)%100 < pct }
				truth := s.filteredTruth(pct, allow)
				b.Run(fmt.Sprintf("allow=%d%%", pct), func(b *testing.B) {
					hit, total := 0, 0
					for i := range benchQueries {
						a, t := recallAt(h.Search(row(s.queries, benchDim, i), benchK, allow), truth[i])
						hit += a
						total += t
					}
					latencies(b, s.queries, func(q []float32) []Hit { return h.Search(q, benchK, allow) })
					b.ReportMetric(float64(hit)/float64(total), "recall@10")
				})
			}
		})
	}
}
