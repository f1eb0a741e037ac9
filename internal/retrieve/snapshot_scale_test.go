package retrieve

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/embed"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/store/storetest"
)

// ---- scale measurement ----------------------------------------------------------

// TestSnapshotScale measures snapshots at scale; it runs only when
// MEMGATE_SNAPSHOT_SCALE is set (a record count). MEMGATE_SNAPSHOT_DIR
// holds the database and the snapshot across phases; MEMGATE_SNAPSHOT_PHASE
// is "build" (create the database if absent: synthetic short texts with
// 100-dimensional vectors; time Load and SaveSnapshot; then write changes
// for the next phase to catch up on), "restore" (a fresh process: open
// the database and Restore, as serve starts) or "save" (restore, then time
// WriteSnapshot and SaveSnapshot, and how long a write waits for a save).
// MEMGATE_SNAPSHOT_VECTORS is exact (default) or hnsw. Peak RSS is the
// process's VmHWM.
func TestSnapshotScale(t *testing.T) {
	n := 0
	fmt.Sscan(os.Getenv("MEMGATE_SNAPSHOT_SCALE"), &n)
	if n <= 0 {
		t.Skip("set MEMGATE_SNAPSHOT_SCALE to a record count to measure snapshots at scale")
	}
	dir := os.Getenv("MEMGATE_SNAPSHOT_DIR")
	if dir == "" {
		t.Fatal("set MEMGATE_SNAPSHOT_DIR")
	}
	mode := VectorMode(os.Getenv("MEMGATE_SNAPSHOT_VECTORS"))
	if mode == "" {
		mode = VectorExact
	}
	emb := hashEmbedder{"test:scale100", 100}
	opts := Options{Embedder: emb, Vectors: mode}
	ctx := context.Background()
	dbPath, snap := filepath.Join(dir, "memgate.db"), filepath.Join(dir, "index.snapshot")
	start := time.Now()
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	opened := time.Since(start)
	switch os.Getenv("MEMGATE_SNAPSHOT_PHASE") {
	case "build":
		if head, _ := st.ChangeHead(ctx); head == 0 {
			t0 := time.Now()
			scaleFill(t, st, emb, n)
			t.Logf("database: %d records with vectors written in %v", n, time.Since(t0).Round(time.Millisecond))
		}
		e := New(opts)
		ls, err := e.Load(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Load (the path a snapshot replaces): %d records, %d vectors: lexical+docs %v, vectors %v, total %v; rss %.0f MB",
			ls.Records, ls.Vectors, ls.Lexical.Round(time.Millisecond), ls.VectorLoad.Round(time.Millisecond), ls.Total.Round(time.Millisecond), peakRSS())
		t0 := time.Now()
		if err := e.SaveSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(snap)
		t.Logf("SaveSnapshot: %v, %.1f MB; peak rss %.0f MB", time.Since(t0).Round(time.Millisecond), float64(fi.Size())/1e6, peakRSS())
		// Changes for the restore to catch up on.
		scaleChanges(t, st, emb, 1000)
	case "restore":
		e := New(opts)
		cpu0 := cpuTime()
		rs, err := e.Restore(ctx, st, snap)
		if err != nil {
			t.Fatal(err)
		}
		total := time.Since(start)
		t.Logf("Restore used %v of CPU", (cpuTime() - cpu0).Round(time.Millisecond))
		t.Logf("cold start: open database %v + Restore %v (read %v, catch-up of %d changes and checks %v) = %v; %d records, %d vectors, %d filled; peak rss %.0f MB",
			opened.Round(time.Millisecond), rs.Total.Round(time.Millisecond), rs.Read.Round(time.Millisecond), rs.Applied,
			(rs.Total - rs.Read).Round(time.Millisecond), total.Round(time.Millisecond), rs.Records, rs.Vectors, rs.VectorsFilled, peakRSS())
		res := search(t, e, Query{Text: "zorba velu kitani", K: 5, Filter: Filter{Workspace: "w1", Access: allAccess}})
		if len(res.Hits) == 0 {
			t.Fatal("restored index finds nothing")
		}
		t0 := time.Now()
		for range 20 {
			search(t, e, Query{Text: "zorba velu kitani", K: 10, Filter: Filter{Workspace: "w1", Access: allAccess}})
		}
		t.Logf("search after restore: %v per query (%v)", time.Since(t0)/20, res.Signals)
	case "save":
		e := New(opts)
		if _, err := e.Restore(ctx, st, snap); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			t0 := time.Now()
			if err := e.WriteSnapshot(io.Discard); err != nil {
				t.Fatal(err)
			}
			t.Logf("WriteSnapshot to io.Discard (encoding under the read lock): %v", time.Since(t0).Round(time.Millisecond))
		}
		g := newScaleText(3)
		for i := range 3 {
			// A writer arriving during the save waits for the read lock.
			var waited time.Duration
			var wg sync.WaitGroup
			t0 := time.Now()
			wg.Go(func() {
				time.Sleep(50 * time.Millisecond)
				w0 := time.Now()
				e.Upsert("w1", scaleRecord(g, i, time.Now()))
				waited = time.Since(w0)
			})
			if err := e.SaveSnapshot(snap + ".again"); err != nil {
				t.Fatal(err)
			}
			total := time.Since(t0)
			wg.Wait()
			t.Logf("SaveSnapshot: %v (a write issued 50ms in waited %v); peak rss %.0f MB", total.Round(time.Millisecond), waited.Round(time.Millisecond), peakRSS())
		}
	default:
		t.Fatal("MEMGATE_SNAPSHOT_PHASE is build, restore or save")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func peakRSS() float64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb / 1024
		}
	}
	return 0
}

