package maintain

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// TestGenerateSweepFigureData fills the data directory named by
// MEMGATE_MAINT_FIGURES_DIR (made by `memgate agents list` with
// MEMGATE_EMBEDDER=none) with MEMGATE_MAINT_FIGURES_N records (default
// 100,000) for the maintenance sweep figures of docs/maintenance.md:
// records of every type created over two years, some retrieved, groups
// of confirming episodes, near-duplicate and contradictory beliefs, and
// a few with an e-mail address stored while the screen was off. It is
// skipped without the variable.
func TestGenerateSweepFigureData(t *testing.T) {
	dir := os.Getenv("MEMGATE_MAINT_FIGURES_DIR")
	if dir == "" {
		t.Skip("set MEMGATE_MAINT_FIGURES_DIR to generate the sweep figure data")
	}
	n := 100_000
	if v := os.Getenv("MEMGATE_MAINT_FIGURES_N"); v != "" {
		fmt.Sscan(v, &n)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	now := time.Now().UTC()
	people := []string{"alice", "bob", "carol", "dave", "erin", "frank", "gina", "hank"}
	tools := []string{"Vim", "Emacs", "PostgreSQL", "MySQL", "Go", "Rust", "Docker", "Kubernetes"}
	const batch = 1000
	for i := 0; i < n; i += batch {
		err := st.Tx(ctx, func(tx store.Tx) error {
			for j := i; j < min(i+batch, n); j++ {
				typ := memory.Types[rng.IntN(len(memory.Types))]
				p, tl := people[rng.IntN(len(people))], tools[rng.IntN(len(tools))]
				var content string
				switch {
				case typ == memory.Episode && rng.IntN(4) == 0:
					content = fmt.Sprintf("%s uses %s for project %d", p, tl, rng.IntN(40)) // confirming groups
				case typ == memory.Belief && rng.IntN(3) == 0:
					verb := []string{"likes", "hates"}[rng.IntN(2)]
					content = fmt.Sprintf("%s %s %s %d", p, verb, tl, rng.IntN(3000)) // contradictions, duplicates
				case rng.IntN(500) == 0:
					content = fmt.Sprintf("note %d: reach %s at %s.%d@example.com", j, p, p, j)
				default:
					content = fmt.Sprintf("record %d about %s and %s: %x", j, p, tl, rng.Uint64())
				}
				created := memory.Canon(now.Add(-time.Duration(rng.Int64N(int64(730 * 24 * time.Hour)))))
				r := memory.Record{ID: memory.NewID(), Type: typ, Category: "", Content: content, ContentSHA256: memory.SHA256Hex(content),
					Metadata: []byte(`{}`), Entities: []string{"person:" + p}, Version: 1, Status: memory.Active,
					Source:     memory.Source{Agent: "gen", PrincipalID: "gen", Kind: memory.Observed, Confidence: 0.9, Evidence: []string{}},
					IngestedAt: created, Access: memory.Public, Gate: memory.GateInfo{DecisionID: memory.NewID(), Decision: "accepted", Origin: "external"},
					DecayScore: 1, Path: memory.PathFast, CreatedAt: created, UpdatedAt: created, ModifiedBy: "gen"}
				if rng.IntN(3) == 0 {
					at := memory.Canon(created.Add(time.Duration(rng.Int64N(int64(now.Sub(created)) + 1))))
					r.LastRetrievedAt, r.RetrievalCount = &at, 1
				}
				if err := tx.InsertRecord(ctx, memory.DefaultWorkspace, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("inserted %d records", n)
}
