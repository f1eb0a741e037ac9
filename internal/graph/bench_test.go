package graph

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The benchmark graph: 100,000 nodes and 500,000 edges in one workspace.
// Edge sources are uniform and targets follow a Zipf law over a shuffled
// node order, so degrees are power-law-ish (a few hubs with thousands of
// edges, most nodes with a handful). Ids are UUID-shaped; names are one to
// three words from a 3,000-word vocabulary, plus an alias on every tenth
// node. Everything comes from a fixed seed.
const (
	benchNodes = 100_000
	benchEdges = 500_000
	benchWS    = "bench"
)

type benchGraph struct {
	x       *Index
	ids     []string
	vocab   []string
	queries []string // 20-word texts
}

var (
	benchOnce sync.Once
	benchG    *benchGraph
)

func benchGraphShared(b *testing.B) *benchGraph {
	b.Helper()
	benchOnce.Do(func() { benchG = buildBenchGraph() })
	return benchG
}

func buildBenchGraph() *benchGraph {
	rng := rand.New(rand.NewPCG(42, 7))
	syll := []string{"ka", "lo", "mi", "ter", "zan", "pu", "rex", "vo", "shi", "dal", "qu", "ben", "tor", "gi", "nel", "ar"}
	seen := map[string]bool{}
	var vocab []string
	for len(vocab) < 3000 {
		var sb strings.Builder
		for range 2 + rng.IntN(3) {
			sb.WriteString(syll[rng.IntN(len(syll))])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	g := &benchGraph{x: New(), vocab: vocab}
	names := make([]string, benchNodes)
	for i := range benchNodes {
		id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
		g.ids = append(g.ids, id)
		words := make([]string, 1+rng.IntN(3))
		for j := range words {
			words[j] = vocab[rng.IntN(len(vocab))]
		}
		names[i] = strings.Join(words, " ")
		n := Node{ID: id, Workspace: benchWS, Label: "concept", Name: names[i], Key: strings.Join(words, "_") + fmt.Sprintf("_%d", i)}
		if i%10 == 0 {
			n.Aliases = []string{vocab[rng.IntN(len(vocab))] + " " + vocab[rng.IntN(len(vocab))]}
		}
		// Who may see it: most nodes are open to everyone, one in ten is
		// owned by one of 50 writers, one in twenty is operators-only.
		switch {
		case i%20 == 1:
			n.Vis = Vis{Levels: 1 << 2}
		case i%10 == 3:
			n.Vis = Vis{Levels: 1 << 1, Owners: []string{fmt.Sprintf("agent-%d", i%50)}}
		default:
			n.Vis = Vis{Levels: Public}
		}
		g.x.PutNode(n)
	}
	perm := rng.Perm(benchNodes)
	zipf := rand.NewZipf(rng, 1.2, 10, benchNodes-1)
	rels := RelationList()
	for i := range benchEdges {
		from := rng.IntN(benchNodes)
		to := perm[zipf.Uint64()]
		if to == from {
			to = (to + 1) % benchNodes
		}
		g.x.PutEdge(Edge{ID: fmt.Sprintf("e%07d", i), Workspace: benchWS, From: g.ids[from], To: g.ids[to],
			Relation: rels[rng.IntN(len(rels))], Weight: 0.5 + rng.Float64()})
	}
	for range 64 {
		words := make([]string, 0, 20)
		for len(words) < 20 {
			if rng.IntN(3) == 0 {
				words = append(words, strings.Fields(names[rng.IntN(benchNodes)])...)
			} else {
				words = append(words, []string{"the", "service", "failed", "after", "we", "deployed", "it", "to", "production,"}[rng.IntN(9)])
			}
		}
		g.queries = append(g.queries, strings.Join(words[:20], " "))
	}
	return g
}

// latencies samples the wall-clock and thread-CPU time of every call. On a
// shared machine the wall clock includes waiting for a core; the CPU time
// is the call's own cost.
type latencies struct {
	wall, cpu []time.Duration
	t0, c0    time.Time
	cpu0      time.Duration
	cpuOK     bool
}

func newLatencies() *latencies {
	runtime.LockOSThread() // undone when the benchmark goroutine exits
	_, ok := threadCPU()
	return &latencies{cpuOK: ok}
}

func (l *latencies) start() {
	if l.cpuOK {
		l.cpu0, _ = threadCPU()
	}
	l.t0 = time.Now()
}

func (l *latencies) stop() {
	l.wall = append(l.wall, time.Since(l.t0))
	if l.cpuOK {
		c, _ := threadCPU()
		l.cpu = append(l.cpu, c-l.cpu0)
	}
}

func (l *latencies) n() int { return len(l.wall) }

// report reports the 50th and 95th percentiles.
func (l *latencies) report(b *testing.B) {
	pct := func(d []time.Duration, p int) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, len(d)*p/100)])
	}
	if len(l.wall) > 0 {
		b.ReportMetric(pct(l.wall, 50), "p50-ns")
		b.ReportMetric(pct(l.wall, 95), "p95-ns")
	}
	if len(l.cpu) > 0 {
		b.ReportMetric(pct(l.cpu, 50), "p50-cpu-ns")
		b.ReportMetric(pct(l.cpu, 95), "p95-cpu-ns")
	}
}