// scaleText draws 6–20 words from a Zipf-like vocabulary of 30,000
// pseudo-words.
type scaleText struct {
	r     *rand.Rand
	words []string
	zipf  *rand.Zipf
}

func newScaleText(seed uint64) *scaleText {
	r := rand.New(rand.NewPCG(seed, 11))
	vr := rand.New(rand.NewPCG(20240501, 1))
	const cons, vows = "bcdfghjklmnprstvz", "aeiou"
	seen := map[string]bool{}
	var words []string
	for len(words) < 30000 {
		var sb strings.Builder
		for range 2 + vr.IntN(3) {
			sb.WriteByte(cons[vr.IntN(len(cons))])
			sb.WriteByte(vows[vr.IntN(len(vows))])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return &scaleText{r: r, words: words, zipf: rand.NewZipf(r, 1.1, 2, uint64(len(words)-1))}
}

func (g *scaleText) text() string {
	n := 6 + g.r.IntN(15)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.words[g.zipf.Uint64()]
	}
	return strings.Join(ws, " ")
}

func scaleVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	embed.Normalize(v)
	return v
}

func scaleRecord(g *scaleText, i int, at time.Time) memory.Record {
	r := memory.Record{ID: memory.NewID(), Type: memory.Episode, Content: g.text(), Status: memory.Active,
		Access: memory.Public, Version: 1, Category: "chat", Metadata: []byte(`{}`), Entities: []string{},
		Source:     memory.Source{Agent: fmt.Sprintf("agent-%d", i%20), Kind: memory.Observed, Confidence: 0.8, Evidence: []string{}},
		Scope:      memory.Scope{UserID: fmt.Sprintf("u%d", i/2000), SessionID: fmt.Sprintf("s%d", i/40)},
		IngestedAt: at, CreatedAt: at, UpdatedAt: at,
		Gate: memory.GateInfo{DecisionID: memory.NewID(), Decision: memory.DecisionAccepted, Origin: memory.OriginExternal}}
	if i%5 == 0 {
		r.Type, r.Category = memory.Belief, "fact"
		r.Entities = []string{"person:" + g.words[g.zipf.Uint64()]}
	}
	r.ContentSHA256 = memory.SHA256Hex(r.Content)
	return r
}

func putJob(ctx context.Context, tx store.Tx, emb hashEmbedder, r memory.Record, v []float32) error {
	if err := tx.PutCachedEmbeddings(ctx, emb.Model(), map[string][]float32{r.ContentSHA256: v}); err != nil {
		return err
	}
	return tx.PutVectors(ctx, emb.Model(), []store.Vector{{Workspace: "w1", RecordID: r.ID, ContentSHA256: r.ContentSHA256, Vec: v}})
}

func scaleFill(t *testing.T, st store.Store, emb hashEmbedder, n int) {
	ctx := context.Background()
	if err := st.Tx(ctx, func(tx store.Tx) error {
		return tx.CreateWorkspace(ctx, memory.Workspace{ID: "w1", Settings: []byte(`{}`), CreatedAt: storetest.T0})
	}); err != nil {
		t.Fatal(err)
	}
	g := newScaleText(1)
	vr := rand.New(rand.NewPCG(5, 6))
	const batch = 2000
	for i := 0; i < n; i += batch {
		var vs []store.Vector
		err := st.Tx(ctx, func(tx store.Tx) error {
			for j := i; j < min(n, i+batch); j++ {
				r := scaleRecord(g, j, storetest.T0.Add(time.Duration(j)*time.Second))
				if err := tx.InsertRecord(ctx, "w1", r); err != nil {
					return err
				}
				vs = append(vs, store.Vector{Workspace: "w1", RecordID: r.ID, ContentSHA256: r.ContentSHA256, Vec: scaleVec(vr, emb.Dim())})
			}
			return tx.PutVectors(ctx, emb.Model(), vs)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// scaleChanges inserts, patches and forgets records after the snapshot,
// storing vectors of the new contents as the embedding job does (with its
// cache).
func scaleChanges(t *testing.T, st store.Store, emb hashEmbedder, n int) {
	ctx := context.Background()
	g := newScaleText(99)
	vr := rand.New(rand.NewPCG(7, 8))
	recs, err := st.ListRecords(ctx, "w1", store.RecordQuery{Limit: store.MaxLimit, Access: store.AccessFilter{Levels: allAccess}})
	if err != nil || len(recs) < 100 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	err = st.Tx(ctx, func(tx store.Tx) error {
		for i := range n {
			switch {
			case i < 100:
				if err := tx.PurgeRecord(ctx, "w1", recs[i].ID, time.Now()); err != nil {
					return err
				}
			case i < 300:
				r := recs[i]
				next := storetest.NextVersion(r, time.Now(), func(x *memory.Record) {
					x.Content = g.text()
					x.ContentSHA256 = memory.SHA256Hex(x.Content)
				})
				if err := tx.UpdateRecord(ctx, "w1", next, r.Version); err != nil {
					return err
				}
				if err := putJob(ctx, tx, emb, next, scaleVec(vr, emb.Dim())); err != nil {
					return err
				}
			default:
				r := scaleRecord(g, i, time.Now())
				if err := tx.InsertRecord(ctx, "w1", r); err != nil {
					return err
				}
				if err := putJob(ctx, tx, emb, r, scaleVec(vr, emb.Dim())); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
