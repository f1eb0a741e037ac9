package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func vectorTests() []struct {
	name string
	fn   func(t *testing.T, s store.Store)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"ScanRecords", testScanRecords},
		{"Vectors", testVectors},
		{"VectorsFollowContent", testVectorsFollowContent},
		{"EmbeddingCache", testEmbeddingCache},
		{"PurgeDropsVectors", testPurgeDropsVectors},
		{"ChangeLog", testChangeLog},
		{"ChangeLogTail", testChangeLogTail},
		{"TxIndependence", testTxIndependence},
		{"Settings", testSettings},
	}
}

// testSettings: a setting is absent until put, reads back what was put,
// is replaced by a later put and is not kept by a rolled-back transaction.
func testSettings(t *testing.T, s store.Store) {
	ctx := context.Background()
	if _, err := s.GetSetting(ctx, "embedder"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unset setting: err = %v, want ErrNotFound", err)
	}
	put := func(v string) {
		t.Helper()
		if err := s.Tx(ctx, func(tx store.Tx) error { return tx.PutSetting(ctx, "embedder", v) }); err != nil {
			t.Fatal(err)
		}
	}
	put(`{"model":"a"}`)
	put(`{"model":"b","dim":512}`)
	if v, err := s.GetSetting(ctx, "embedder"); err != nil || v != `{"model":"b","dim":512}` {
		t.Fatalf("setting = %q, %v; want the last value put", v, err)
	}
	boom := errors.New("boom")
	err := s.Tx(ctx, func(tx store.Tx) error {
		if err := tx.PutSetting(ctx, "embedder", "rolled back"); err != nil {
			return err
		}
		if v, err := tx.GetSetting(ctx, "embedder"); err != nil || v != "rolled back" {
			return fmt.Errorf("inside the transaction: %q, %v", v, err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if v, err := s.GetSetting(ctx, "embedder"); err != nil || v != `{"model":"b","dim":512}` {
		t.Fatalf("after rollback: %q, %v", v, err)
	}
	if _, err := s.GetSetting(ctx, "other"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("other key: err = %v, want ErrNotFound", err)
	}
}

func testScanRecords(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a")
	mustWorkspace(t, s, "b")
	var want []string
	for i, ws := range []string{"a", "b", "a"} {
		r := NewRecord("scan " + string(rune('x'+i)))
		mustInsert(t, s, ws, r)
		want = append(want, ws+"/"+r.ID)
	}
	var got []string
	err := s.ScanRecords(t.Context(), func(ws string, r memory.Record) error {
		if r.Content == "" {
			t.Errorf("record %s scanned without content", r.ID)
		}
		got = append(got, ws+"/"+r.ID)
		return nil
	})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ScanRecords = %v, %v; want %v", got, err, want)
	}
}

func testVectors(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	r1, r2 := NewRecord("first"), NewRecord("second")
	mustInsert(t, s, "a", r1)
	mustInsert(t, s, "a", r2)

	missing, err := s.ListMissingVectors(ctx, "m1", "", 10)
	if err != nil || len(missing) != 2 || missing[0].ID != r1.ID || missing[0].Content != "first" || missing[0].Workspace != "a" {
		t.Fatalf("ListMissingVectors = %+v, %v", missing, err)
	}
	if page, _ := s.ListMissingVectors(ctx, "m1", r1.ID, 10); len(page) != 1 || page[0].ID != r2.ID {
		t.Fatalf("cursor ignored: %+v", page)
	}
	v1 := []float32{0.6, 0.8, 0}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PutVectors(ctx, "m1", []store.Vector{{Workspace: "a", RecordID: r1.ID, ContentSHA256: r1.ContentSHA256, Vec: v1}})
	})
	if have, total, err := s.CountVectors(ctx, "m1"); err != nil || have != 1 || total != 2 {
		t.Fatalf("CountVectors = %d/%d, %v", have, total, err)
	}
	if have, _, _ := s.CountVectors(ctx, "m2"); have != 0 {
		t.Fatalf("another model counts %d", have)
	}
	missing, _ = s.ListMissingVectors(ctx, "m1", "", 10)
	if len(missing) != 1 || missing[0].ID != r2.ID {
		t.Fatalf("after put: missing %+v", missing)
	}
	got := map[string][]float32{}
	err = s.ScanVectors(ctx, "m1", func(ws, id string, vec []float32) error {
		got[ws+"/"+id] = append([]float32(nil), vec...)
		return nil
	})
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got["a/"+r1.ID], v1) {
		t.Fatalf("ScanVectors = %v, %v", got, err)
	}
	// Replacing a vector keeps one row.
	v1b := []float32{0, 0, 1}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PutVectors(ctx, "m1", []store.Vector{{Workspace: "a", RecordID: r1.ID, ContentSHA256: r1.ContentSHA256, Vec: v1b}})
	})
	got = map[string][]float32{}
	_ = s.ScanVectors(ctx, "m1", func(ws, id string, vec []float32) error {
		got[id] = append([]float32(nil), vec...)
		return nil
	})
	if len(got) != 1 || !reflect.DeepEqual(got[r1.ID], v1b) {
		t.Fatalf("replaced vector: %v", got)
	}
}

