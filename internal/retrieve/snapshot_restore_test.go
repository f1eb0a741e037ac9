package retrieve

// Restoring from a snapshot: vectors filled, another database refused,
// status and files, writes during a snapshot.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

type countingStore struct {
	store.Reader
	counts, scans int
}

func (c *countingStore) CountVectors(ctx context.Context, model string) (int, int, error) {
	c.counts++
	return c.Reader.CountVectors(ctx, model)
}

func (c *countingStore) ScanVectors(ctx context.Context, model string, fn func(ws, id string, vec []float32) error) error {
	c.scans++
	return c.Reader.ScanVectors(ctx, model, fn)
}

// Vectors the embedding job stored after the snapshot come from its cache,
// without a scan of every vector; vectors stored otherwise are found by the
// count-and-scan fallback.
func TestRestoreFillsVectors(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, filepath.Join(dir, "memgate.db"))
	f.cacheJob = true
	f.insert(100)
	a := load(t, f.st, Options{Embedder: testEmb})
	path := filepath.Join(dir, "index.snapshot")
	if err := a.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	n := f.vectorless(5)
	if n != 5 {
		t.Fatalf("fixture: %d vectorless", n)
	}
	restore := func() (*Engine, RestoreStats, *countingStore) {
		cs := &countingStore{Reader: f.st}
		e := New(Options{Embedder: testEmb})
		rs, err := e.Restore(f.ctx, cs, path)
		if err != nil {
			t.Fatal(err)
		}
		return e, rs, cs
	}
	e, rs, cs := restore()
	if rs.VectorsFilled != 5 || cs.scans != 0 {
		t.Fatalf("filled %d with %d counts, %d scans", rs.VectorsFilled, cs.counts, cs.scans)
	}
	diffState(t, "cache fill", state(e), state(load(t, f.st, Options{Embedder: testEmb})))
	// Without the cache: found by the fallback.
	f.cacheJob = false
	f.vectorless(3)
	e, rs, cs = restore()
	if rs.VectorsFilled != 8 || cs.scans != 1 {
		t.Fatalf("filled %d with %d counts, %d scans", rs.VectorsFilled, cs.counts, cs.scans)
	}
	diffState(t, "scan fill", state(e), state(load(t, f.st, Options{Embedder: testEmb})))
	// Records without a vector anywhere: one count, no scan.
	if err := e.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	f.noVectors = true
	f.insert(3)
	if len(f.lacking()) == 0 {
		t.Fatal("fixture: no record lacks a vector")
	}
	_, rs, cs = restore()
	if rs.VectorsFilled != 0 || cs.counts != 1 || cs.scans != 0 {
		t.Fatalf("filled %d with %d counts, %d scans", rs.VectorsFilled, cs.counts, cs.scans)
	}
}

