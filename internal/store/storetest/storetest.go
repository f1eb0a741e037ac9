// Package storetest is the storage contract suite: every store.Store
// backend runs Run against itself, so all backends behave alike. It tests
// only what internal/store promises, never a backend's internals.
//
// It also exports helpers for building test data, for use by other
// packages' tests.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memgate/memgate/internal/memory"
	"github.com/memgate/memgate/internal/store"
)

// Run runs the contract suite against the backend that open creates. open
// is called once per subtest and must return a fresh, empty, migrated
// store, registering its own cleanup with t.Cleanup. Subtests run in
// parallel, so the stores open returns must be independent.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Workspaces", testWorkspaces},
		{"Principals", testPrincipals},
		{"PrincipalNames", testPrincipalNames},
		{"RecordRoundTrip", testRecordRoundTrip},
		{"LastWrite", testLastWrite},
		{"NamesEntity", testNamesEntity},
		{"RecordNotFound", testRecordNotFound},
		{"InsertRecordTwice", testInsertRecordTwice},
		{"UpdateRecord", testUpdateRecord},
		{"UpdateRecordConflict", testUpdateRecordConflict},
		{"UpdateRecordBadVersion", testUpdateRecordBadVersion},
		{"UpdateRecordConcurrent", testUpdateRecordConcurrent},
		{"Versions", testVersions},
		{"KnownAt", testKnownAt},
		{"ListTypes", testListTypes},
		{"ListStatuses", testListStatuses},
		{"ListCategory", testListCategory},
		{"ListScope", testListScope},
		{"ListEntity", testListEntity},
		{"ListAccess", testListAccess},
		{"ListAsOf", testListAsOf},
		{"ListKnownAt", testListKnownAt},
		{"ListInvalidated", testListInvalidated},
		{"ListMinConfidence", testListMinConfidence},
		{"ListPagination", testListPagination},
		{"ListLimits", testListLimits},
		{"ListRoundTrip", testListRoundTrip},
		{"WorkspaceIsolation", testWorkspaceIsolation},
		{"FindDuplicate", testFindDuplicate},
		{"FindByMeta", testFindByMeta},
		{"PurgeRecord", testPurgeRecord},
		{"RedactVersion", testRedactVersion},
		{"RedactVersionDerived", testRedactVersionDerived},
		{"TouchRecords", testTouchRecords},
		{"SetDecayScores", testSetDecayScores},
		{"Approvals", testApprovals},
		{"ExpiredApprovals", testExpiredApprovals},
		{"ApprovalReasons", testApprovalReasons},
		{"Sessions", testSessions},
		{"ListJobs", testListJobs},
		{"ListAuditWhere", testListAuditWhere},
		{"SetTrust", testSetTrust},
		{"AuditChain", testAuditChain},
		{"AuditConcurrent", testAuditConcurrent},
		{"AuditConcurrentRollback", testAuditConcurrentRollback},
		{"PageLimits", testPageLimits},
		{"TxRollback", testTxRollback},
		{"TxPanic", testTxPanic},
		{"TxCanceled", testTxCanceled},
		{"TxIsolation", testTxIsolation},
	}
	tests = append(tests, vectorTests()...)
	tests = append(tests, ingestTests()...)
	tests = append(tests, graphTests()...)
	tests = append(tests, batchReadTests()...)
	tests = append(tests, eventTests()...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// T0 is a fixed reference time for tests that need controlled timestamps.
// It has a non-zero microsecond part, so precision bugs show.
var T0 = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)

// NewRecord returns a valid active record at version 1 holding content,
// with every required field set; mods adjust it before it is returned.
// The content hash follows content unless a mod sets it.
func NewRecord(content string, mods ...func(*memory.Record)) memory.Record {
	now := memory.Canon(time.Now())
	r := memory.Record{
		ID:            memory.NewID(),
		Type:          memory.Belief,
		Category:      "other",
		Content:       content,
		ContentSHA256: memory.SHA256Hex(content),
		Metadata:      json.RawMessage(`{}`),
		Entities:      []string{},
		Version:       1,
		Status:        memory.Active,
		Source: memory.Source{
			Agent:      "agent-1",
			Kind:       memory.Observed,
			Confidence: memory.DefaultConfidence(memory.Observed),
			Evidence:   []string{},
		},
		IngestedAt: now,
		Access:     memory.Public,
		Gate: memory.GateInfo{
			DecisionID: memory.NewID(),
			Decision:   memory.DecisionAccepted,
			Origin:     memory.OriginExternal,
		},
		DecayScore: 1,
		Path:       memory.PathFast,
		CreatedAt:  now,
		UpdatedAt:  now,
	}
	for _, m := range mods {
		m(&r)
	}
	return r
}

