package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func eventTests() []struct {
	name string
	fn   func(t *testing.T, s store.Store)
} {
	return []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"EventsOrdered", testEventsOrdered},
		{"EventsRollback", testEventsRollback},
		{"Webhooks", testWebhooks},
	}
}

func newEvent(ws, kind string, n int) store.Event {
	return store.Event{ID: memory.NewID(), Workspace: ws, Kind: kind, At: T0,
		Subject: json.RawMessage(fmt.Sprintf(`{"record_id":"r%d"}`, n))}
}

// testEventsOrdered: concurrent transactions append events; a reader
// polling by seq (as SSE and webhooks do) sees every event exactly once,
// in seq order, per workspace and across workspaces.
func testEventsOrdered(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "ws-a", "ws-b")
	ctx := context.Background()
	const writers, per = 4, 15
	var wg sync.WaitGroup
	stop := make(chan struct{})
	seen := map[string]int{}
	var pollErr error
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		var after int64
		for {
			select {
			case <-stop:
			default:
			}
			evs, err := s.ListEvents(ctx, "", after, 7)
			if err != nil {
				pollErr = err
				return
			}
			for _, e := range evs {
				if e.Seq <= after {
					pollErr = fmt.Errorf("seq %d after %d", e.Seq, after)
					return
				}
				after = e.Seq
				seen[e.ID]++
			}
			if len(evs) == 0 {
				select {
				case <-stop:
					if evs, _ := s.ListEvents(ctx, "", after, 1); len(evs) == 0 {
						return
					}
				default:
				}
			}
		}
	}()
	ids := make(chan string, writers*per)
	for w := range writers {
		wg.Go(func() {
			for i := range per {
				ws := []string{"ws-a", "ws-b"}[(w+i)%2]
				e := newEvent(ws, "approval.pending", i)
				err := s.Tx(ctx, func(tx store.Tx) error { return tx.AppendEvent(ctx, e) })
				if err != nil {
					t.Error(err)
					return
				}
				ids <- e.ID
			}
		})
	}
	wg.Wait()
	close(stop)
	<-polled
	close(ids)
	if pollErr != nil {
		t.Fatal(pollErr)
	}
	n := 0
	for id := range ids {
		n++
		if seen[id] != 1 {
			t.Errorf("event %s seen %d times by the poller, want 1", id, seen[id])
		}
	}
	if n != writers*per || len(seen) != n {
		t.Errorf("poller saw %d events, %d committed", len(seen), n)
	}
	a, err := s.ListEvents(ctx, "ws-a", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range a {
		if e.Workspace != "ws-a" {
			t.Fatalf("ListEvents(ws-a) returned an event of %s", e.Workspace)
		}
	}
	if len(a) != writers*per/2 {
		t.Errorf("ws-a has %d events, want %d", len(a), writers*per/2)
	}
	head, err := s.EventHead(ctx)
	if err != nil || head < a[len(a)-1].Seq {
		t.Errorf("EventHead = %d, %v; want >= %d", head, err, a[len(a)-1].Seq)
	}
	if !a[0].At.Equal(T0) || string(a[0].Subject) == "" || a[0].Kind != "approval.pending" {
		t.Errorf("event round trip: %+v", a[0])
	}
}

