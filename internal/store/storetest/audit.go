package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/audit"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// NewAuditEntry returns an unsealed entry for AppendAudit.
func NewAuditEntry(event string, payload string) audit.Entry {
	return audit.Entry{
		ID:        memory.NewID(),
		TS:        time.Now(),
		ActorKind: audit.ActorAgent,
		ActorID:   "agent-1",
		Event:     event,
		Payload:   json.RawMessage(payload),
	}
}

func mustAppend(t *testing.T, s store.Store, ws string, e audit.Entry) audit.Entry {
	t.Helper()
	var sealed audit.Entry
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		var err error
		sealed, err = tx.AppendAudit(ctx, ws, e)
		return err
	})
	return sealed
}

func listAudit(t *testing.T, s store.Reader, ws string, after int64, limit int) []audit.Entry {
	t.Helper()
	es, err := s.ListAudit(t.Context(), ws, after, limit)
	if err != nil {
		t.Fatalf("ListAudit(%s, %d, %d): %v", ws, after, limit, err)
	}
	return es
}

// assertEntries compares entries field by field, payloads as JSON values.
func assertEntries(t *testing.T, what string, got, want []audit.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d entries, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		g.Payload, w.Payload = canonJSON(g.Payload), canonJSON(w.Payload)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: entry %d mismatch\n got: %s\nwant: %s", what, i, dump(g), dump(w))
		}
	}
}

// verifyChain checks seq numbering and hash linkage of a whole chain.
func verifyChain(t *testing.T, what string, es []audit.Entry) {
	t.Helper()
	var v audit.Verifier
	for i, e := range es {
		if e.Seq != int64(i+1) {
			t.Fatalf("%s: entry %d has seq %d", what, i, e.Seq)
		}
		wantPrev := audit.GenesisHash
		if i > 0 {
			wantPrev = es[i-1].Hash
		}
		if e.PrevHash != wantPrev {
			t.Fatalf("%s: entry %d prev_hash %s, want %s", what, e.Seq, e.PrevHash, wantPrev)
		}
		if len(e.Hash) != 64 || e.Hash == e.PrevHash {
			t.Fatalf("%s: entry %d has hash %q", what, e.Seq, e.Hash)
		}
		// The stored entry must re-verify after the round trip.
		if err := v.Next(e); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

func testAuditChain(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "a", "b")
	var wantA, wantB []audit.Entry
	for i := range 5 {
		e := NewAuditEntry("record.write", fmt.Sprintf(`{"n": %d, "record_id": "r%d", "decision": "accepted"}`, i, i))
		e.TS = e.TS.Add(123 * time.Nanosecond) // finer than stored precision
		sealed := mustAppend(t, s, "a", e)
		if sealed.Seq != int64(i+1) || sealed.ID != e.ID || sealed.Event != e.Event || sealed.Hash == "" {
			t.Fatalf("AppendAudit returned %s", dump(sealed))
		}
		wantA = append(wantA, sealed)
		if i%2 == 0 {
			wantB = append(wantB, mustAppend(t, s, "b", NewAuditEntry("record.forget", `{}`)))
		}
	}
	// An entry without payload is stored with an empty object.
	wantB = append(wantB, mustAppend(t, s, "b", NewAuditEntry("job.run", "")))

	gotA := listAudit(t, s, "a", 0, 0)
	assertEntries(t, "workspace a", gotA, wantA)
	verifyChain(t, "workspace a", gotA)
	gotB := listAudit(t, s, "b", 0, 100)
	assertEntries(t, "workspace b", gotB, wantB)
	verifyChain(t, "workspace b", gotB)
	if gotA[0].Hash == gotB[0].Hash {
		t.Fatal("two workspaces produced the same first hash")
	}

	// Paging by seq.
	assertEntries(t, "a after 1, limit 2", listAudit(t, s, "a", 1, 2), wantA[1:3])
	assertEntries(t, "a after 3", listAudit(t, s, "a", 3, 10), wantA[3:])
	assertEntries(t, "a after 5", listAudit(t, s, "a", 5, 10), nil)
	assertEntries(t, "unknown workspace", listAudit(t, s, "c", 0, 10), nil)

	// AppendAudit inside a transaction with other writes, read back in it.
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		r := NewRecord("audited")
		if err := tx.InsertRecord(ctx, "a", r); err != nil {
			return err
		}
		e, err := tx.AppendAudit(ctx, "a", NewAuditEntry("record.write", `{"record_id":"`+r.ID+`"}`))
		if err != nil {
			return err
		}
		if e.Seq != 6 || e.PrevHash != wantA[4].Hash {
			return fmt.Errorf("entry 6 sealed as seq %d after %s", e.Seq, e.PrevHash)
		}
		es, err := tx.ListAudit(ctx, "a", 5, 10)
		if err != nil {
			return err
		}
		if len(es) != 1 || es[0].ID != e.ID {
			return fmt.Errorf("in-tx ListAudit: got %d entries", len(es))
		}
		return nil
	})
	verifyChain(t, "workspace a, extended", listAudit(t, s, "a", 0, 100))
}

func testAuditConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	const writers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := s.Tx(ctx, func(tx store.Tx) error {
					for _, ws := range []string{"a", "b"} {
						e := NewAuditEntry("test", fmt.Sprintf(`{"writer": %d, "i": %d}`, w, i))
						if _, err := tx.AppendAudit(ctx, ws, e); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent append: %v", err)
	}
	for _, ws := range []string{"a", "b"} {
		es := listAudit(t, s, ws, 0, store.MaxLimit)
		if len(es) != writers*each {
			t.Fatalf("workspace %s: %d entries, want %d", ws, len(es), writers*each)
		}
		verifyChain(t, "workspace "+ws, es)
	}
}

// testAuditConcurrentRollback: concurrent transactions append audit
// entries, and some then fail (an error or a panic) after appending; the
// chain holds exactly the committed ones, contiguous and linked, however
// the backend batches transactions, and a later append continues it.
func testAuditConcurrentRollback(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	const n = 40
	errPlanned := errors.New("planned failure")
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Go(func() {
			defer func() { _ = recover() }()
			results[i] = s.Tx(ctx, func(tx store.Tx) error {
				for j := range 2 {
					if _, err := tx.AppendAudit(ctx, "a", NewAuditEntry("test", fmt.Sprintf(`{"tx": %d, "j": %d}`, i, j))); err != nil {
						return err
					}
				}
				switch i % 4 {
				case 1:
					return errPlanned
				case 3:
					panic("planned panic")
				}
				return nil
			})
		})
	}
	wg.Wait()
	committed := 0
	for i, err := range results {
		if i%4 == 0 || i%4 == 2 {
			if err != nil {
				t.Fatalf("tx %d: %v", i, err)
			}
			committed++
		}
	}
	es := listAudit(t, s, "a", 0, store.MaxLimit)
	if len(es) != 2*committed {
		t.Fatalf("%d entries, want %d (the committed transactions' only)", len(es), 2*committed)
	}
	verifyChain(t, "after concurrent rollbacks", es)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.AppendAudit(ctx, "a", NewAuditEntry("test", `{"after": true}`))
		return err
	})
	verifyChain(t, "extended after concurrent rollbacks", listAudit(t, s, "a", 0, store.MaxLimit))
}

// testPageLimits checks that the list methods other than ListRecords
// default to store.DefaultLimit and are not capped at store.MaxLimit:
// callers page until a short page, so a cap would end their walk early.
func testPageLimits(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	n := store.MaxLimit + 5
	rec := NewRecord("pending", func(r *memory.Record) { r.Status = memory.Provisional })
	mustInsert(t, s, "a", rec)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for i := range n {
			if _, err := tx.AppendAudit(ctx, "a", NewAuditEntry("test", fmt.Sprintf(`{"i":%d}`, i))); err != nil {
				return err
			}
			a := newApproval("a", rec.ID, T0.Add(time.Duration(i)*time.Second))
			if err := tx.InsertApproval(ctx, a); err != nil {
				return err
			}
		}
		return nil
	})

	if got := len(listAudit(t, s, "a", 0, 0)); got != store.DefaultLimit {
		t.Fatalf("ListAudit(limit 0): %d entries, want %d", got, store.DefaultLimit)
	}
	all := listAudit(t, s, "a", 0, 2*n)
	if len(all) != n {
		t.Fatalf("ListAudit(limit %d): %d entries, want %d", 2*n, len(all), n)
	}
	verifyChain(t, "long chain", all)

	for _, c := range []struct{ limit, want int }{{0, store.DefaultLimit}, {store.MaxLimit + 1, store.MaxLimit + 1}, {2 * n, n}} {
		as, err := s.ListApprovals(ctx, "a", memory.ApprovalOpen, "", c.limit)
		if err != nil {
			t.Fatalf("ListApprovals: %v", err)
		}
		if len(as) != c.want {
			t.Fatalf("ListApprovals(limit %d): %d items, want %d", c.limit, len(as), c.want)
		}
		as, err = s.ListExpiredApprovals(ctx, T0.Add(1000*time.Hour), c.limit)
		if err != nil {
			t.Fatalf("ListExpiredApprovals: %v", err)
		}
		if len(as) != c.want {
			t.Fatalf("ListExpiredApprovals(limit %d): %d items, want %d", c.limit, len(as), c.want)
		}
	}
}
