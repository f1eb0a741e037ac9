package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

func testWorkspaceIsolation(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	ra := NewRecord("shared content", func(r *memory.Record) { r.Entities = []string{"person:alice"} })
	rb := NewRecord("shared content", func(r *memory.Record) { r.Entities = []string{"person:alice"} })
	mustInsert(t, s, "a", ra)
	mustInsert(t, s, "b", rb)

	for _, c := range []struct {
		ws   string
		want memory.Record
	}{{"a", ra}, {"b", rb}} {
		assertIDs(t, "list "+c.ws, list(t, s, c.ws, store.RecordQuery{Access: allAccess}), c.want)
		assertIDs(t, "entity "+c.ws, list(t, s, c.ws, store.RecordQuery{Access: allAccess, Entity: "person:alice"}), c.want)
		now := time.Now()
		assertIDs(t, "known at "+c.ws, list(t, s, c.ws, store.RecordQuery{Access: allAccess, KnownAt: &now}), c.want)
		dup, err := s.FindDuplicate(ctx, c.ws, memory.Belief, memory.SHA256Hex("shared content"), memory.Scope{})
		if err != nil {
			t.Fatalf("FindDuplicate(%s): %v", c.ws, err)
		}
		if dup.ID != c.want.ID {
			t.Fatalf("FindDuplicate(%s) returned %s, want %s", c.ws, dup.ID, c.want.ID)
		}
	}
	assertIDs(t, "list c", list(t, s, "c", store.RecordQuery{Access: allAccess}))

	// Writes addressed to the wrong workspace touch nothing.
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.TouchRecords(ctx, "a", []string{rb.ID}, T0)
	})
	assertRecord(t, "record in b after touch via a", mustGet(t, s, "b", rb.ID), rb)
}

func testFindDuplicate(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	scope := memory.Scope{UserID: "u1", ProjectID: "p1"}
	base := NewRecord("dup", func(r *memory.Record) { r.Scope = scope })
	prov := NewRecord("provisional", func(r *memory.Record) { r.Status = memory.Provisional })
	superseded := NewRecord("superseded", func(r *memory.Record) { r.Status = memory.Superseded })
	quarantined := NewRecord("quarantined", func(r *memory.Record) { r.Status = memory.Quarantined })
	archived := NewRecord("archived", func(r *memory.Record) { r.Status = memory.Archived })
	forgotten := NewRecord("forgotten")
	invalidated := NewRecord("invalidated", func(r *memory.Record) { r.InvalidatedAt = &T0 })
	mustInsert(t, s, "a", base, prov, superseded, quarantined, archived, forgotten, invalidated)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PurgeRecord(ctx, "a", forgotten.ID, T0)
	})

	find := func(ws string, typ memory.Type, content string, sc memory.Scope) (memory.Record, error) {
		return s.FindDuplicate(ctx, ws, typ, memory.SHA256Hex(content), sc)
	}
	got, err := find("a", memory.Belief, "dup", scope)
	if err != nil {
		t.Fatalf("FindDuplicate: %v", err)
	}
	assertRecord(t, "FindDuplicate", got, base)
	got, err = find("a", memory.Belief, "provisional", memory.Scope{})
	if err != nil {
		t.Fatalf("FindDuplicate(provisional): %v", err)
	}
	assertRecord(t, "FindDuplicate(provisional)", got, prov)

	for _, c := range []struct {
		name    string
		ws      string
		typ     memory.Type
		content string
		scope   memory.Scope
	}{
		{"fewer scope keys", "a", memory.Belief, "dup", memory.Scope{UserID: "u1"}},
		{"no scope", "a", memory.Belief, "dup", memory.Scope{}},
		{"more scope keys", "a", memory.Belief, "dup", memory.Scope{UserID: "u1", ProjectID: "p1", SessionID: "s1"}},
		{"other scope value", "a", memory.Belief, "dup", memory.Scope{UserID: "u2", ProjectID: "p1"}},
		{"other type", "a", memory.Decision, "dup", scope},
		{"other content", "a", memory.Belief, "dup!", scope},
		{"other workspace", "b", memory.Belief, "dup", scope},
		{"superseded", "a", memory.Belief, "superseded", memory.Scope{}},
		{"quarantined", "a", memory.Belief, "quarantined", memory.Scope{}},
		{"archived", "a", memory.Belief, "archived", memory.Scope{}},
		{"forgotten", "a", memory.Belief, "forgotten", memory.Scope{}},
		{"invalidated", "a", memory.Belief, "invalidated", memory.Scope{}},
	} {
		_, err := find(c.ws, c.typ, c.content, c.scope)
		assertNotFound(t, "FindDuplicate: "+c.name, err)
	}
}