func testVectorsFollowContent(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	r := NewRecord("before")
	mustInsert(t, s, "a", r)
	// A vector computed for content that is no longer current is dropped.
	stale := r.ContentSHA256
	v2 := NextVersion(r, T0.Add(time.Hour), func(x *memory.Record) {
		x.Content = "after"
		x.ContentSHA256 = memory.SHA256Hex(x.Content)
	})
	mustUpdate(t, s, "a", v2)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PutVectors(ctx, "m", []store.Vector{{Workspace: "a", RecordID: r.ID, ContentSHA256: stale, Vec: []float32{1}}})
	})
	if have, total, _ := s.CountVectors(ctx, "m"); have != 0 || total != 1 {
		t.Fatalf("stale vector stored: %d/%d", have, total)
	}
	// A vector of the old content goes stale when the content changes.
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PutVectors(ctx, "m", []store.Vector{{Workspace: "a", RecordID: r.ID, ContentSHA256: v2.ContentSHA256, Vec: []float32{1}}})
	})
	v3 := NextVersion(v2, T0.Add(2*time.Hour), func(x *memory.Record) {
		x.Content = "again"
		x.ContentSHA256 = memory.SHA256Hex(x.Content)
	})
	mustUpdate(t, s, "a", v3)
	missing, _ := s.ListMissingVectors(ctx, "m", "", 10)
	if len(missing) != 1 || missing[0].Content != "again" {
		t.Fatalf("changed record not missing its vector: %+v", missing)
	}
	n := 0
	_ = s.ScanVectors(ctx, "m", func(string, string, []float32) error { n++; return nil })
	if n != 0 {
		t.Fatalf("ScanVectors returned %d stale vectors", n)
	}
}

func testEmbeddingCache(t *testing.T, s store.Store) {
	ctx := t.Context()
	h1, h2 := memory.SHA256Hex("one"), memory.SHA256Hex("two")
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PutCachedEmbeddings(ctx, "m", map[string][]float32{h1: {1, 2}, h2: {3, 4}})
	})
	got, err := s.GetCachedEmbeddings(ctx, "m", []string{h1, memory.SHA256Hex("three")})
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[h1], []float32{1, 2}) {
		t.Fatalf("GetCachedEmbeddings = %v, %v", got, err)
	}
	if other, _ := s.GetCachedEmbeddings(ctx, "other", []string{h1}); len(other) != 0 {
		t.Fatalf("cache crosses models: %v", other)
	}
}

func testPurgeDropsVectors(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	r := NewRecord("forget my vector")
	mustInsert(t, s, "a", r)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.PutCachedEmbeddings(ctx, "m", map[string][]float32{r.ContentSHA256: {1}}); err != nil {
			return err
		}
		return tx.PutVectors(ctx, "m", []store.Vector{{Workspace: "a", RecordID: r.ID, ContentSHA256: r.ContentSHA256, Vec: []float32{1}}})
	})
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.PurgeRecord(ctx, "a", r.ID, T0.Add(time.Hour)) })
	if have, total, _ := s.CountVectors(ctx, "m"); have != 0 || total != 0 {
		t.Fatalf("after purge %d/%d", have, total)
	}
	if got, _ := s.GetCachedEmbeddings(ctx, "m", []string{r.ContentSHA256}); len(got) != 0 {
		t.Fatal("cached embedding of forgotten content survives")
	}
	if missing, _ := s.ListMissingVectors(ctx, "m", "", 10); len(missing) != 0 {
		t.Fatalf("forgotten record wants a vector: %+v", missing)
	}
	// Putting a vector for a forgotten record is a no-op.
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PutVectors(ctx, "m", []store.Vector{{Workspace: "a", RecordID: r.ID, ContentSHA256: r.ContentSHA256, Vec: []float32{1}}})
	})
	n := 0
	_ = s.ScanVectors(ctx, "m", func(string, string, []float32) error { n++; return nil })
	if n != 0 {
		t.Fatal("vector stored for a forgotten record")
	}
}

