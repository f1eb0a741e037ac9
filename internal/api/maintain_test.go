package api_test

import (
	"testing"
	"time"

	"github.com/memgate/memgate/internal/maintain"
	"github.com/memgate/memgate/internal/memory"
)

// TestRestoreArchivedRecord: an archived record is hidden from the
// default list, kept for GET, and POST /v1/records/{id}/restore (operators
// only) makes it active again.
func TestRestoreArchivedRecord(t *testing.T) {
	h := newHarness(t, nil)
	r := h.write("std", map[string]any{"type": "episode", "content": "the nightly job ran long"}, 201).Record
	h.clock.Advance(400 * 24 * time.Hour)
	rep, err := maintain.New(h.svc, maintain.Options{Now: h.clock.Now}).Archive(t.Context())
	if err != nil || rep.Changed != 1 {
		t.Fatalf("archive %+v %v", rep, err)
	}
	var list struct{ Records []memory.Record }
	h.mustDo("GET", "/v1/records?type=episode", "op", nil, 200, &list)
	if len(list.Records) != 0 {
		t.Fatalf("archived record listed: %d", len(list.Records))
	}
	var got memory.Record
	h.mustDo("GET", "/v1/records/"+r.ID, "std", nil, 200, &got)
	if got.Status != memory.Archived || got.Content != r.Content {
		t.Fatalf("archived record %+v", got)
	}
	h.wantError("POST", "/v1/records/"+r.ID+"/restore", "std", nil, 403, "permission_denied")
	h.wantError("POST", "/v1/records/"+memory.NewID()+"/restore", "op", nil, 404, "not_found")
	var res struct{ Record memory.Record }
	h.mustDo("POST", "/v1/records/"+r.ID+"/restore", "op", nil, 200, &res)
	if res.Record.Status != memory.Active || res.Record.Version != 3 {
		t.Fatalf("restored %+v", res.Record)
	}
	h.mustDo("GET", "/v1/records?type=episode", "op", nil, 200, &list)
	if len(list.Records) != 1 {
		t.Fatalf("restored record not listed: %d", len(list.Records))
	}
	// Forgotten records are not restorable.
	h.mustDo("DELETE", "/v1/records/"+r.ID, "op", nil, 200, nil)
	h.wantError("POST", "/v1/records/"+r.ID+"/restore", "op", nil, 409, "conflict")
}