func testPurgeRecord(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	v1 := fullRecord("the secret is swordfish")
	v1.Status = memory.Active
	v1.InvalidatedAt = nil
	v1.Entities = []string{"person:alice"}
	mustInsert(t, s, "a", v1)
	v2 := NextVersion(v1, T0.Add(time.Hour), func(r *memory.Record) {
		r.Content = "the secret is still swordfish"
		r.ContentSHA256 = memory.SHA256Hex(r.Content)
		r.Metadata = json.RawMessage(`{"secret":"swordfish"}`)
	})
	mustUpdate(t, s, "a", v2)
	v3 := NextVersion(v2, T0.Add(2*time.Hour), func(r *memory.Record) {
		r.Content = "swordfish, again"
		r.ContentSHA256 = memory.SHA256Hex(r.Content)
	})
	mustUpdate(t, s, "a", v3)
	keep := NewRecord("an unrelated record about swordfish", func(r *memory.Record) { r.Entities = []string{"person:alice"} })
	mustInsert(t, s, "a", keep)

	at := T0.Add(3 * time.Hour)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.PurgeRecord(ctx, "a", v1.ID, at) })

	head := mustGet(t, s, "a", v1.ID)
	want := v3.Tombstone(at)
	want.Version = 4
	assertRecord(t, "tombstone head", head, want)
	if head.Content != "" || head.Status != memory.Forgotten || head.ContentSHA256 != v3.ContentSHA256 {
		t.Fatalf("head after purge: %s", dump(head))
	}

	vs, err := s.ListVersions(ctx, "a", v1.ID)
	if err != nil {
		t.Fatalf("ListVersions: %v", err)
	}
	if len(vs) != 4 {
		t.Fatalf("ListVersions after purge: %d versions, want 4", len(vs))
	}
	for i, old := range []memory.Record{v1, v2, v3} {
		// Each version keeps its own number, timestamps and content hash.
		w := old.Tombstone(old.UpdatedAt)
		assertRecord(t, fmt.Sprintf("tombstoned version %d", i+1), vs[i], w)
	}
	assertRecord(t, "tombstone version 4", vs[3], want)
	for _, v := range vs {
		if v.Content != "" || string(canonJSON(v.Metadata)) != "{}" || len(v.Entities) != 0 ||
			v.Source.Agent != "" || v.Source.PrincipalID != "" || v.ModifiedBy != "" || len(v.Source.Evidence) != 0 || !v.Scope.IsZero() || v.Status != memory.Forgotten {
			t.Fatalf("version %d keeps erased data: %s", v.Version, dump(v))
		}
	}
	for _, at := range []time.Time{T0.Add(90 * time.Minute), T0.Add(time.Hour), at} {
		got, err := s.GetRecordKnownAt(ctx, "a", v1.ID, at)
		if err != nil {
			t.Fatalf("GetRecordKnownAt: %v", err)
		}
		if got.Content != "" {
			t.Fatalf("GetRecordKnownAt(%v) returns content after purge", at)
		}
	}

	// The entity index forgets it; the unrelated record is untouched.
	assertIDs(t, "entity after purge",
		list(t, s, "a", store.RecordQuery{Access: allAccess, Entity: "person:alice", Statuses: memory.Statuses}), keep)
	past := T0.Add(30 * time.Minute)
	assertIDs(t, "entity known before purge",
		list(t, s, "a", store.RecordQuery{Access: allAccess, Entity: "person:alice", Statuses: memory.Statuses, KnownAt: &past}))
	got := list(t, s, "a", store.RecordQuery{Access: allAccess, Statuses: []memory.Status{memory.Forgotten}})
	assertIDs(t, "forgotten", got, v1)
	assertRecord(t, "listed tombstone", got[0], want)
	assertRecord(t, "unrelated record", mustGet(t, s, "a", keep.ID), keep)

	// A tombstone can be updated like any head (e.g. purged twice).
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.PurgeRecord(ctx, "a", v1.ID, at.Add(time.Hour))
	})
	if head := mustGet(t, s, "a", v1.ID); head.Version != 5 || head.Status != memory.Forgotten {
		t.Fatalf("second purge: head version %d status %s", head.Version, head.Status)
	}
}