func testChangeLog(t *testing.T, s store.Store) {
	ctx := t.Context()
	head0, err := s.ChangeHead(ctx)
	if err != nil || head0 != 0 {
		t.Fatalf("empty ChangeHead = %d, %v", head0, err)
	}
	mustWorkspace(t, s, "a", "b")
	r1, r2 := NewRecord("one"), NewRecord("two")
	mustInsert(t, s, "a", r1)
	mustInsert(t, s, "b", r2)
	mustUpdate(t, s, "a", NextVersion(r1, T0.Add(time.Hour)))
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PurgeRecord(ctx, "b", r2.ID, T0.Add(time.Hour))
	})
	// A rolled-back transaction logs nothing.
	_ = s.Tx(ctx, func(tx store.Tx) error {
		if err := tx.InsertRecord(ctx, "a", NewRecord("never")); err != nil {
			return err
		}
		return context.Canceled
	})
	chs, err := s.ListChanges(ctx, 0, 100)
	if err != nil || len(chs) != 4 {
		t.Fatalf("ListChanges = %+v, %v", chs, err)
	}
	want := []string{"a/" + r1.ID, "b/" + r2.ID, "a/" + r1.ID, "b/" + r2.ID}
	for i, ch := range chs {
		if ch.Workspace+"/"+ch.RecordID != want[i] || (i > 0 && ch.Seq <= chs[i-1].Seq) {
			t.Fatalf("change %d = %+v", i, ch)
		}
	}
	head, _ := s.ChangeHead(ctx)
	if head != chs[3].Seq {
		t.Fatalf("ChangeHead %d, want %d", head, chs[3].Seq)
	}
	if rest, _ := s.ListChanges(ctx, chs[1].Seq, 1); len(rest) != 1 || rest[0].Seq != chs[2].Seq {
		t.Fatalf("paging: %+v", rest)
	}
}

// testTxIndependence: concurrent transactions commit or roll back
// independently, whatever the backend batches together.
func testTxIndependence(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	const n = 48
	recs := make([]memory.Record, n)
	for i := range recs {
		recs[i] = NewRecord("independent " + string(rune('A'+i%26)) + string(rune('a'+i/26)))
	}
	errFail := errors.New("planned failure")
	var wg sync.WaitGroup
	results := make([]error, n)
	panicked := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			defer func() {
				if recover() != nil {
					panicked[i] = true
				}
			}()
			results[i] = s.Tx(ctx, func(tx store.Tx) error {
				if err := tx.InsertRecord(ctx, "a", recs[i]); err != nil {
					return err
				}
				switch i % 4 {
				case 1:
					return errFail
				case 3:
					panic("planned panic")
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i := range n {
		_, err := s.GetRecord(ctx, "a", recs[i].ID)
		switch i % 4 {
		case 0, 2:
			if results[i] != nil || err != nil {
				t.Errorf("tx %d: result %v, get %v; want committed", i, results[i], err)
			}
		case 1:
			if !errors.Is(results[i], errFail) || !errors.Is(err, store.ErrNotFound) {
				t.Errorf("tx %d: result %v, get %v; want its own error and nothing written", i, results[i], err)
			}
		case 3:
			if !panicked[i] || !errors.Is(err, store.ErrNotFound) {
				t.Errorf("tx %d: panicked %v, get %v; want the panic re-raised and nothing written", i, panicked[i], err)
			}
		}
	}
}

// testChangeLogTail: a reader that tails both change logs with "seq >
// cursor", as other processes' followers do, while writers commit
// concurrently, sees every change. A backend that lets a transaction
// publish a seq while an earlier seq is still uncommitted makes the
// reader skip that earlier change for good.
func testChangeLogTail(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	const writers, each = 6, 8
	recs := make([]memory.Record, writers*each)
	nodes := make([]memory.Node, writers*each)
	for i := range recs {
		recs[i] = NewRecord(fmt.Sprintf("tail %d", i))
		nodes[i] = NewNode("person", fmt.Sprintf("tail-%d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(recs))
	for w := range writers {
		wg.Go(func() {
			for i := w * each; i < (w+1)*each; i++ {
				err := s.Tx(ctx, func(tx store.Tx) error {
					if err := tx.InsertRecord(ctx, "a", recs[i]); err != nil {
						return err
					}
					return tx.InsertNode(ctx, "a", nodes[i])
				})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	writing := make(chan struct{})
	go func() { wg.Wait(); close(writing) }()

	var cursor, gcursor int64
	seen, seenNodes := map[string]bool{}, map[string]bool{}
	tail := func() {
		t.Helper()
		for {
			chs, err := s.ListChanges(ctx, cursor, 1000)
			if err != nil {
				t.Fatal(err)
			}
			gchs, err := s.ListGraphChanges(ctx, gcursor, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range chs {
				if ch.Seq <= cursor {
					t.Fatalf("change %d listed after %d", ch.Seq, cursor)
				}
				seen[ch.RecordID], cursor = true, ch.Seq
			}
			for _, ch := range gchs {
				if ch.Seq <= gcursor {
					t.Fatalf("graph change %d listed after %d", ch.Seq, gcursor)
				}
				seenNodes[ch.ID], gcursor = true, ch.Seq
			}
			if len(chs) < 1000 && len(gchs) < 1000 {
				return
			}
		}
	}
	for done := false; !done; {
		select {
		case <-writing:
			done = true
		default:
		}
		tail()
	}
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	for i := range recs {
		if !seen[recs[i].ID] || !seenNodes[nodes[i].ID] {
			t.Fatalf("the tailing reader skipped a change (record %v, node %v); saw %d of %d records, %d of %d nodes",
				seen[recs[i].ID], seenNodes[nodes[i].ID], len(seen), len(recs), len(seenNodes), len(nodes))
		}
	}
}