// The snapshot writes every field of doc: a field added there must be
// added to encodeDocsLocked and decodeDocs, and then here.
func TestRestoreRefusesOtherDatabase(t *testing.T) {
	dir := t.TempDir()
	f1 := newFixture(t, filepath.Join(dir, "one.db"))
	f1.insert(40)
	a := load(t, f1.st, Options{Embedder: testEmb})
	path := filepath.Join(dir, "index.snapshot")
	if err := a.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	// Another database with more changes than the snapshot's position.
	f2 := newFixture(t, filepath.Join(dir, "two.db"))
	f2.insert(60)
	if _, err := New(Options{Embedder: testEmb}).Restore(f2.ctx, f2.st, path); !errors.Is(err, ErrSnapshotMismatch) || !errors.Is(err, ErrSnapshotForeign) {
		t.Fatalf("other database: %v", err)
	}
	// One with fewer.
	f3 := newFixture(t, filepath.Join(dir, "three.db"))
	f3.insert(5)
	if _, err := New(Options{Embedder: testEmb}).Restore(f3.ctx, f3.st, path); !errors.Is(err, ErrSnapshotMismatch) || !errors.Is(err, ErrSnapshotForeign) {
		t.Fatalf("older database: %v", err)
	}
	// The right one.
	if _, err := New(Options{Embedder: testEmb}).Restore(f1.ctx, f1.st, path); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotStatusAndSaveFile(t *testing.T) {
	dir := t.TempDir()
	f := newFixture(t, filepath.Join(dir, "memgate.db"))
	f.insert(30)
	e := load(t, f.st, Options{Embedder: testEmb})
	if st := e.SnapshotStatus(); st.Saved || !st.Dirty {
		t.Fatalf("fresh %+v", st)
	}
	path := filepath.Join(dir, "index.snapshot")
	if err := e.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	if st := e.SnapshotStatus(); !st.Saved || st.Dirty || st.Forgotten != 0 {
		t.Fatalf("saved %+v", st)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file %v %v", fi, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".index.snapshot.*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	f.insert(1)
	if _, err := e.CatchUp(f.ctx, f.st); err != nil {
		t.Fatal(err)
	}
	if st := e.SnapshotStatus(); !st.Dirty || st.Forgotten != 0 {
		t.Fatalf("after insert %+v", st)
	}
	if err := e.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	// A vector alone (the embedding job) makes the engine dirty.
	r := f.live[f.lacking()[0]]
	e.SetVector(f.ws[r.ID], r.ID, r.ContentSHA256, testEmb.vec(r.Content))
	if st := e.SnapshotStatus(); !st.Dirty || st.Forgotten != 0 {
		t.Fatalf("after a vector %+v", st)
	}
	f.forget(f.pick())
	if _, err := e.CatchUp(f.ctx, f.st); err != nil {
		t.Fatal(err)
	}
	if st := e.SnapshotStatus(); !st.Dirty || st.Forgotten != 1 || !e.ForgetPending() {
		t.Fatalf("after forget %+v", st)
	}
	if err := e.SaveSnapshot(path); err != nil {
		t.Fatal(err)
	}
	if e.Dirty() || e.ForgetPending() {
		t.Fatalf("after save %+v", e.SnapshotStatus())
	}
	// A failed save keeps the old file and leaves no temporary file.
	if err := e.SaveSnapshot(filepath.Join(dir, "missing-dir", "x")); err == nil {
		t.Fatal("save into a missing directory")
	}
	x := New(Options{Embedder: testEmb})
	if _, err := x.Restore(f.ctx, f.st, path); err != nil {
		t.Fatal(err)
	}
	if x.Dirty() {
		t.Fatalf("restored current snapshot is dirty: %+v", x.SnapshotStatus())
	}
}

// Saving while the engine is written to and searched (run with -race).
func TestSnapshotConcurrentWrites(t *testing.T) {
	dir := t.TempDir()
	e := New(Options{Embedder: testEmb})
	for i := range 200 {
		r := rec(i+1, fmt.Sprintf("turn %d %s", i, words[i%len(words)]), session("s"))
		e.Upsert("w", r)
		e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for i := 200; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			r := rec(i+1, fmt.Sprintf("turn %d %s", i, words[i%len(words)]), session("s"))
			e.Upsert("w", r)
			e.SetVector("w", r.ID, r.ContentSHA256, testEmb.vec(r.Content))
			if i%5 == 0 {
				e.Upsert("w", memory.Record{ID: rec(i-100, "").ID, Status: memory.Forgotten})
			}
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			search(t, e, Query{Text: "turn alpha", Filter: Filter{Workspace: "w", Access: allAccess}, Context: 0.5})
			e.SnapshotStatus()
		}
	})
	path := filepath.Join(dir, "index.snapshot")
	for range 5 {
		if err := e.SaveSnapshot(path); err != nil {
			t.Fatal(err)
		}
		x := New(Options{Embedder: testEmb})
		if err := x.LoadSnapshot(path); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}
