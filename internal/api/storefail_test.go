package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/core"
	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// failingStore is a real store whose record lookups fail, when switched
// on, as a database that went away does.
type failingStore struct {
	store.Store
	on     atomic.Bool // fail record lookups inside write transactions
	onRead atomic.Bool // fail record lookups outside them
}

func (f *failingStore) GetRecord(ctx context.Context, ws, id string) (memory.Record, error) {
	if f.onRead.Load() {
		return memory.Record{}, fmt.Errorf("sqlite: get record: %w: disk I/O error", store.ErrUnavailable)
	}
	return f.Store.GetRecord(ctx, ws, id)
}

func (f *failingStore) Tx(ctx context.Context, fn func(store.Tx) error) error {
	return f.Store.Tx(ctx, func(tx store.Tx) error { return fn(failingTx{Tx: tx, f: f}) })
}

type failingTx struct {
	store.Tx
	f *failingStore
}

func (t failingTx) GetRecord(ctx context.Context, ws, id string) (memory.Record, error) {
	if t.f.on.Load() {
		return memory.Record{}, fmt.Errorf("sqlite: get record: %w: disk I/O error", store.ErrUnavailable)
	}
	return t.Tx.GetRecord(ctx, ws, id)
}

// A store failure while a write transaction looks a record up is a 503
// with Retry-After, never a validation error (400 "no such record") nor a
// not-found (404), and it writes nothing.
func TestStoreFailureInWriteIsUnavailable(t *testing.T) {
	fs := &failingStore{}
	h := newHarnessOpts(t, harnessOptions{wrapStore: func(st store.Store) store.Store { fs.Store = st; return fs }})
	var w writeResult
	h.mustDo("POST", "/v1/records", "std", map[string]any{"type": "belief", "content": "the build runs on Fridays",
		"scope": map[string]any{"project_id": "p"}}, http.StatusCreated, &w)
	id := w.Record.ID

	fs.on.Store(true)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/records", map[string]any{"type": "belief", "content": "the build runs on Mondays", "supersedes": id,
			"scope": map[string]any{"project_id": "p"}}},
		{"PATCH", "/v1/records/" + id, map[string]any{"expected_version": 1, "content": "the build runs on Tuesdays"}},
		{"DELETE", "/v1/records/" + id, nil},
	} {
		e := h.wantError(c.method, c.path, "std", c.body, http.StatusServiceUnavailable, "unavailable")
		if _, ok := e.Error.Details["field"]; ok {
			t.Errorf("%s %s: a store failure names a field: %+v", c.method, c.path, e)
		}
		if _, hdr, _ := h.do(c.method, c.path, "std", c.body); hdr.Get("Retry-After") == "" {
			t.Errorf("%s %s: 503 without Retry-After", c.method, c.path)
		}
	}
	fs.on.Store(false)
	var got memory.Record
	h.mustDo("GET", "/v1/records/"+id, "std", nil, http.StatusOK, &got)
	if got.Version != 1 || got.Status != memory.Active {
		t.Fatalf("record after the failed writes: %+v; want untouched", got)
	}
}

// A flush job that cannot read the facts it reconciles with fails (and
// is retried) instead of storing its facts as new beside the ones they
// contradict.
func TestFlushStoreFailureIsNotSilent(t *testing.T) {
	fs := &failingStore{}
	h := newHarnessOpts(t, harnessOptions{jobs: true, wrapStore: func(st store.Store) store.Store { fs.Store = st; return fs },
		jobOptions: &core.JobOptions{Workers: 1, MaxAttempts: 1, Poll: 20 * time.Millisecond}})
	id := gatewayUser(h, "u1")
	add := func(session, text string) core.JobView {
		h.mustDo("POST", "/memories/add", "", id(map[string]any{"session_id": session, "messages": []map[string]any{
			{"sender_id": "u1", "role": "user", "timestamp": 1780000000000, "content": text}}}), http.StatusOK, nil)
		return flushAndWait(t, h, id(map[string]any{"session_id": session}))
	}
	if j := add("chat:1", "My editor is Xcode."); j.Status != "done" {
		t.Fatalf("first flush %+v", j)
	}
	fs.onRead.Store(true)
	j := add("chat:2", "My editor is IntelliJ.")
	fs.onRead.Store(false)
	if j.Status != "dead" || !strings.Contains(j.LastError, "database unavailable") {
		t.Fatalf("flush over a failing store: %+v; want it failed with the store's error", j)
	}
	if got := factTexts(facts(t, h, "u1")); !slices.Equal(got, []string{"u1's editor is Xcode"}) {
		t.Fatalf("live facts %q; want only the prior one", got)
	}
}