// NextVersion returns r as its next version written at time at, with mods
// applied; it is what a caller passes to UpdateRecord with r.Version.
func NextVersion(r memory.Record, at time.Time, mods ...func(*memory.Record)) memory.Record {
	n := r
	n.Version++
	n.UpdatedAt = memory.Canon(at)
	for _, m := range mods {
		m(&n)
	}
	return n
}

// CanonRecord returns r in the form every backend returns it, for
// comparison: times canonical (memory.Canon), nil lists empty, metadata
// compact JSON with sorted keys ("{}" when empty).
func CanonRecord(r memory.Record) memory.Record {
	r.Metadata = canonJSON(r.Metadata)
	if r.Entities == nil {
		r.Entities = []string{}
	}
	if r.Source.Evidence == nil {
		r.Source.Evidence = []string{}
	}
	r.ValidFrom = memory.CanonPtr(r.ValidFrom)
	r.ValidUntil = memory.CanonPtr(r.ValidUntil)
	r.InvalidatedAt = memory.CanonPtr(r.InvalidatedAt)
	r.LastRetrievedAt = memory.CanonPtr(r.LastRetrievedAt)
	r.IngestedAt = memory.Canon(r.IngestedAt)
	r.CreatedAt = memory.Canon(r.CreatedAt)
	r.UpdatedAt = memory.Canon(r.UpdatedAt)
	return r
}

// canonJSON re-encodes a JSON object with sorted keys; empty means "{}".
func canonJSON(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw // leave it; the comparison will show it
	}
	if v == nil {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// EqualRecords reports whether a and b are the same record version, up
// to the normalisation of CanonRecord.
func EqualRecords(a, b memory.Record) bool {
	return reflect.DeepEqual(CanonRecord(a), CanonRecord(b))
}

func assertRecord(t *testing.T, what string, got, want memory.Record) {
	t.Helper()
	if !EqualRecords(got, want) {
		t.Fatalf("%s: record mismatch\n got: %s\nwant: %s", what, dump(CanonRecord(got)), dump(CanonRecord(want)))
	}
}

func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// mustTx runs fn in a transaction and fails the test on error.
func mustTx(t *testing.T, s store.Store, fn func(ctx context.Context, tx store.Tx) error) {
	t.Helper()
	ctx := t.Context()
	if err := s.Tx(ctx, func(tx store.Tx) error { return fn(ctx, tx) }); err != nil {
		t.Fatalf("tx: %v", err)
	}
}

// mustWorkspace creates workspaces with the given ids.
func mustWorkspace(t *testing.T, s store.Store, ids ...string) {
	t.Helper()
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, id := range ids {
			err := tx.CreateWorkspace(ctx, memory.Workspace{ID: id, Settings: json.RawMessage(`{}`), CreatedAt: T0})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// mustInsert inserts records into ws in one transaction.
func mustInsert(t *testing.T, s store.Store, ws string, rs ...memory.Record) {
	t.Helper()
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		for _, r := range rs {
			if err := tx.InsertRecord(ctx, ws, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// mustUpdate writes next over the head at next.Version-1.
func mustUpdate(t *testing.T, s store.Store, ws string, next memory.Record) {
	t.Helper()
	mustTx(t, s, func(ctx context.Context, tx store.Tx) error {
		return tx.UpdateRecord(ctx, ws, next, next.Version-1)
	})
}

func mustGet(t *testing.T, s store.Reader, ws, id string) memory.Record {
	t.Helper()
	r, err := s.GetRecord(t.Context(), ws, id)
	if err != nil {
		t.Fatalf("GetRecord(%s, %s): %v", ws, id, err)
	}
	return r
}

func assertNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("%s: got error %v, want store.ErrNotFound", what, err)
	}
}

// allAccess sees every access level.
var allAccess = store.AccessFilter{Levels: memory.AccessLevels}

// list runs ListRecords and fails the test on error.
func list(t *testing.T, s store.Reader, ws string, q store.RecordQuery) []memory.Record {
	t.Helper()
	rs, err := s.ListRecords(t.Context(), ws, q)
	if err != nil {
		t.Fatalf("ListRecords(%+v): %v", q, err)
	}
	return rs
}

// assertIDs checks that got holds exactly the records want, newest id
// first.
func assertIDs(t *testing.T, what string, got []memory.Record, want ...memory.Record) {
	t.Helper()
	wantIDs := make([]string, len(want))
	for i, r := range want {
		wantIDs[i] = r.ID
	}
	slices.Sort(wantIDs)
	slices.Reverse(wantIDs)
	gotIDs := make([]string, len(got))
	for i, r := range got {
		gotIDs[i] = r.ID
	}
	if !slices.Equal(gotIDs, wantIDs) {
		t.Fatalf("%s: got ids\n  %s\nwant\n  %s", what, strings.Join(gotIDs, "\n  "), strings.Join(wantIDs, "\n  "))
	}
}
