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

// fullRecord sets every optional field of a record.
func fullRecord(content string) memory.Record {
	return NewRecord(content, func(r *memory.Record) {
		r.Type = memory.Decision
		r.Category = "technology"
		r.Metadata = json.RawMessage(`{"b": [1, 2, {"c": null}], "a": "x\u00e9", "n": 1.5}`)
		r.Entities = []string{"person:alice", "system:keycloak-prod"}
		r.SupersededBy = ptr(memory.NewID())
		r.Supersedes = ptr(memory.NewID())
		r.Status = memory.Provisional
		r.ModifiedBy = memory.NewID()
		r.Source = memory.Source{Agent: "agent-7", PrincipalID: memory.NewID(), Kind: memory.Inferred, Confidence: 0.6123, Evidence: []string{memory.NewID(), memory.NewID()}}
		r.Scope = memory.Scope{UserID: "u1", AgentID: "a1", AppID: "app", ProjectID: "p1", SessionID: "s1"}
		r.ValidFrom = ptr(T0.Add(-48 * time.Hour))
		r.ValidUntil = ptr(T0.Add(48*time.Hour + 7*time.Microsecond))
		r.IngestedAt = T0
		r.InvalidatedAt = ptr(T0.Add(time.Hour))
		r.Access = memory.Sensitive
		r.Classification = "confidential"
		r.Gate = memory.GateInfo{DecisionID: memory.NewID(), Decision: memory.DecisionProvisional, Origin: memory.OriginConsolidation}
		r.DecayScore = 0.25
		r.Path = memory.PathSlow
		r.LastRetrievedAt = ptr(T0.Add(2 * time.Hour))
		r.RetrievalCount = 42
		r.CreatedAt = T0
		r.UpdatedAt = T0.Add(time.Second)
	})
}

func testRecordRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	full := fullRecord("Use SKIP LOCKED for job claims, because replicas race.")
	// Nanoseconds are truncated to microseconds on the way in.
	full.CreatedAt = full.CreatedAt.Add(999 * time.Nanosecond)
	minimal := NewRecord("answer in short bullet lists", func(r *memory.Record) {
		r.Metadata = nil
		r.Entities = nil
		r.Source.Evidence = nil
		r.Category = ""
		r.Path = ""
		r.DecayScore = 0
		r.Source.Confidence = 0
	})
	local := NewRecord("local times come back as UTC", func(r *memory.Record) {
		loc := time.FixedZone("X", 5*3600)
		r.CreatedAt = T0.In(loc)
		r.UpdatedAt = T0.In(loc)
		r.ValidFrom = ptr(T0.In(loc))
	})
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, r := range []memory.Record{full, minimal, local} {
			if err := tx.InsertRecord(ctx, "a", r); err != nil {
				return err
			}
			// Inside the transaction the write is visible at once.
			got, err := tx.GetRecord(ctx, "a", r.ID)
			if err != nil {
				return err
			}
			if !EqualRecords(got, r) {
				return fmt.Errorf("in-tx read of %s: got %s, want %s", r.ID, dump(CanonRecord(got)), dump(CanonRecord(r)))
			}
		}
		return nil
	})

	for _, r := range []memory.Record{full, minimal, local} {
		got := mustGet(t, s, "a", r.ID)
		assertRecord(t, "GetRecord", got, r)
		if got.SupersededBy == nil != (r.SupersededBy == nil) || got.ValidFrom == nil != (r.ValidFrom == nil) {
			t.Fatal("optional fields changed between nil and set")
		}
		if got.CreatedAt.Location() != time.UTC {
			t.Fatalf("CreatedAt location %v, want UTC", got.CreatedAt.Location())
		}

		v, err := s.GetRecordVersion(ctx, "a", r.ID, 1)
		if err != nil {
			t.Fatalf("GetRecordVersion: %v", err)
		}
		assertRecord(t, "GetRecordVersion", v, r)

		vs, err := s.ListVersions(ctx, "a", r.ID)
		if err != nil {
			t.Fatalf("ListVersions: %v", err)
		}
		if len(vs) != 1 {
			t.Fatalf("ListVersions: %d versions, want 1", len(vs))
		}
		assertRecord(t, "ListVersions", vs[0], r)
	}
	if got := mustGet(t, s, "a", minimal.ID); got.SupersededBy != nil || got.ValidFrom != nil ||
		got.ValidUntil != nil || got.InvalidatedAt != nil || got.LastRetrievedAt != nil || got.Supersedes != nil {
		t.Fatalf("unset optional fields read back set: %s", dump(got))
	}
}

func testRecordNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a", "b")
	r := NewRecord("only in b", func(r *memory.Record) { r.UpdatedAt = T0 })
	mustInsert(t, s, "b", r)
	for _, id := range []string{memory.NewID(), r.ID} {
		what := "missing id"
		if id == r.ID {
			what = "id of another workspace"
		}
		_, err := s.GetRecord(ctx, "a", id)
		assertNotFound(t, "GetRecord: "+what, err)
		_, err = s.GetRecordVersion(ctx, "a", id, 1)
		assertNotFound(t, "GetRecordVersion: "+what, err)
		_, err = s.GetRecordKnownAt(ctx, "a", id, T0.Add(time.Hour))
		assertNotFound(t, "GetRecordKnownAt: "+what, err)
		_, err = s.ListVersions(ctx, "a", id)
		assertNotFound(t, "ListVersions: "+what, err)

		next := NextVersion(r, T0.Add(time.Hour))
		next.ID = id
		err = s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateRecord(ctx, "a", next, 1) })
		assertNotFound(t, "UpdateRecord: "+what, err)
		err = s.Tx(ctx, func(tx store.Tx) error { return tx.PurgeRecord(ctx, "a", id, T0.Add(time.Hour)) })
		assertNotFound(t, "PurgeRecord: "+what, err)

		// Inside a transaction too.
		err = s.Tx(ctx, func(tx store.Tx) error {
			_, err := tx.GetRecord(ctx, "a", id)
			return err
		})
		assertNotFound(t, "tx.GetRecord: "+what, err)
	}
	_, err := s.GetRecordVersion(ctx, "b", r.ID, 2)
	assertNotFound(t, "GetRecordVersion(missing version)", err)

	// The record in b is untouched by all of the above.
	assertRecord(t, "record in b", mustGet(t, s, "b", r.ID), r)
}

func testInsertRecordTwice(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	r := NewRecord("first")
	mustInsert(t, s, "a", r)
	again := NewRecord("second", func(x *memory.Record) { x.ID = r.ID })
	err := s.Tx(ctx, func(tx store.Tx) error { return tx.InsertRecord(ctx, "a", again) })
	if err == nil {
		t.Fatal("InsertRecord with an existing id succeeded")
	}
	assertRecord(t, "head after rejected insert", mustGet(t, s, "a", r.ID), r)
}

func testUpdateRecord(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	v1 := fullRecord("v1 content")
	mustInsert(t, s, "a", v1)
	v2 := NextVersion(v1, T0.Add(time.Hour), func(r *memory.Record) {
		r.Content = "v2 content"
		r.ContentSHA256 = memory.SHA256Hex(r.Content)
		r.Status = memory.Active
		r.Metadata = json.RawMessage(`{"changed":true}`)
		r.Entities = []string{"person:bob"}
		r.SupersededBy = nil
		r.ValidUntil = nil
		r.Scope.SessionID = ""
		r.Source.Evidence = nil
	})
	mustUpdate(t, s, "a", v2)
	assertRecord(t, "head after update", mustGet(t, s, "a", v1.ID), v2)
	got, err := s.GetRecordVersion(ctx, "a", v1.ID, 1)
	if err != nil {
		t.Fatalf("GetRecordVersion(1): %v", err)
	}
	assertRecord(t, "version 1 after update", got, v1)
	got, err = s.GetRecordVersion(ctx, "a", v1.ID, 2)
	if err != nil {
		t.Fatalf("GetRecordVersion(2): %v", err)
	}
	assertRecord(t, "version 2", got, v2)
}

func testUpdateRecordConflict(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	v1 := NewRecord("v1", func(r *memory.Record) { r.UpdatedAt = T0 })
	mustInsert(t, s, "a", v1)
	v2 := NextVersion(v1, T0.Add(time.Hour), func(r *memory.Record) { r.Content = "v2" })
	mustUpdate(t, s, "a", v2)

	// A writer that read version 1 tries to write its version 2.
	stale := NextVersion(v1, T0.Add(2*time.Hour), func(r *memory.Record) { r.Content = "stale" })
	err := s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateRecord(ctx, "a", stale, 1) })
	if !errors.Is(err, store.ErrVersionConflict) {
		t.Fatalf("UpdateRecord(stale): got %v, want ErrVersionConflict", err)
	}
	// Also when the caller swallows the error and commits.
	err = s.Tx(ctx, func(tx store.Tx) error {
		if err := tx.UpdateRecord(ctx, "a", stale, 1); !errors.Is(err, store.ErrVersionConflict) {
			return fmt.Errorf("got %v, want ErrVersionConflict", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	assertRecord(t, "head after conflict", mustGet(t, s, "a", v1.ID), v2)
	vs, err := s.ListVersions(ctx, "a", v1.ID)
	if err != nil {
		t.Fatalf("ListVersions: %v", err)
	}
	if len(vs) != 2 {
		t.Fatalf("ListVersions after conflict: %d versions, want 2", len(vs))
	}
	assertRecord(t, "version 1 after conflict", vs[0], v1)
	assertRecord(t, "version 2 after conflict", vs[1], v2)
	got, err := s.GetRecordKnownAt(ctx, "a", v1.ID, T0.Add(90*time.Minute))
	if err != nil {
		t.Fatalf("GetRecordKnownAt: %v", err)
	}
	assertRecord(t, "known at after conflict", got, v2)
}

func testUpdateRecordBadVersion(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	v1 := NewRecord("v1")
	mustInsert(t, s, "a", v1)
	for _, version := range []int{1, 3} {
		bad := NextVersion(v1, T0.Add(time.Hour), func(r *memory.Record) {
			r.Content = "bad"
			r.Version = version
		})
		err := s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateRecord(ctx, "a", bad, 1) })
		if err == nil {
			t.Fatalf("UpdateRecord with version %d over expected 1 succeeded", version)
		}
	}
	assertRecord(t, "head", mustGet(t, s, "a", v1.ID), v1)
	if vs, err := s.ListVersions(ctx, "a", v1.ID); err != nil || len(vs) != 1 {
		t.Fatalf("ListVersions: %d versions, err %v; want 1 version", len(vs), err)
	}
}

func testUpdateRecordConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	v1 := NewRecord("v1")
	mustInsert(t, s, "a", v1)

	const n = 8
	var (
		wg    sync.WaitGroup
		errs  = make([]error, n)
		start = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			next := NextVersion(v1, time.Now(), func(r *memory.Record) { r.Content = fmt.Sprintf("writer %d", i) })
			errs[i] = s.Tx(ctx, func(tx store.Tx) error { return tx.UpdateRecord(ctx, "a", next, 1) })
		}()
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both updated version 1", winner, i)
			}
			winner = i
		case !errors.Is(err, store.ErrVersionConflict):
			t.Fatalf("writer %d: got %v, want nil or ErrVersionConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer succeeded")
	}
	head := mustGet(t, s, "a", v1.ID)
	if head.Version != 2 || head.Content != fmt.Sprintf("writer %d", winner) {
		t.Fatalf("head is version %d %q, want version 2 by writer %d", head.Version, head.Content, winner)
	}
	vs, err := s.ListVersions(ctx, "a", v1.ID)
	if err != nil || len(vs) != 2 {
		t.Fatalf("ListVersions: %d versions, err %v; want 2", len(vs), err)
	}
}

