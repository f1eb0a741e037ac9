package retrieve

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
	"github.com/memgate/memgate/internal/store/sqlite"
	"github.com/memgate/memgate/internal/store/storetest"
)

// overlapSource is a store that notes when two catch-ups read it at once,
// and yields inside each read so that, without serialisation, they do.
type overlapSource struct {
	store.Store
	inflight, most atomic.Int32
}

func (o *overlapSource) enter() {
	n := o.inflight.Add(1)
	for {
		m := o.most.Load()
		if n <= m || o.most.CompareAndSwap(m, n) {
			break
		}
	}
	runtime.Gosched()
}

func (o *overlapSource) GetRecord(ctx context.Context, ws, id string) (memory.Record, error) {
	o.enter()
	defer o.inflight.Add(-1)
	r, err := o.Store.GetRecord(ctx, ws, id)
	runtime.Gosched() // between the read and its apply: where an older read could land last
	return r, err
}

func (o *overlapSource) ListChanges(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	o.enter()
	defer o.inflight.Add(-1)
	return o.Store.ListChanges(ctx, after, limit)
}

// Writers that each catch the index up after their commit, as the
// service does, leave it holding every record's latest version: catch-ups
// run one at a time, so an older read of a record never lands after a
// newer one.
func TestCatchUpsSerialised(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "m.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const ws = "w1"
	recs := make([]memory.Record, 4)
	err = st.Tx(ctx, func(tx store.Tx) error {
		if err := tx.CreateWorkspace(ctx, memory.Workspace{ID: ws, Settings: []byte(`{}`), CreatedAt: storetest.T0}); err != nil {
			return err
		}
		for i := range recs {
			recs[i] = storetest.NewRecord(fmt.Sprintf("record %d version 1", i))
			if err := tx.InsertRecord(ctx, ws, recs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	src := &overlapSource{Store: st}
	e := New(Options{})
	if _, err := e.Load(ctx, src); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range recs {
		wg.Go(func() {
			r := recs[w]
			for v := 2; v <= 25; v++ {
				next := r
				next.Version = v
				next.Content = fmt.Sprintf("record %d version %d", w, v)
				next.ContentSHA256 = memory.SHA256Hex(next.Content)
				if err := st.Tx(ctx, func(tx store.Tx) error { return tx.UpdateRecord(ctx, ws, next, r.Version) }); err != nil {
					t.Error(err)
					return
				}
				r = next
				if _, err := e.CatchUp(ctx, src); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if m := src.most.Load(); m > 1 {
		t.Errorf("%d catch-ups read the change log at once, want 1", m)
	}
	for i, r := range recs {
		head, err := st.GetRecord(ctx, ws, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		key, ok := e.lookup(ws, r.ID)
		if !ok {
			t.Fatalf("record %d not indexed", i)
		}
		if got := e.shaOf(key); got != head.ContentSHA256 {
			t.Errorf("record %d: index holds content %s, store head (version %d) is %s", i, got[:8], head.Version, head.ContentSHA256[:8])
		}
	}
}