func BenchmarkNeighborsDepth2(b *testing.B) {
	benchNeighborsDepth2(b, nil)
}

// BenchmarkNeighborsDepth2Viewer is BenchmarkNeighborsDepth2 on behalf of
// an agent: every node and edge crossed is checked against its
// visibility.
func BenchmarkNeighborsDepth2Viewer(b *testing.B) {
	benchNeighborsDepth2(b, &Viewer{Levels: Public, Owner: "agent-3"})
}

func benchNeighborsDepth2(b *testing.B, v *Viewer) {
	g := benchGraphShared(b)
	for _, limit := range []int{100, 1000} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			lat := newLatencies()
			hops := 0
			b.ReportAllocs()
			for b.Loop() {
				q := NeighborQuery{Workspace: benchWS, Node: g.ids[rng.IntN(benchNodes)], Depth: 2, Limit: limit, Viewer: v}
				lat.start()
				hs, err := g.x.Neighbors(q)
				lat.stop()
				if err != nil && !(v != nil && err == ErrNotFound) { // a start node the viewer may not see
					b.Fatal(err)
				}
				hops += len(hs)
			}
			lat.report(b)
			b.ReportMetric(float64(hops)/float64(lat.n()), "hops/op")
		})
	}
}

func BenchmarkPPRSeed(b *testing.B) {
	g := benchGraphShared(b)
	for _, eps := range []float64{DefaultPPREpsilon, 1e-5} {
		b.Run(fmt.Sprintf("eps=%g", eps), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, 2))
			lat := newLatencies()
			scored, mass := 0, 0.0
			b.ReportAllocs()
			for b.Loop() {
				seeds := map[string]float64{}
				for range 1 + rng.IntN(3) {
					seeds[g.ids[rng.IntN(benchNodes)]] = 1
				}
				lat.start()
				s := g.x.PPR(benchWS, seeds, PPROptions{Epsilon: eps})
				lat.stop()
				scored += len(s)
				for _, v := range s {
					mass += v
				}
			}
			lat.report(b)
			b.ReportMetric(float64(scored)/float64(lat.n()), "nodes/op")
			b.ReportMetric(mass/float64(lat.n()), "mass/op")
		})
	}
}

func BenchmarkRecognise(b *testing.B) {
	g := benchGraphShared(b)
	lat := newLatencies()
	found := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		lat.start()
		ids := g.x.Recognise(benchWS, g.queries[i%len(g.queries)])
		lat.stop()
		found += len(ids)
	}
	lat.report(b)
	b.ReportMetric(float64(found)/float64(lat.n()), "ids/op")
}

func BenchmarkPath(b *testing.B) {
	g := benchGraphShared(b)
	rng := rand.New(rand.NewPCG(3, 3))
	lat := newLatencies()
	found := 0
	b.ReportAllocs()
	for b.Loop() {
		from, to := g.ids[rng.IntN(benchNodes)], g.ids[rng.IntN(benchNodes)]
		lat.start()
		hs, ok := g.x.Path(benchWS, from, to, 6, nil)
		lat.stop()
		if ok {
			found++
		}
		_ = hs
	}
	lat.report(b)
	b.ReportMetric(float64(found)/float64(lat.n()), "found/op")
}

// BenchmarkBuild builds the graph and reports the heap it holds per edge
// (nodes, names and phrase index included) and per node.
func BenchmarkBuild(b *testing.B) {
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		g := buildBenchGraph()
		runtime.GC()
		runtime.ReadMemStats(&after)
		queries := g.queries
		g.ids, g.vocab, g.queries = nil, nil, nil // count the index only
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := float64(after.HeapAlloc - before.HeapAlloc)
		b.ReportMetric(heap/benchEdges, "heap-B/edge")
		b.ReportMetric(heap/(1<<20), "heap-MiB")
		runtime.KeepAlive(g.x)
		_ = queries
	}
}