func testTouchRecords(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	r1 := NewRecord("one")
	r2 := NewRecord("two")
	r3 := NewRecord("three")
	mustInsert(t, s, "a", r1, r2, r3)

	at1 := T0.Add(time.Hour)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.TouchRecords(ctx, "a", []string{r1.ID, r2.ID, memory.NewID()}, at1)
	})
	at2 := T0.Add(2 * time.Hour)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.TouchRecords(ctx, "a", nil, at2); err != nil {
			return err
		}
		return tx.TouchRecords(ctx, "a", []string{r1.ID}, at2)
	})

	for _, c := range []struct {
		r     memory.Record
		count int64
		at    *time.Time
	}{{r1, 2, &at2}, {r2, 1, &at1}, {r3, 0, nil}} {
		want := c.r
		want.RetrievalCount = c.count
		want.LastRetrievedAt = c.at
		assertRecord(t, "touched head", mustGet(t, s, "a", c.r.ID), want)
		// No version is written.
		vs, err := s.ListVersions(ctx, "a", c.r.ID)
		if err != nil {
			t.Fatalf("ListVersions: %v", err)
		}
		if len(vs) != 1 {
			t.Fatalf("TouchRecords wrote a version: %d versions", len(vs))
		}
		assertRecord(t, "version after touch", vs[0], c.r)
	}
}

func testRedactVersion(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	v1 := fullRecord("the code word is swordfish")
	v1.Status = memory.Active
	v1.InvalidatedAt = nil
	mustInsert(t, s, "a", v1)
	v2 := NextVersion(v1, T0.Add(time.Hour), func(r *memory.Record) {
		r.Content = "the code word changed"
		r.ContentSHA256 = memory.SHA256Hex(r.Content)
	})
	mustUpdate(t, s, "a", v2)

	// The head cannot be redacted; a missing version is not found.
	err := s.Tx(ctx, func(tx store.Tx) error { return tx.RedactVersion(ctx, "a", v1.ID, 2) })
	if !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("RedactVersion(head) = %v, want ErrVersionConflict", err)
	}
	err = s.Tx(ctx, func(tx store.Tx) error { return tx.RedactVersion(ctx, "a", v1.ID, 7) })
	assertNotFound(t, "RedactVersion(missing)", err)

	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.RedactVersion(ctx, "a", v1.ID, 1) })
	got, err := s.GetRecordVersion(ctx, "a", v1.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "" || got.Status != memory.Forgotten || got.ContentSHA256 != v1.ContentSHA256 || len(got.Metadata) <= 2 {
		t.Fatalf("redacted version: %s", dump(got))
	}
	assertRecord(t, "head after redaction", mustGet(t, s, "a", v1.ID), v2)
	// Idempotent.
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error { return tx.RedactVersion(ctx, "a", v1.ID, 1) })
}

func testSetDecayScores(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	mustWorkspace(t, s, "b")
	r1 := NewRecord("one")
	r2 := NewRecord("two")
	mustInsert(t, s, "a", r1, r2)
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		if err := tx.SetDecayScores(ctx, "a", nil); err != nil {
			return err
		}
		// Another workspace's scores never touch this one's records.
		if err := tx.SetDecayScores(ctx, "b", map[string]float64{r1.ID: 0.9}); err != nil {
			return err
		}
		return tx.SetDecayScores(ctx, "a", map[string]float64{r1.ID: 0.125, memory.NewID(): 0.5})
	})
	want := r1
	want.DecayScore = 0.125
	assertRecord(t, "scored head", mustGet(t, s, "a", r1.ID), want)
	assertRecord(t, "unscored head", mustGet(t, s, "a", r2.ID), r2)
	vs, err := s.ListVersions(ctx, "a", r1.ID)
	if err != nil {
		t.Fatalf("ListVersions: %v", err)
	}
	if len(vs) != 1 || vs[0].DecayScore != r1.DecayScore {
		t.Fatalf("SetDecayScores wrote or changed a version: %+v", vs)
	}
}