// testEventsRollback: an event appended by a transaction that fails is
// not in the outbox.
func testEventsRollback(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "ws-a")
	ctx := context.Background()
	boom := errors.New("boom")
	err := s.Tx(ctx, func(tx store.Tx) error {
		if err := tx.AppendEvent(ctx, newEvent("ws-a", "conflict.opened", 1)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Tx = %v, want boom", err)
	}
	if evs, err := s.ListEvents(ctx, "", 0, 10); err != nil || len(evs) != 0 {
		t.Fatalf("after a rolled-back append: %d events, %v; want none", len(evs), err)
	}
}

// testWebhooks: registration, leases (one holder at a time, backoff
// honoured), cursor progress and the delivery log.
func testWebhooks(t *testing.T, s store.Store) {
	mustWorkspace(t, s, "ws-a", "ws-b")
	ctx := context.Background()
	w := store.Webhook{ID: memory.NewID(), Workspace: "ws-a", URL: "https://example.test/hook", Secret: "s3cret",
		Kinds: []string{"job.dead"}, CreatedAt: T0, CreatedBy: "op", Cursor: 3, NextAt: T0}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertWebhook(ctx, w) })
	got, err := s.GetWebhook(ctx, "ws-a", w.ID)
	if err != nil || got.URL != w.URL || got.Secret != w.Secret || len(got.Kinds) != 1 || got.Cursor != 3 || !got.CreatedAt.Equal(T0) {
		t.Fatalf("GetWebhook = %+v, %v", got, err)
	}
	if _, err := s.GetWebhook(ctx, "ws-b", w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetWebhook from another workspace = %v, want ErrNotFound", err)
	}
	if l, err := s.ListWebhooks(ctx, "ws-b"); err != nil || len(l) != 0 {
		t.Fatalf("ListWebhooks(ws-b) = %d, %v", len(l), err)
	}
	if l, err := s.ListWebhooks(ctx, ""); err != nil || len(l) != 1 {
		t.Fatalf("ListWebhooks(all) = %d, %v", len(l), err)
	}
	claim := func(owner string, now time.Time) bool {
		var ok bool
		mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
			var err error
			_, ok, err = tx.ClaimWebhook(ctx, "ws-a", w.ID, owner, now, time.Minute)
			return err
		})
		return ok
	}
	if !claim("p1", T0) {
		t.Fatal("first claim failed")
	}
	if claim("p2", T0.Add(time.Second)) {
		t.Fatal("a second owner claimed a leased webhook")
	}
	err = s.Tx(ctx, func(tx store.Tx) error {
		return tx.AdvanceWebhook(ctx, "ws-a", w.ID, "p2", store.WebhookUpdate{Cursor: 9})
	})
	if !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("advance without the lease = %v, want ErrVersionConflict", err)
	}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.AdvanceWebhook(ctx, "ws-a", w.ID, "p1", store.WebhookUpdate{Cursor: 5, Attempts: 2, NextAt: T0.Add(time.Hour), LeaseUntil: T0.Add(time.Hour)}); err != nil {
			return err
		}
		return tx.ReleaseWebhook(ctx, "ws-a", w.ID, "p1")
	})
	if claim("p2", T0.Add(time.Minute)) {
		t.Fatal("claimed before its backoff ended")
	}
	if !claim("p2", T0.Add(2*time.Hour)) {
		t.Fatal("claim after the backoff failed")
	}
	got, _ = s.GetWebhook(ctx, "ws-a", w.ID)
	if got.Cursor != 5 || got.Attempts != 2 || got.LeaseOwner != "p2" {
		t.Fatalf("after advance: %+v", got)
	}
	var ds []store.Delivery
	for i := range 3 {
		d := store.Delivery{ID: memory.NewID(), Workspace: "ws-a", WebhookID: w.ID, EventID: "e", EventSeq: int64(i), EventKind: "job.dead",
			Attempt: i + 1, At: T0, Outcome: store.DeliveryFailed, StatusCode: 500, Error: "HTTP 500", Duration: 1500 * time.Microsecond}
		ds = append(ds, d)
		mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.InsertDelivery(ctx, d) })
	}
	l, err := s.ListDeliveries(ctx, "ws-a", w.ID, "", 2)
	if err != nil || len(l) != 2 || l[0].ID != ds[2].ID || l[0].Duration != ds[2].Duration || l[0].StatusCode != 500 {
		t.Fatalf("ListDeliveries = %+v, %v", l, err)
	}
	if l, _ := s.ListDeliveries(ctx, "ws-a", "", l[1].ID, 10); len(l) != 1 || l[0].ID != ds[0].ID {
		t.Fatalf("ListDeliveries before = %+v", l)
	}
	if l, _ := s.ListDeliveries(ctx, "ws-b", "", "", 10); len(l) != 0 {
		t.Fatalf("ListDeliveries of another workspace = %d", len(l))
	}
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.DeleteWebhook(ctx, "ws-a", w.ID) })
	if l, _ := s.ListDeliveries(ctx, "ws-a", "", "", 10); len(l) != 0 {
		t.Fatalf("deliveries of a deleted webhook remain: %d", len(l))
	}
	err = s.Tx(ctx, func(tx store.Tx) error { return tx.DeleteWebhook(ctx, "ws-a", w.ID) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete = %v, want ErrNotFound", err)
	}
}
