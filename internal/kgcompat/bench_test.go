package kgcompat

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/gate"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// Benchmarks of the knowledge-graph drop-in (issue 14): create_entities
// in batches of 100, and search_nodes and paged read_graph at 10,000 and
// 100,000 entities. Run them with
//
//	go test ./internal/kgcompat -run '^$' -bench KG -benchtime 200x

// kgBenchService is a service over a fresh SQLite database, as kgService,
// for benchmarks.
func kgBenchService(b testing.TB) (*Service, memory.Principal) {
	b.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	ix := retrieve.New(retrieve.Options{})
	if _, err := ix.Load(ctx, st); err != nil {
		b.Fatal(err)
	}
	pol := gate.Default()
	pol.RateLimit.Operator, pol.RateLimit.Agent = gate.Bucket{}, gate.Bucket{}
	svc := core.New(core.Options{Store: st, Policy: pol, Index: ix})
	if _, _, err := svc.Bootstrap(ctx); err != nil {
		b.Fatal(err)
	}
	s := New(svc)
	return s, core.LocalOperator(memory.DefaultWorkspace)
}

// kgBenchWords make the corpus's observations: short statements about
// people, places and projects, so keyword and question queries hit a few.
var kgBenchWords = []string{"payments", "search", "billing", "onboarding", "mobile", "kernel", "storage", "network",
	"Lisbon", "Berlin", "Osaka", "Lima", "Nairobi", "Oslo", "Toronto", "Hanoi"}

// kgBenchEntities returns entities [from, to) of the benchmark corpus:
// three observations each.
func kgBenchEntities(from, to int) []Entity {
	out := make([]Entity, 0, to-from)
	for i := from; i < to; i++ {
		w := kgBenchWords[i%len(kgBenchWords)]
		city := kgBenchWords[8+(i/7)%8]
		out = append(out, Entity{Name: "person " + strconv.Itoa(i), EntityType: []string{"person", "project", "team"}[i%3],
			Observations: []string{
				fmt.Sprintf("works on the %s team since %d", w, 2000+i%25),
				fmt.Sprintf("lives in %s and speaks %d languages", city, 1+i%4),
				fmt.Sprintf("ticket %d: reviewed the %s design document", i, kgBenchWords[(i/3)%8]),
			}})
	}
	return out
}

// kgFill creates n entities in batches of 100.
func kgFill(b testing.TB, s *Service, p memory.Principal, n int) {
	b.Helper()
	for i := 0; i < n; i += 100 {
		if _, err := s.CreateEntities(context.Background(), p, kgBenchEntities(i, min(i+100, n))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKGCreateEntities(b *testing.B) {
	s, p := kgBenchService(b)
	benchKGCreate(b, s, p)
}

// BenchmarkKGCreateEntitiesAgent writes as a standard agent, the principal
// scripts/mcp-bench.sh drives memgate as.
func BenchmarkKGCreateEntitiesAgent(b *testing.B) {
	s, op := kgBenchService(b)
	cp, err := s.svc.CreateAgent(context.Background(), op, "bench", memory.Standard)
	if err != nil {
		b.Fatal(err)
	}
	benchKGCreate(b, s, cp.Principal)
}

func benchKGCreate(b *testing.B, s *Service, p memory.Principal) {
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.CreateEntities(context.Background(), p, kgBenchEntities(i*100, i*100+100)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(100*b.N)/b.Elapsed().Seconds(), "entities/s")
}

// kgBenchQueries are a keyword, a name and a question.
var kgBenchQueries = []string{"osaka", "person 4242", "who reviewed the kernel design document?"}

func benchKGSearch(b *testing.B, n int) {
	s, p := kgBenchService(b)
	kgFill(b, s, p, n)
	ctx := context.Background()
	for _, q := range kgBenchQueries {
		b.Run(q, func(b *testing.B) {
			// The first call loads the index.
			if _, err := s.SearchNodes(ctx, p, q, 0); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.SearchNodes(ctx, p, q, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("read_graph page of 100", func(b *testing.B) {
		cursor := ""
		for i := 0; i < b.N; i++ {
			g, err := s.ReadGraphPage(ctx, p, 100, cursor)
			if err != nil {
				b.Fatal(err)
			}
			cursor = g.Next
		}
	})
}

func BenchmarkKGSearch10k(b *testing.B)  { benchKGSearch(b, 10_000) }
func BenchmarkKGSearch100k(b *testing.B) { benchKGSearch(b, 100_000) }