// history writes a record with versions at T0+1h, T0+2h and T0+3h and
// returns them.
func history(t *testing.T, s store.Store, ws string) []memory.Record {
	t.Helper()
	v1 := NewRecord("v1", func(r *memory.Record) {
		r.CreatedAt, r.IngestedAt, r.UpdatedAt = T0.Add(time.Hour), T0.Add(time.Hour), T0.Add(time.Hour)
		r.Entities = []string{"person:alice"}
	})
	mustInsert(t, s, ws, v1)
	v2 := NextVersion(v1, T0.Add(2*time.Hour), func(r *memory.Record) {
		r.Content = "v2"
		r.ContentSHA256 = memory.SHA256Hex(r.Content)
		r.Entities = []string{"person:bob"}
	})
	mustUpdate(t, s, ws, v2)
	v3 := NextVersion(v2, T0.Add(3*time.Hour), func(r *memory.Record) {
		r.Content = "v3"
		r.ContentSHA256 = memory.SHA256Hex(r.Content)
		r.Status = memory.Superseded
		r.SupersededBy = ptr(memory.NewID())
	})
	mustUpdate(t, s, ws, v3)
	return []memory.Record{v1, v2, v3}
}

func testVersions(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	want := history(t, s, "a")
	id := want[0].ID
	vs, err := s.ListVersions(ctx, "a", id)
	if err != nil {
		t.Fatalf("ListVersions: %v", err)
	}
	if len(vs) != len(want) {
		t.Fatalf("ListVersions: %d versions, want %d", len(vs), len(want))
	}
	for i := range want {
		assertRecord(t, fmt.Sprintf("ListVersions[%d]", i), vs[i], want[i])
		got, err := s.GetRecordVersion(ctx, "a", id, i+1)
		if err != nil {
			t.Fatalf("GetRecordVersion(%d): %v", i+1, err)
		}
		assertRecord(t, fmt.Sprintf("GetRecordVersion(%d)", i+1), got, want[i])
	}
	assertRecord(t, "head", mustGet(t, s, "a", id), want[2])
	for _, v := range []int{0, 4, -1} {
		_, err := s.GetRecordVersion(ctx, "a", id, v)
		assertNotFound(t, fmt.Sprintf("GetRecordVersion(%d)", v), err)
	}
}

func testKnownAt(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustWorkspace(t, s, "a")
	vs := history(t, s, "a") // versions at T0+1h, +2h, +3h
	id := vs[0].ID
	for _, c := range []struct {
		at   time.Duration
		want int // version; 0 = not found
	}{
		{0, 0},
		{time.Hour - time.Microsecond, 0},
		{time.Hour, 1},
		{90 * time.Minute, 1},
		{2*time.Hour - time.Microsecond, 1},
		{2 * time.Hour, 2},
		{150 * time.Minute, 2},
		{3 * time.Hour, 3},
		{1000 * time.Hour, 3},
	} {
		got, err := s.GetRecordKnownAt(ctx, "a", id, T0.Add(c.at))
		if c.want == 0 {
			assertNotFound(t, fmt.Sprintf("GetRecordKnownAt(T0+%v)", c.at), err)
			continue
		}
		if err != nil {
			t.Fatalf("GetRecordKnownAt(T0+%v): %v", c.at, err)
		}
		assertRecord(t, fmt.Sprintf("GetRecordKnownAt(T0+%v)", c.at), got, vs[c.want-1])
	}
}
